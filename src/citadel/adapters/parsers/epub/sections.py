"""Section assembly: a spine item's text, under the toc entries and headings it passes.

The text from an entry's anchor to the next entry belongs to the entry's path, and
headings inside a section nest below it; a heading that repeats the entry's own title
is the entry itself. Items and sections of front or back matter are not indexed: by
title, by ``epub:type``, and for short items only, by file name.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from citadel.adapters.parsers.epub.archive import Archive
from citadel.adapters.parsers.epub.package import ManifestItem
from citadel.adapters.parsers.epub.safe_xml import elements, parse_content
from citadel.adapters.parsers.epub.toc import TocEntry
from citadel.adapters.parsers.markup.block_sink import BlockSink
from citadel.adapters.parsers.markup.names import SKIP_EPUB_TYPES, type_tokens
from citadel.adapters.parsers.markup.titles import is_skip_title, title_key
from citadel.adapters.parsers.markup.walker import Anchor, Heading, Paragraph, extract

_FRONT_FILE = re.compile(
    r"(?:^|[-_.])(?:cover|titlepage|title-page|halftitle|copyright|toc|contents|lof|lot|loi"
    r"|genindex)(?:$|[-_.])",
    re.I,
)
_SHORT_ITEM_CHARS = 3000  # a file name alone may skip an item only when it holds little text


class Sections:
    """The section path as the reading position moves through toc entries and headings."""

    def __init__(self, fallback: str) -> None:
        self._fallback = fallback
        self._entry: TocEntry | None = None
        self._base: tuple[str, ...] = ()
        self._entry_level: int | None = None
        self._stack: list[tuple[int, str]] = []
        self.anchor: str | None = None
        self.path: tuple[str, ...] = (fallback,)
        self.skip = False

    def enter(self, entry: TocEntry) -> None:
        self._entry, self._base = entry, entry.path
        self._entry_level, self._stack = None, []
        self.anchor = entry.fragment
        self._update()

    def heading(self, heading: Heading) -> None:
        if heading.anchor:
            self.anchor = heading.anchor
        entry = self._entry
        if (
            entry is not None
            and self._entry_level is None
            and not self._stack
            and entry.path
            and _same_title(heading.text, entry.path[-1])
        ):
            self._entry_level = heading.level  # the entry's own heading
            return
        if self._entry_level is not None and heading.level <= self._entry_level:
            # A sibling the toc leaves out: it replaces the entry's last component.
            self._base = (*self._base[:-1], heading.text)
            self._entry_level, self._stack = heading.level, []
        else:
            while self._stack and self._stack[-1][0] >= heading.level:
                self._stack.pop()
            self._stack.append((heading.level, heading.text))
        self._update()

    def _update(self) -> None:
        path = self._base + tuple(text for _, text in self._stack)
        self.path = path or (self._fallback,)
        self.skip = any(is_skip_title(t) for t in path)


def _same_title(heading: str, label: str) -> bool:
    a, b = title_key(heading), title_key(label)
    return bool(a and b) and (a == b or a.endswith(b) or b.endswith(a))


def read_item(
    archive: Archive,
    item: ManifestItem,
    entries: Sequence[TocEntry],
    sections: Sections,
    sink: BlockSink,
) -> bool:
    """Add one spine item's text; False when it was front or back matter."""
    root = parse_content(archive.read(item.member), item.member)
    if root is None:
        return True
    body = next(elements(root, "body"), root)
    if (type_tokens(root) | type_tokens(body)) & SKIP_EPUB_TYPES:
        return False
    starts = [e for e in entries if e.fragment is None]
    anchors = {e.fragment: e for e in entries if e.fragment}
    found = extract(body, frozenset(a for a in anchors if a))
    if starts:
        sections.enter(starts[-1])  # the deepest entry that starts here
    else:
        sections.anchor = None
    kept: list[tuple[str, tuple[str, ...], str | None]] = []
    dropped = 0
    for event in found.events:
        if isinstance(event, Anchor):
            sections.enter(anchors[event.name])
        elif isinstance(event, Heading):
            sections.heading(event)
        elif isinstance(event, Paragraph):
            if sections.skip:
                dropped += 1
                continue
            anchor = sections.anchor
            kept.append(
                (event.text, sections.path, f"{item.href}#{anchor}" if anchor else item.href)
            )
    if not kept:
        return dropped == 0
    size = sum(len(text) for text, _, _ in kept)
    stem = posixpath.splitext(posixpath.basename(item.member))[0]
    if size < _SHORT_ITEM_CHARS and _FRONT_FILE.search(stem):
        return False
    for text, section_path, location in kept:
        sink.add(text, section_path, location)
    sink.close()
    return True
