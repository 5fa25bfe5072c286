"""The demo's library fallbacks: shared books, else Debian packages, else CPython's reference."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.app.answer import AnswerRequest, AnswerService
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.search import SearchService
from citadel.domain.limits import Limits
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor
from citadel.entrypoints.cli import demo
from tests.builders import operator
from tests.conftest import ROOT


def test_the_shared_books_are_preferred_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (ROOT.parent / "shared" / "books" / "pdf" / "R-intro.pdf").is_file():
        pytest.skip("needs ../shared/books (the shared books); CI has it")
    monkeypatch.chdir(ROOT)
    library = demo.find_library(ROOT / ".unused")
    assert library.books == (Path("../shared/books/pdf/R-intro.pdf"),)
    assert "../shared/books" in library.origin


def test_without_shared_books_or_apt_the_python_reference_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ../shared from here
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no apt-get
    library = demo.find_library(tmp_path / "work")
    assert "pydoc_data" in library.origin
    (book,) = library.books
    library_store = InMemoryLibrary()
    ingest = IngestService(library_store, FixedClock())
    document = FileDocuments([MarkdownParser()], max_file_bytes=1 << 30).open(book)
    report = ingest.ingest(document, IngestOptions(), actor=operator())
    from pydoc_data.topics import topics

    assert report.sections >= 0.9 * len(topics)
    search = SearchService(library_store, library_store, Limits())
    answers = AnswerService(search, ExtractiveGenerator(), Limits())
    actor = Actor(user_id="demo", tenant="default")
    for question in library.questions:
        result = asyncio.run(answers.answer(AnswerRequest(SearchRequest(question)), actor))
        assert result.answer is not None, (question, result.degraded)
        cited = {c.evidence_id for s in result.answer.segments for c in s.citations}
        assert cited <= {e.evidence_id for e in result.search.results}


def test_apt_fallback_is_skipped_cleanly_without_apt(tmp_path: Path) -> None:
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = str(tmp_path)
    try:
        assert demo._apt_download(tmp_path) == ()
    finally:
        os.environ["PATH"] = path


def test_a_library_from_an_older_citadel_gets_a_clear_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sqlite3

    from rich.console import Console

    home = tmp_path / "demo-home"
    home.mkdir()
    with sqlite3.connect(home / "citadel.db") as old:  # what session 1's schema left
        old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        old.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    shown = io.StringIO()
    assert demo.run_demo(home, Console(file=shown, width=200)) == 2
    text = shown.getvalue()
    assert "has schema 1, this citadel needs" in text
    assert f"delete {home} and run it again" in text
    # A library named by CITADEL_DB is not the demo's to delete: no such advice.
    monkeypatch.setenv("CITADEL_DB", str(home / "citadel.db"))
    shown = io.StringIO()
    assert demo.run_demo(tmp_path / "other", Console(file=shown, width=200)) == 2
    assert "has schema 1" in shown.getvalue() and "delete" not in shown.getvalue()
    monkeypatch.setenv("CITADEL_DB", "mysql://u@localhost/citadel")
    shown = io.StringIO()
    assert demo.run_demo(home, Console(file=shown, width=200)) == 2
    assert "configuration error" in shown.getvalue() and "Library:" not in shown.getvalue()
