"""The HTML parser: one file is one page; a directory with an index is one book."""

from __future__ import annotations

import codecs
from pathlib import Path

from citadel.adapters.parsers import DEFAULT_MAX_PAGES
from citadel.adapters.parsers.html.document import (
    DocumentMeta,
    content_root,
    document_meta,
    parse_html_bytes,
)
from citadel.adapters.parsers.html.folder import read_folder
from citadel.adapters.parsers.markup.block_sink import BlockSink
from citadel.adapters.parsers.markup.names import Element
from citadel.adapters.parsers.markup.pages import emit_page
from citadel.adapters.parsers.markup.walker import extract
from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block, ParsedDocument

_MIB = 1024 * 1024


class HtmlParser:
    name = "html/1"

    def __init__(
        self, *, max_pages: int = DEFAULT_MAX_PAGES, max_page_bytes: int = 32 * _MIB
    ) -> None:
        self._max_pages = max_pages
        self._max_page_bytes = max_page_bytes

    def accepts(self, path: Path) -> bool:
        if path.is_dir():
            return (path / "index.html").is_file() or (path / "index.htm").is_file()
        return path.is_file() and path.suffix.lower() in {".html", ".htm"}

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        if path.is_dir():
            book = read_folder(path, self._load, max_pages=self._max_pages, progress=progress)
            return self._document(book.meta, book.blocks, book.pages, book.skipped)
        doc = self._load(path)
        meta = document_meta(doc, path.stem)
        found = extract(content_root(doc))
        sink = BlockSink()
        emit_page(found.events, sink, href=path.name, prefix=(), rooted=False, fallback=meta.title)
        if progress:
            progress(1, 1)
        return self._document(meta, sink.blocks, 1, [])

    def _document(
        self, meta: DocumentMeta, blocks: list[Block], pages: int, skipped: list[int]
    ) -> ParsedDocument:
        if not blocks:
            raise ParseError("empty", "no body text was found in the HTML")
        return ParsedDocument(
            title=meta.title,
            blocks=tuple(blocks),
            parser=self.name,
            authors=meta.authors,
            year=meta.year,
            tags=meta.tags,
            page_count=pages,
            skipped_pages=tuple(skipped),
        )

    def _load(self, path: Path) -> Element:
        """One page, bounded in size; ``ParseError`` for an unreadable, binary or empty one."""
        try:
            size = path.stat().st_size
            if size > self._max_page_bytes:
                raise ParseError(
                    "too_large",
                    f"{path.name} is {size} bytes, over the {self._max_page_bytes} limit",
                )
            data = path.read_bytes()
        except OSError as exc:
            raise ParseError("unreadable", f"cannot read {path.name}: {exc.strerror}") from exc
        head = data[:8192]
        if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise ParseError("binary", f"{path.name} holds NUL bytes; it is not HTML")
        return parse_html_bytes(data)
