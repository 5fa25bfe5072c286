"""HTML via lxml.html: a single-file book, or a directory of pages read as one book.

A directory needs an ``index.html``; its pages are read in the order of the table of
contents: from ``index.html`` the links inside contents containers (DocBook
``div.toc``, Sphinx ``toctree-wrapper``, a toc ``nav``) are followed depth first, so
a chapter's sections come right after the chapter. Pages reached only through links
in body text follow; pages nothing links to are left out. A link is followed only
when it is a relative path that stays inside the directory (no scheme, no absolute
path, no escape through ``..`` or a symlink).

Each page's first heading is its title; the titles of the pages above it in the table
of contents prefix its section paths, and later headings nest under the title.
Scripts, styles, navigation chrome and contents lists are dropped; index, contents,
copyright and legal-notice pages are not indexed. ``Block.location`` is
``page.html#anchor`` of the nearest heading; pages have no numbers.

The markup walker below is shared with the EPUB parser.
"""

from __future__ import annotations

import codecs
import os
import posixpath
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from html.entities import html5 as _ENTITIES
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from lxml import etree
from lxml import html as lxml_html

from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block, ParsedDocument

Element = Any  # an lxml element; lxml ships no type hints

EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
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
SKIP_EPUB_TYPES = frozenset(
    "toc landmarks page-list loi lot titlepage halftitlepage copyright-page index cover "
    "imprint colophon".split()
)
_ADMONITIONS = frozenset(
    "note warning tip caution important admonition sidebar attention danger error hint "
    "seealso".split()
)
_SKIP_TITLE = re.compile(
    r"^(?:[\dIVXLC]+\.\s*)?(?:(?:table\s+of\s+)?contents|(?:general\s+|subject\s+)?index"
    r"|list\s+of\s+(?:figures|tables|illustrations|listings|examples|equations|algorithms)"
    r"|title\s*page|half[\s-]?title(?:\s+page)?|copyright(?:\s+page|\s+notice)?"
    r"|legal\s+notice|colophon|cover)$",
    re.I,
)
_TITLE_MARKS = re.compile(r"^[\s¶#›§]+|[\s¶#›§]+$")  # permalink marks around headings
_MAX_BLOCK_CHARS = 4000
_MIB = 1024 * 1024


def is_skip_title(title: str) -> bool:
    """True for titles of front and back matter that is not indexed (contents, index, ...)."""
    return bool(_SKIP_TITLE.match(title.strip()))


def title_key(title: str) -> str:
    """A title reduced to lowercase letters and digits, for matching toc labels to headings."""
    return "".join(ch for ch in title.lower() if ch.isalnum())


def clean_title(text: str) -> str:
    return _TITLE_MARKS.sub("", _WS.sub(" ", text))


@lru_cache(maxsize=512)
def local_name(tag: str) -> str:
    if tag.startswith("{"):
        tag = tag.split("}", 1)[1]
    return tag.rsplit(":", 1)[-1].lower()


def type_tokens(el: Element) -> frozenset[str]:
    """The ``epub:type`` tokens of an element, from XML or from HTML parsing."""
    value = el.get(EPUB_TYPE) or el.get("epub:type")
    return frozenset(str(value).split()) if value else frozenset()


# --- the markup walker -------------------------------------------------------------------


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


_INVISIBLE = dict.fromkeys(map(ord, "\u2061\u2062\u2063\u2064\u200b"))
_TIGHT_OPS = frozenset("()[]{}|,.;:!'′″")


def math_text(el: Element) -> str:
    """MathML as readable linear text: ``x_{ij}``, ``(a + b)/c``, ``√x``; annotations dropped."""
    try:
        return _WS.sub(" ", _math(el)).strip()
    except RecursionError:  # absurdly deep markup: the bare text will do
        return _WS.sub(" ", "".join(t for t in el.itertext() if isinstance(t, str))).strip()


def _group(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 1 else "{" + text + "}"


def _paren(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 1 or text.isalnum() else f"({text})"


def _math(el: Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    name = local_name(tag)
    if name in ("annotation", "annotation-xml", "mphantom", "none", "mprescripts"):
        return ""
    if name in ("mi", "mn", "mo", "mtext", "ms"):
        text = _WS.sub(" ", "".join(el.itertext())).translate(_INVISIBLE).strip()
        return f" {text} " if name == "mo" and text and text not in _TIGHT_OPS else text
    if name == "mspace":
        return " "
    parts = [_math(child) for child in el if isinstance(child.tag, str)]
    if name == "semantics":
        return parts[0] if parts else ""
    if name in ("msub", "munder") and len(parts) >= 2:
        return f"{parts[0]}_{_group(parts[1])}"
    if name in ("msup", "mover") and len(parts) >= 2:
        return f"{parts[0]}^{_group(parts[1])}"
    if name in ("msubsup", "munderover") and len(parts) >= 3:
        return f"{parts[0]}_{_group(parts[1])}^{_group(parts[2])}"
    if name == "mfrac" and len(parts) >= 2:
        return f"{_paren(parts[0])}/{_paren(parts[1])}"
    if name == "msqrt":
        return f"√{_paren(''.join(parts))}"
    if name == "mroot" and len(parts) >= 2:
        return f"√[{parts[1].strip()}]{_paren(parts[0])}"
    if name == "mfenced":
        separator = (el.get("separators") or ",").strip()[:1]
        inner = f"{separator} ".join(parts) if separator else "".join(parts)
        return f"{el.get('open', '(')}{inner}{el.get('close', ')')}"
    if name == "mtable":  # rows; a fence around the table supplies the brackets
        return "; ".join(row for row in (p.strip() for p in parts) if row)
    if name in ("mtr", "mlabeledtr"):
        return ", ".join(cell for cell in (p.strip() for p in parts) if cell)
    return "".join(parts)


class BlockSink:
    """Joins consecutive paragraphs of one section and location into blocks of bounded size."""

    def __init__(self, max_chars: int = _MAX_BLOCK_CHARS) -> None:
        self.blocks: list[Block] = []
        self._max = max_chars
        self._paras: list[str] = []
        self._size = 0
        self._key: tuple[tuple[str, ...], str | None] = ((), None)

    def add(self, text: str, section_path: tuple[str, ...], location: str | None) -> None:
        key = (section_path, location)
        if self._paras and (key != self._key or self._size + len(text) > self._max):
            self.close()
        self._key = key
        self._paras.append(text)
        self._size += len(text) + 2

    def close(self) -> None:
        if self._paras:
            path, location = self._key
            self.blocks.append(Block("\n\n".join(self._paras), path, location=location))
        self._paras = []
        self._size = 0


# --- reading HTML --------------------------------------------------------------------------

_XML_DECL = re.compile(rb"^\s*<\?xml[^>]*encoding=[\"']([A-Za-z0-9._:-]+)")
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.I)
_XML_DECL_TEXT = re.compile(r"^\s*<\?xml[^>]*\?>")


def decode_html(data: bytes) -> str:
    """Bytes to text by BOM, XML declaration or ``<meta charset>``, else UTF-8, else cp1252."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    if data.startswith(codecs.BOM_UTF16_BE):
        return data.decode("utf-16", errors="replace")
    head = data[:4096]
    match = _XML_DECL.match(head) or _META_CHARSET.search(head)
    if match:
        try:
            codec = codecs.lookup(match.group(1).decode("ascii")).name
        except LookupError:
            codec = ""
        # Browsers read these labels as windows-1252; a page declaring UTF-16 in ASCII lies.
        if codec in ("latin-1", "iso8859-1", "ascii"):
            codec = "cp1252"
        if codec and not codec.startswith("utf-16") and not codec.startswith("utf-32"):
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def parse_html_bytes(data: bytes) -> Element:
    """An HTML document from bytes; ``ParseError`` when there is no document in them."""
    text = _XML_DECL_TEXT.sub("", decode_html(data), count=1)
    parser = lxml_html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True)
    try:
        return lxml_html.document_fromstring(text, parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise ParseError("empty", f"the HTML holds no document: {exc}") from exc


def _meta(doc: Element, *names: str) -> list[str]:
    wanted = {n.lower() for n in names}
    values: list[str] = []
    for meta in doc.iter("meta"):
        key = (meta.get("name") or meta.get("property") or "").lower()
        content = meta.get("content")
        if key in wanted and content and content.strip():
            values.append(_WS.sub(" ", str(content)).strip())
    return values


def _content_root(doc: Element) -> Element:
    for candidate in doc.iter("main"):
        return candidate
    for candidate in doc.xpath("//*[@role='main']"):
        return candidate
    body = doc.find("body")
    return doc if body is None else body


@dataclass(frozen=True, slots=True)
class _Meta:
    title: str
    authors: tuple[str, ...]
    year: int | None
    tags: tuple[str, ...]


def _document_meta(doc: Element, fallback: str) -> _Meta:
    title_el = doc.find(".//title")
    title_text = clean_title(title_el.text_content()) if title_el is not None else ""
    titles = _meta(doc, "dc.title", "dcterms.title", "citation_title", "og:title")
    authors = _meta(doc, "author", "dc.creator", "citation_author")
    keywords = [k.strip() for v in _meta(doc, "keywords") for k in re.split(r"[,;]", v)]
    year = None
    for value in _meta(
        doc, "date", "dc.date", "dcterms.date", "citation_publication_date", "citation_date"
    ):
        match = re.search(r"\b(1\d{3}|2\d{3})\b", value)
        if match:
            year = int(match.group(1))
            break
    return _Meta(
        title=(titles[0] if titles else "") or title_text or fallback,
        authors=tuple(dict.fromkeys(authors)),
        year=year,
        tags=tuple(dict.fromkeys(k for k in keywords if k)),
    )


def _emit_page(
    events: Sequence[Event],
    sink: BlockSink,
    *,
    href: str,
    prefix: tuple[str, ...],
    rooted: bool,
    fallback: str,
) -> str:
    """Add a page's paragraphs to ``sink``; returns the page's title.

    ``rooted``: the first heading is the page's title and every later heading nests
    under it, whatever its level (DocBook reference pages put all at ``h2``).
    """
    title: str | None = None
    title_level = 0
    stack: list[tuple[int, str]] = []
    anchor: str | None = None
    path = prefix + ((fallback,) if rooted else ())
    skip = any(is_skip_title(t) for t in path)
    for event in events:
        if isinstance(event, Heading):
            anchor = event.anchor
            if rooted and title is None:
                title, title_level = event.text, event.level
            else:
                rank = event.level * 2
                if rooted and event.level <= title_level:
                    rank = title_level * 2 + 1
                while stack and stack[-1][0] >= rank:
                    stack.pop()
                stack.append((rank, event.text))
            head = prefix + ((title or fallback,) if rooted else ())
            path = head + tuple(text for _, text in stack)
            skip = any(is_skip_title(t) for t in path)
        elif isinstance(event, Paragraph) and not skip:
            sink.add(event.text, path or (fallback,), f"{href}#{anchor}" if anchor else href)
    sink.close()
    return title or fallback


def _first_title(events: Sequence[Event], fallback: str) -> str:
    return next((e.text for e in events if isinstance(e, Heading)), fallback)


class HtmlParser:
    name = "html/1"

    def __init__(self, *, max_pages: int = 10_000, max_page_bytes: int = 32 * _MIB) -> None:
        self._max_pages = max_pages
        self._max_page_bytes = max_page_bytes

    def accepts(self, path: Path) -> bool:
        if path.is_dir():
            return (path / "index.html").is_file() or (path / "index.htm").is_file()
        return path.is_file() and path.suffix.lower() in {".html", ".htm"}

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        if path.is_dir():
            return self._parse_directory(path, progress)
        doc = self._load(path)
        meta = _document_meta(doc, path.stem)
        found = extract(_content_root(doc))
        sink = BlockSink()
        _emit_page(found.events, sink, href=path.name, prefix=(), rooted=False, fallback=meta.title)
        if progress:
            progress(1, 1)
        return self._document(meta, sink.blocks, 1, [])

    def _document(
        self, meta: _Meta, blocks: list[Block], pages: int, skipped: list[int]
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

    def _parse_directory(self, root: Path, progress: ProgressCallback | None) -> ParsedDocument:
        base = root.resolve()
        index = "index.html" if (root / "index.html").is_file() else "index.htm"
        links = _Links(base)
        if not links.resolve("", [index]):
            raise ParseError("unreadable", f"{index} is missing or points outside {root.name}")
        total = sum(
            1
            for _, _, files in os.walk(root)
            for f in files
            if f.lower().endswith((".html", ".htm"))
        )
        sink = BlockSink()
        skipped: list[int] = []
        visited: set[str] = set()
        meta: _Meta | None = None
        stack: list[tuple[str, tuple[str, ...]]] = [(index, ())]
        by_body: deque[str] = deque()
        while True:
            while stack:
                rel, prefix = stack.pop()
                if rel in visited:
                    continue
                visited.add(rel)
                if len(visited) > self._max_pages:
                    raise ParseError("too_many_pages", f"more than {self._max_pages} linked pages")
                try:
                    doc = self._load(base / rel)
                except ParseError as exc:
                    if exc.reason != "empty" or rel == index:
                        raise
                    skipped.append(len(visited))  # an empty page in a set is no reason to fail
                    continue
                if meta is None:
                    meta = _document_meta(doc, root.name)
                found = extract(_content_root(doc))
                fallback = _document_meta(doc, posixpath.basename(rel)).title
                skip = is_skip_title(_first_title(found.events, fallback))
                title = fallback
                if skip:
                    skipped.append(len(visited))
                else:
                    title = _emit_page(
                        found.events, sink, href=rel, prefix=prefix, rooted=True, fallback=fallback
                    )
                    by_body.extend(links.resolve(rel, found.body_links))
                toc = found.toc_links if found.toc_links or rel != index else found.body_links
                below = prefix if rel == index or skip else (*prefix, title)
                children = [c for c in links.resolve(rel, toc) if c not in visited]
                stack.extend((child, below) for child in reversed(children))
                if progress:
                    progress(len(visited), max(total, len(visited)))
            while by_body and by_body[0] in visited:
                by_body.popleft()
            if not by_body:
                break
            stack.append((by_body.popleft(), ()))
        if progress:
            progress(len(visited), len(visited))
        assert meta is not None
        return self._document(meta, sink.blocks, len(visited), skipped)


class _Links:
    """Resolves hrefs to page paths inside one directory, refusing every way out of it."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._inside: dict[str, bool] = {}

    def resolve(self, page: str, hrefs: Sequence[str]) -> list[str]:
        found: dict[str, None] = {}
        for href in hrefs:
            target = self._one(page, href)
            if target is not None and target != page:
                found.setdefault(target)
        return list(found)

    def _one(self, page: str, href: str) -> str | None:
        parts = urlsplit(href.strip())
        path = unquote(parts.path)
        if parts.scheme or parts.netloc or not path or path.startswith("/"):
            return None
        if "\\" in path or "\x00" in path:
            return None
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
        if target == ".." or target.startswith(("../", "/")):
            return None
        if posixpath.splitext(target)[1].lower() not in (".html", ".htm"):
            return None
        inside = self._inside.get(target)
        if inside is None:
            try:
                real = (self._base / target).resolve()
                inside = real.is_file() and real.is_relative_to(self._base)
            except (OSError, RuntimeError):
                inside = False
            self._inside[target] = inside
        return target if inside else None
