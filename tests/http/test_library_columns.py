"""The library page says of each book who wrote it, its format, its pages (only for
a paged format: never "0 pages" for HTML or Markdown), its sections and when it was
ingested, over a real server and real books. Before, Authors was empty for every
book and the rest was not shown."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest

from tests.http.shelves import OPS_TITLE, OTHER_TITLE, Shelves, shelves, signed_in


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shelves]:
    yield from shelves(tmp_path_factory.mktemp("library-columns"))


def rows(page: str) -> dict[str, list[str]]:
    """Each table row's cells (text), keyed by the source id in its link."""
    found = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        link = re.search(r'href="/library/([^"]+)"', row)
        if link:
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            found[link.group(1)] = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells]
    return found


def test_each_book_shows_authors_format_pages_sections_and_ingest_date(shelf: Shelves) -> None:
    with signed_in(shelf, "ada") as client:
        page = client.get("/library").text
    header = re.search(r"<thead>(.*?)</thead>", page, re.S)
    assert header is not None
    for column in ("Authors", "Format", "Pages", "Sections", "Ingested"):
        assert f"<th>{column}</th>" in header.group(1)
    table = rows(page)
    services = shelf.library.services
    expected_format = {"md": "Markdown", "pdf": "PDF", "git": "HTML", "tutorial": "HTML"}
    for name, shown_format in expected_format.items():
        source_id = shelf.ids[name]
        source = services.registry.get("default", source_id)
        assert source is not None
        version = services.registry.versions("default", source_id)[-1]
        title, authors, fmt, pages, sections, ingested, *_ = table[source_id]
        assert title == source.title
        assert authors == (", ".join(source.authors) or "—")
        assert fmt == shown_format
        assert sections == str(version.section_count)
        assert ingested == version.created_at[:16].replace("T", " ") + " UTC"
        if name == "pdf":
            assert version.page_count > 0
            assert pages == str(version.page_count)
        else:
            assert pages == "—", (name, pages)
    # Still only what ada may read.
    assert OPS_TITLE not in page and OTHER_TITLE not in page
