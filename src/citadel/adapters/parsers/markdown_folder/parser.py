"""The Markdown folder parser: a folder of Markdown files read as one book."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from citadel.adapters.parsers import DEFAULT_MAX_PAGES
from citadel.adapters.parsers.markdown import markdown_page, markdown_parser
from citadel.adapters.parsers.markdown_folder.order import (
    MARKDOWN_SUFFIXES,
    holds_markdown,
    reading_order,
)
from citadel.adapters.parsers.markup.block_sink import BlockSink
from citadel.adapters.parsers.markup.links import FolderLinks
from citadel.adapters.parsers.markup.pages import emit_page, first_title
from citadel.adapters.parsers.markup.titles import is_skip_title
from citadel.adapters.parsers.markup.walker import Heading
from citadel.adapters.parsers.plaintext import read_utf8
from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import ParsedDocument

log = logging.getLogger("citadel.parsers.markdown_folder")

_MIB = 1024 * 1024
_INDEX_STEMS = ("index", "readme")
# An inline link's destination: "](target" or "](<target with spaces>".
_DESTINATION = re.compile(r"(\]\(\s*)(<[^<>\n]*>|[^\s()<>]+)")


class MarkdownFolderParser:
    name = "markdown-folder/1"

    def __init__(
        self, *, max_pages: int = DEFAULT_MAX_PAGES, max_page_bytes: int = 32 * _MIB
    ) -> None:
        self._max_pages = max_pages
        self._max_page_bytes = max_page_bytes
        self._md = markdown_parser()

    def accepts(self, path: Path) -> bool:
        # A folder with an index.html is the HTML parser's (a built site beside its sources).
        if not path.is_dir() or (path / "index.html").is_file() or (path / "index.htm").is_file():
            return False
        return holds_markdown(path)

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        texts: dict[Path, str] = {}  # each file read once: the index for its links, then all

        def text_of(file: Path, rel: str) -> str:
            if file not in texts:
                texts[file] = self._load(file, rel)
            return texts[file]

        def links_of(file: Path, rel: str) -> list[str]:
            return markdown_page(self._md, text_of(file, rel)).links

        reading = reading_order(path, max_files=self._max_pages, links_of=links_of)
        links = FolderLinks(reading.root, MARKDOWN_SUFFIXES)
        chapters = {c.path for c in reading.chapters}
        sink = BlockSink()
        skipped: list[int] = []
        first_heading: str | None = None
        total = len(reading.chapters)
        for position, chapter in enumerate(reading.chapters, 1):

            def rewrite(body: str, page: str = chapter.path) -> str:
                return _DESTINATION.sub(lambda m: _located(m, page, links, chapters), body)

            text = text_of(reading.root / chapter.path, chapter.path)
            page = markdown_page(self._md, text, rewrite)
            fallback = chapter.nav_title or _name(chapter.path, path.name)
            title = first_title(page.events, fallback)
            if first_heading is None and reading.led:  # an index names the book; a first file not
                first_heading = next((e.text for e in page.events if isinstance(e, Heading)), "")
            if not page.events or is_skip_title(title):
                skipped.append(position)  # an empty file, or a contents or index page
            else:
                emit_page(
                    page.events, sink, href=chapter.path, prefix=(), rooted=True, fallback=fallback
                )
            if progress:
                progress(position, total)
        if not sink.blocks:
            raise ParseError(
                "empty", f"no body text was found in the Markdown files of {path.name}"
            )
        for warning in reading.warnings:
            log.warning("%s: %s", path.name, warning)
        config = reading.config
        return ParsedDocument(
            title=config.site_name or first_heading or path.name,
            blocks=tuple(sink.blocks),
            parser=self.name,
            authors=(config.site_author,) if config.site_author else (),
            page_count=total,
            skipped_pages=tuple(skipped),
            warnings=reading.warnings,
        )

    def _load(self, path: Path, rel: str) -> str:
        """One file's text, bounded in size; ``ParseError`` naming it when it is unreadable."""
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise ParseError("unreadable", f"cannot read {rel}: {exc.strerror}") from exc
        if size > self._max_page_bytes:
            raise ParseError(
                "too_large", f"{rel} is {size} bytes, over the {self._max_page_bytes} limit"
            )
        try:
            return read_utf8(path)
        except ParseError as exc:
            raise ParseError(exc.reason, f"{rel}: {exc}") from exc


def _located(match: re.Match[str], page: str, links: FolderLinks, chapters: set[str]) -> str:
    """A link to a file of the book as that file's location in it (``guide/setup.md#anchor``)."""
    written = match.group(2)
    target = links.split(page, written[1:-1] if written.startswith("<") else written)
    if target is None or target[0] not in chapters:
        return match.group(0)
    location = f"{target[0]}#{target[1]}" if target[1] else target[0]
    if re.search(r"[\s()<>]", location):
        location = f"<{location}>"
    return f"{match.group(1)}{location}"


def _name(rel: str, folder: str) -> str:
    """A file's title when it has no heading: its name, or its folder's for an index."""
    parts = rel.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    if stem.lower() in _INDEX_STEMS:
        return parts[-2] if len(parts) > 1 else folder
    return stem
