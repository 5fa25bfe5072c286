"""The markup walker: body text of an HTML or XHTML tree as events in reading order.

Headings, paragraphs and (for ids the caller watches) anchors come out in
document order; scripts, styles, navigation chrome, hidden elements and DocBook
title-page furniture are dropped, and contents lists are dropped as text while
their links are kept apart from the links in body text. Preformatted text keeps
its lines; ``<br>`` becomes a line break; table cells are joined with `` | ``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.entities import html5 as _ENTITIES

from lxml import etree

from citadel.adapters.parsers.markup.mathml import math_text
from citadel.adapters.parsers.markup.names import (
    SKIP_EPUB_TYPES,
    Element,
    local_name,
    type_tokens,
)
from citadel.adapters.parsers.markup.titles import clean_title

_WS = re.compile(r"\s+")
_BR = "\x00"  # stands for <br> until a paragraph is flushed; NULs are removed from input
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt "
    "fieldset figcaption figure footer header hgroup hr html legend li listing main menu ol "
    "p section summary table tbody tfoot thead tr ul".split()
)
_SECTIONING = frozenset({"article", "section", "main", "aside"})
_DROP_TAGS = frozenset(
    "script style noscript template nav svg iframe object embed form button input select "
    "textarea canvas audio video map head title link meta img".split()
)
_CHROME_CLASSES = frozenset(
    "navheader navfooter related sphinxsidebar sphinxsidebarwrapper footer navigation navbar "
    "nav breadcrumb breadcrumbs mobile-nav menu-wrapper headerlink related-links familylinks "
    "link-marker skip-link searchbox inline-search legalnotice copyright corpauthor "
    "version_switcher_placeholder language_switcher_placeholder".split()
)
_CONTENTS_CLASSES = frozenset(
    "toc toctree-wrapper contents list-of-figures list-of-tables list-of-examples "
    "list-of-equations lof lot".split()
)
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "directory"})
_ADMONITIONS = frozenset(
    "note warning tip caution important admonition sidebar attention danger error hint "
    "seealso".split()
)


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    anchor: str | None


@dataclass(frozen=True, slots=True)
class Anchor:
    """The element with one of the watched ids starts here."""

    name: str


@dataclass(frozen=True, slots=True)
class Paragraph:
    text: str


Event = Heading | Anchor | Paragraph


@dataclass(slots=True)
class Extract:
    events: list[Event] = field(default_factory=list)
    toc_links: list[str] = field(default_factory=list)
    body_links: list[str] = field(default_factory=list)


_SKIP, _OPEN = -1, -2
_BLOCK, _PRE, _HEAD, _ADMON, _SECT, _TITLEPAGE = 1, 2, 4, 8, 16, 32


def extract(root: Element, watch_ids: frozenset[str] = frozenset()) -> Extract:
    """Body text of ``root`` as headings and paragraphs in reading order, chrome dropped."""
    walker = _Walker(watch_ids)
    walker.run(root)
    return walker.out


class _Walker:
    def __init__(self, watch_ids: frozenset[str]) -> None:
        self.out = Extract()
        self._watch = watch_ids
        self._buf: list[str] = []
        self._pre = 0
        self._heading: tuple[int, str | None] | None = None
        self._heading_buf: list[str] = []
        self._admonition = 0
        self._sectioning = 0
        self._titlepage = 0
        self._pending_id: str | None = None

    def run(self, root: Element) -> None:
        # Iterative, so deeply nested markup cannot exhaust the Python stack.
        stack: list[tuple[Element, int]] = [(root, _OPEN)]
        while stack:
            el, flags = stack.pop()
            if flags >= 0:
                self._end(flags)
            else:
                flags = self._open(el)
                if flags >= 0:
                    stack.append((el, flags))
                    if el.text:
                        self._text(el.text)
                    stack.extend((child, _OPEN) for child in reversed(el))
                    continue
            if el.tail and el is not root:
                self._text(el.tail)
        self._flush()

    def _open(self, el: Element) -> int:
        tag = el.tag
        if isinstance(tag, str):
            return self._start(el, local_name(tag))
        if tag is etree.Entity:
            # Left unresolved on purpose (XXE); a named HTML entity still reads as its character.
            self._text(_ENTITIES.get(f"{el.name};", " "))
        return _SKIP

    def _start(self, el: Element, tag: str) -> int:
        cls = el.get("class")
        classes = frozenset(cls.split()) if cls else frozenset()
        role = el.get("role")
        types = type_tokens(el)
        if el.get("hidden") is not None or el.get("aria-hidden") == "true":
            return _SKIP
        if (
            classes & _CONTENTS_CLASSES
            or role == "doc-toc"
            or "toc" in types
            or (tag == "nav" and "toc" in classes | frozenset((el.get("id") or "").split()))
        ):
            self.out.toc_links.extend(
                str(a.get("href")) for a in el.iter("{*}a", "a") if a.get("href")
            )
            return _SKIP
        if (
            tag in _DROP_TAGS
            or classes & _CHROME_CLASSES
            or role in _CHROME_ROLES
            or types & SKIP_EPUB_TYPES
            or (tag in ("header", "footer") and not self._sectioning)
        ):
            return _SKIP
        if tag == "math":
            self._text(f" {math_text(el)} ")
            return _SKIP
        if tag == "br":
            self._text(_BR)
            return _SKIP
        level = _HEADINGS.get(tag)
        opens_heading = bool(level) and self._heading is None and not self._pre
        opens_heading = opens_heading and not self._admonition
        flags = 0
        if opens_heading:
            self._flush()
            flags |= _HEAD
        elif tag == "pre" and self._heading is None:
            if not self._pre:
                self._flush()
            self._pre += 1
            flags |= _PRE
        elif (tag in _BLOCK_TAGS or level) and not self._pre and self._heading is None:
            self._flush()
            flags |= _BLOCK
        elif tag in ("td", "th") and "".join(self._buf).strip():
            self._buf.append(" | ")
        anchor = el.get("id") or (el.get("name") if tag == "a" else None)
        if anchor:
            if anchor in self._watch:
                self._flush()
                self.out.events.append(Anchor(anchor))
            if self._heading is not None:
                if self._heading[1] is None:
                    self._heading = (self._heading[0], anchor)
            elif not opens_heading:
                self._pending_id = anchor
        if opens_heading and level:
            self._heading = (level, anchor)
            self._heading_buf = []
        if tag == "a" and el.get("href"):
            self.out.body_links.append(str(el.get("href")))
        if classes & _ADMONITIONS:
            self._admonition += 1
            flags |= _ADMON
        if tag in _SECTIONING:
            self._sectioning += 1
            flags |= _SECT
        if "titlepage" in classes:
            # DocBook title pages: the heading is the title; authors and notices are not text.
            self._titlepage += 1
            flags |= _TITLEPAGE
        return flags

    def _end(self, flags: int) -> None:
        if flags & _HEAD and self._heading is not None:
            level, anchor = self._heading
            self._heading = None
            text = clean_title("".join(self._heading_buf).replace(_BR, " "))
            if text:
                self.out.events.append(Heading(level, text, anchor or self._pending_id))
                self._pending_id = None
        if flags & _PRE:
            self._pre -= 1
            if not self._pre:
                self._flush(preformatted=True)
        if flags & _BLOCK:
            self._flush()
        if flags & _ADMON:
            self._admonition -= 1
        if flags & _SECT:
            self._sectioning -= 1
        if flags & _TITLEPAGE:
            self._titlepage -= 1

    def _text(self, text: str) -> None:
        if "\x00" in text and text != _BR:
            text = text.replace("\x00", "")
        if self._heading is not None:
            self._heading_buf.append(text)
        elif not self._titlepage:
            self._buf.append(text)

    def _flush(self, *, preformatted: bool = False) -> None:
        if not self._buf:
            return
        joined = "".join(self._buf)
        self._buf = []
        if preformatted:
            text = joined.replace(_BR, "\n").strip("\n").rstrip()
        else:
            text = _WS.sub(" ", joined)
            text = re.sub(f" ?{_BR} ?", "\n", text).strip()
        if text.strip():
            self.out.events.append(Paragraph(text))
            self._pending_id = None
