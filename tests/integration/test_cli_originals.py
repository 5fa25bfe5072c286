"""A PDF ingested by the CLI keeps its original, as an upload does: the viewer can
then show its cited page as printed (the ingest use case keeps it: app/ingest/originals.py)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from citadel.adapters.pages import FileOriginals
from citadel.entrypoints.cli import app
from tests.http.pdf_sample import write_pdf

ENV = {"CITADEL_HOME": "", "CITADEL_DB": "", "CITADEL_EMBEDDER": "none"}


def _ingest(home: Path, *files: Path) -> list[dict[str, object]]:
    outcome = CliRunner().invoke(
        app, ["ingest", "--home", str(home), "--json", *map(str, files)], env=ENV
    )
    assert outcome.exit_code == 0, outcome.output
    return [json.loads(line) for line in outcome.stdout.splitlines() if line.startswith("{")]


def test_a_pdf_ingested_by_the_cli_keeps_its_original_and_markdown_does_not(
    tmp_path: Path,
) -> None:
    pdf = write_pdf(tmp_path / "book.pdf", [["Chapter one", "Vectors hold values."]])
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nMatrices hold values in rows.\n", encoding="utf-8")
    home = tmp_path / "home"
    reports = _ingest(home, pdf, notes)
    assert [r["status"] for r in reports] == ["created", "created"]
    originals = FileOriginals(home / "originals")
    kept = originals.find("default", str(reports[0]["source_id"]), int(str(reports[0]["version"])))
    assert kept is not None and kept.read_bytes() == pdf.read_bytes()
    assert originals.find("default", str(reports[1]["source_id"]), 1) is None
    # Ingesting the same PDF again changes nothing and keeps the one original.
    again = _ingest(home, pdf)
    assert again[0]["status"] == "unchanged"
    assert originals.find("default", str(reports[0]["source_id"]), 1) == kept


def test_deleting_a_source_through_the_cli_drops_its_original_as_the_http_api_does(
    tmp_path: Path,
) -> None:
    # The rule lives in LibraryService.delete, so every entrypoint's delete shares it.
    pdf = write_pdf(tmp_path / "book.pdf", [["Chapter one", "Vectors hold values."]])
    home = tmp_path / "home"
    source_id = str(_ingest(home, pdf)[0]["source_id"])
    originals = FileOriginals(home / "originals")
    assert originals.find("default", source_id, 1) is not None
    deleted = CliRunner().invoke(
        app, ["sources", "delete", source_id, "--home", str(home), "--json"], env=ENV
    )
    assert deleted.exit_code == 0, deleted.output
    assert originals.find("default", source_id, 1) is None


def test_a_folder_book_is_ingested_and_keeps_no_original(tmp_path: Path) -> None:
    # An HTML book given as its folder (index.html the table of contents) is no PDF:
    # asking whether it is one read the folder as a file and ended in a traceback.
    book = tmp_path / "book"
    book.mkdir()
    (book / "index.html").write_text(
        "<html><head><title>A Book</title></head><body><h1>A Book</h1>"
        "<p>Folders hold the pages of an HTML book.</p></body></html>",
        encoding="utf-8",
    )
    home = tmp_path / "home"
    (report,) = _ingest(home, book)
    assert report["status"] == "created"
    found = FileOriginals(home / "originals").find("default", str(report["source_id"]), 1)
    assert found is None


def test_retention_drops_the_original_even_when_the_newer_version_is_no_pdf(
    tmp_path: Path,
) -> None:
    # Retention lives in the ingest use case: a new version that keeps no original of
    # its own (Markdown) still drops the originals of the versions it pushed out.
    pdf = write_pdf(tmp_path / "book.pdf", [["Chapter one", "Vectors hold values."]])
    notes = tmp_path / "book.md"
    notes.write_text("# Notes\n\nMatrices hold values in rows.\n", encoding="utf-8")
    home = tmp_path / "home"
    env = {**ENV, "CITADEL_RETAIN_VERSIONS": "1"}
    runner = CliRunner()
    for path in (pdf, notes):
        outcome = runner.invoke(
            app,
            ["ingest", "--home", str(home), "--json", "--source-id", "book", str(path)],
            env=env,
        )
        assert outcome.exit_code == 0, outcome.output
    originals = FileOriginals(home / "originals")
    assert originals.find("default", "book", 1) is None
