"""No control character reaches the index from any format (each parser's text passes
through ``without_controls`` at ingest), and re-ingesting a file ingested before
that rule makes a clean new version."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from citadel.app.ingest import IngestOptions
from citadel.app.ingest import service as service_module
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.document import Block, ParsedDocument, without_controls
from citadel.domain.text import strip_controls
from tests.builders import operator

UNDRAWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
DIRTY = "Retry\x0bbudgets cap\x08 the\x07 attempts\x1b a client\x85 makes."


def test_separators_end_lines_and_undrawable_controls_go() -> None:
    assert strip_controls("one\x0btwo\x0cthree\u2028four\r\nfive") == "one\ntwo\nthree\nfour\nfive"
    assert strip_controls("bell\x07 nul\x00 del\x7f csi\x9b") == "bell nul del csi"
    assert strip_controls("tab\tnew\nline\u200cZWNJ") == "tab\tnew\nline\u200cZWNJ"


def _epub(path: Path, body: str) -> Path:
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"'
        ' unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">x</dc:identifier><dc:title>Tide Book</dc:title>'
        "<dc:language>en</dc:language></metadata><manifest>"
        '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/></spine></package>'
    )
    chapter = (
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title>'
        f"</head><body><h1>Budgets</h1><p>{body}</p></body></html>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", opf)
        archive.writestr("OEBPS/c1.xhtml", chapter)
    return path


@pytest.mark.parametrize("kind", ["md", "html", "txt", "epub"])
def test_no_format_brings_a_control_character_into_the_index(tmp_path: Path, kind: str) -> None:
    if kind == "md":
        path = tmp_path / "book.md"
        path.write_text(f"# Budgets\x0b Guide\n\n{DIRTY}\n", "utf-8")
    elif kind == "html":
        path = tmp_path / "book.html"
        path.write_text(f"<html><body><h1>Budgets</h1><p>{DIRTY}</p></body></html>", "utf-8")
    elif kind == "txt":
        path = tmp_path / "book.txt"
        path.write_text(DIRTY + "\n", "utf-8")
    else:
        # XML 1.0 forbids most C0 controls, but C1 controls and DEL are allowed.
        path = _epub(tmp_path / "book.epub", "Retry budgets\x7f cap\x85 the\x9b attempts.")
    services = build(Settings(home=tmp_path / "home", embedder="none"))
    try:
        report = services.ingest.ingest(
            services.documents.open(path), IngestOptions(), actor=operator()
        )
        chunks = services.chunks.chunks("default", report.source_id, report.version)
        assert chunks
        for chunk in chunks:
            assert not UNDRAWN.search(chunk.text), repr(chunk.text)
            assert not any(UNDRAWN.search(h) for h in chunk.section_path), chunk.section_path
        assert "cap the" in " ".join(c.text for c in chunks)
    finally:
        services.close()


def test_re_ingesting_a_library_made_before_the_rule_makes_a_clean_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "book.md"
    path.write_text(f"# Budgets\n\n{DIRTY}\n", "utf-8")
    services = build(Settings(home=tmp_path / "home", embedder="none"))
    try:
        # The citadel of before: the ingest use case without the rule.
        with monkeypatch.context() as before:
            before.setattr(service_module, "without_controls", lambda document: document)
            old = services.ingest.ingest(
                services.documents.open(path), IngestOptions(), actor=operator()
            )
        assert any(
            UNDRAWN.search(c.text)
            for c in services.chunks.chunks("default", old.source_id, old.version)
        ), "a library ingested before the rule holds them"
        again = services.ingest.ingest(
            services.documents.open(path), IngestOptions(), actor=operator()
        )
        assert again.source_id == old.source_id
        assert again.status == "updated" and again.version == old.version + 1
        assert not any(
            UNDRAWN.search(c.text)
            for c in services.chunks.chunks("default", again.source_id, again.version)
        )
    finally:
        services.close()


def test_without_controls_keeps_titles_and_headings_on_one_line() -> None:
    document = ParsedDocument(
        "Tide\x0bBook", (Block("a\x0bb", ("Part\x0cOne", "Sub\x07")),), "md", authors=("A\rB",)
    )
    clean = without_controls(document)
    assert clean.title == "Tide Book" and clean.authors == ("A B",)
    assert clean.blocks[0].section_path == ("Part One", "Sub")
    assert clean.blocks[0].text == "a\nb"
