"""A parsed document before chunking, and the chunks made from it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from citadel.domain.errors import InvalidValue
from citadel.domain.text import strip_controls


@dataclass(frozen=True, slots=True)
class Block:
    """A run of body text inside one section on one page (or one EPUB location)."""

    text: str
    section_path: tuple[str, ...]
    page: int | None = None
    page_label: str | None = None
    location: str | None = None

    def __post_init__(self) -> None:
        if self.page is not None and self.page < 1:
            raise InvalidValue("pages are 1-based")


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """What a parser extracted: metadata from the file itself, and body blocks in reading order."""

    title: str
    blocks: tuple[Block, ...]
    parser: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    tags: tuple[str, ...] = ()
    page_count: int = 0
    skipped_pages: tuple[int, ...] = field(default=())
    warnings: tuple[str, ...] = ()
    """What the parser says about the file's text, in citadel's words (a damaged PDF's)."""


def without_controls(document: ParsedDocument) -> ParsedDocument:
    """``document`` with no undrawable control character in its title, authors, headings
    or text, whichever parser read it (``text.strip_controls``)."""

    def line(text: str) -> str:  # a title or a heading stays on one line
        return " ".join(strip_controls(text).split("\n")) if text else text

    def block(b: Block) -> Block:
        path = tuple(line(heading) for heading in b.section_path)
        return replace(b, text=strip_controls(b.text), section_path=path)

    return replace(
        document,
        title=line(document.title),
        authors=tuple(line(a) for a in document.authors),
        blocks=tuple(block(b) for b in document.blocks),
    )


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable unit: never crosses a section, points back into the canonical text."""

    chunk_id: str
    source_id: str
    version: int
    ordinal: int
    text: str
    sha256: str
    section_path: tuple[str, ...]
    chapter: str
    section: str
    page_start: int | None
    page_end: int | None
    page_label_start: str | None
    page_label_end: str | None
    char_start: int
    char_end: int
    location: str | None = None
    units: str | None = field(default=None, compare=False, repr=False)
    """The text's quotable units, cut at ingest and stored beside it in the form the
    extractive generator reads (opaque here; None when not cut, and then the generator
    cuts them itself)."""

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise InvalidValue("a chunk has text")
        if not 0 <= self.char_start < self.char_end:
            raise InvalidValue("a chunk spans a non-empty range of the canonical text")
