"""How the pages name a source's format, pages and ingest time (library, source, home).

Pages are counted only for a paged format (PDF): an HTML book's "pages" are its
files and a Markdown file has none, so those show a dash, never "0 pages".
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from citadel.app.library import Shelved
from citadel.domain.source import SourceVersion

FORMATS = {
    "pdf": "PDF",
    "epub": "EPUB",
    "html": "HTML",
    "markdown": "Markdown",
    "markdown-folder": "Markdown folder",
    "text": "Text",
}
PAGED = frozenset({"pdf"})
NONE = "—"


def source_href(source_id: str) -> str:
    return f"/library/{quote(source_id, safe='')}"


def family(parser: str) -> str:
    """``pdf/1`` → ``pdf``: the parser's name without its revision."""
    return parser.partition("/")[0]


def format_name(parser: str) -> str:
    return FORMATS.get(family(parser), family(parser) or NONE)


def pages_text(version: SourceVersion | None) -> str:
    """The page count of a paged format's version, else a dash."""
    if version is None or family(version.parser) not in PAGED or not version.page_count:
        return NONE
    return str(version.page_count)


def when(stamp: str) -> str:
    """``2026-12-05T06:04:35+00:00`` → ``2026-12-05 06:04 UTC`` (minutes are enough)."""
    if not stamp:
        return NONE
    shown = stamp[:16].replace("T", " ")
    return shown + (" UTC" if stamp.endswith(("+00:00", "Z")) else "")


def shelf_row(book: Shelved) -> dict[str, Any]:
    """The columns of one source in the library's list."""
    current = book.current
    return {
        "href": source_href(book.source.source_id),
        "authors": ", ".join(book.source.authors) or NONE,
        "format": format_name(current.parser) if current else NONE,
        "pages": pages_text(current),
        "sections": current.section_count if current else 0,
        "ingested": current.created_at if current else "",
        "ingested_text": when(current.created_at if current else ""),
    }
