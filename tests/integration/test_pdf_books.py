"""Ingestion quality on real PDFs, checked against the PDFs' own outlines and page labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from citadel.adapters.parsers.pdf import PdfParser
from citadel.domain.chunking import chunk_blocks
from citadel.domain.document import Chunk
from tests.conftest import shared_path

FRONT_OR_BACK = re.compile(
    r"^(?:[A-Z]|\d+)?\.?\s*(?:(?:table of )?contents|(?:\w+ )*index|list of (?:figures|tables))$",
    re.I,
)


def outline_entries(reader: PdfReader) -> list[tuple[int, str, int]]:
    """(depth, title, 0-based page) for every outline entry, read independently of the parser."""
    out: list[tuple[int, str, int]] = []

    def walk(items: list[object], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                page = reader.get_destination_page_number(item)  # type: ignore[arg-type]
                out.append((depth, " ".join(str(item.title).split()), page))  # type: ignore[attr-defined]

    walk(reader.outline, 0)  # type: ignore[arg-type]
    return out


def allowed_headings(entries: list[tuple[int, str, int]], pages: int) -> list[set[str]]:
    """Per page: the innermost heading in force when the page starts, plus any starting on it."""
    by_page: dict[int, list[tuple[int, str]]] = {}
    for depth, title, page in entries:
        by_page.setdefault(page, []).append((depth, title))
    stack: list[tuple[int, str]] = []
    allowed: list[set[str]] = []
    for page in range(pages):
        here = {stack[-1][1]} if stack else set()
        for depth, title in by_page.get(page, []):
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, title))
            here.add(title)
        allowed.append(here)
    return allowed


@pytest.fixture(scope="module", params=["R-intro.pdf", "derivations.pdf"])
def parsed(request: pytest.FixtureRequest) -> tuple[Path, PdfReader, tuple[Chunk, ...]]:
    path = shared_path("books", "pdf", request.param)
    document = PdfParser().parse(path)
    _, chunks = chunk_blocks(document.blocks, "s-test", 1, tenant="default")
    return path, PdfReader(path), chunks


def test_chunks_carry_the_printed_page_label_of_their_page(parsed) -> None:
    _, reader, chunks = parsed
    labels = list(reader.page_labels)
    right = sum(1 for c in chunks if c.page_label_start == labels[c.page_start - 1])
    assert chunks
    assert right / len(chunks) >= 0.99


def test_chunks_carry_the_innermost_outline_heading_of_their_page(parsed) -> None:
    _, reader, chunks = parsed
    allowed = allowed_headings(outline_entries(reader), len(reader.pages))
    right = 0
    for chunk in chunks:
        pages = range(chunk.page_start - 1, (chunk.page_end or chunk.page_start))
        titles = set().union(*(allowed[p] for p in pages))
        if chunk.section_path and chunk.section_path[-1] in titles:
            right += 1
    assert right / len(chunks) >= 0.97


def test_no_chunk_comes_from_title_contents_or_index_pages(parsed) -> None:
    _, reader, chunks = parsed
    entries = outline_entries(reader)
    first_body_page = min(page for _, _, page in entries)
    matter_pages = set(range(first_body_page))
    # Pages under an outline entry named contents/index/list of ..., until the next entry.
    ordered = sorted(entries, key=lambda e: e[2])
    for i, (_, title, page) in enumerate(ordered):
        if FRONT_OR_BACK.search(title):
            end = ordered[i + 1][2] if i + 1 < len(ordered) else len(reader.pages)
            matter_pages.update(range(page, max(end, page + 1)))
    # Back-of-book index pages without an outline entry: the printed running head says INDEX.
    for number, page in enumerate(reader.pages):
        head = (page.extract_text() or "").lstrip()[:40]
        if number > len(reader.pages) * 0.8 and re.match(r"(\d+\s+)?INDEX\b", head):
            matter_pages.add(number)
    offending = [
        c
        for c in chunks
        if any(p - 1 in matter_pages for p in range(c.page_start, (c.page_end or c.page_start) + 1))
    ]
    assert not offending, [(c.page_start, c.section_path) for c in offending[:5]]
    # ... while body text is kept: every page after the front matter that is not
    # index-like contributes at least one chunk somewhere.
    covered = {p for c in chunks for p in range(c.page_start, (c.page_end or c.page_start) + 1)}
    body_pages = [p + 1 for p in range(first_body_page, len(reader.pages)) if p not in matter_pages]
    with_text = [
        p for p in body_pages if len((reader.pages[p - 1].extract_text() or "").split()) > 40
    ]
    missing = [p for p in with_text if p not in covered]
    assert len(missing) <= len(with_text) * 0.01, missing[:10]


def test_chunks_point_into_the_canonical_text_with_deterministic_ids() -> None:
    path = shared_path("books", "pdf", "R-intro.pdf")
    document = PdfParser().parse(path)
    canon, chunks = chunk_blocks(document.blocks, "s-test", 1, tenant="default")
    _, again = chunk_blocks(document.blocks, "s-test", 1, tenant="default")
    assert [c.chunk_id for c in again] == [c.chunk_id for c in chunks]
    for chunk in chunks:
        assert canon.text[chunk.char_start : chunk.char_end] == chunk.text
        assert len(chunk.text.split()) <= 260


def test_pari_tutorial_without_outline_gets_numbered_sections_from_its_text() -> None:
    path = shared_path("books", "pdf", "pari-tutorial.pdf")
    assert not PdfReader(path).outline
    document = PdfParser().parse(path)
    paths = {block.section_path for block in document.blocks}
    chapters = {p[0] for p in paths if p}
    assert {"1. Greetings!", "2. Warming up", "8. Polynomials"} <= chapters
    assert any(len(p) == 2 and p[1].startswith("12.2.") for p in paths)
    text = " ".join(block.text for block in document.blocks)
    assert "Table of Contents" not in text  # the contents page is not body text
    assert "Permission is granted to make and distribute" not in text  # nor the copyright page


def test_text_extraction_in_several_processes_gives_the_same_document() -> None:
    path = shared_path("books", "pdf", "R-intro.pdf")
    assert PdfParser(processes=3).parse(path) == PdfParser(processes=1).parse(path)
