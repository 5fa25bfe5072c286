"""EPUB 2 and 3 with zipfile and lxml: spine order, nav/NCX hierarchy, fragment anchors.

``META-INF/container.xml`` names the package document (OPF): its metadata gives title,
authors, year and tags, its spine the reading order. The EPUB 3 nav document
(``nav epub:type="toc"``), else the EPUB 2 NCX, gives the hierarchy: each entry points
at a spine item and maybe an anchor in it, and the text from that anchor to the next
entry belongs to the entry's path; headings inside a section nest below it. Without
either, headings alone give the paths. EPUB has no pages: ``Block.location`` is
``spine-item-href#anchor``; ``page_count`` counts spine items and ``skipped_pages``
holds the 1-based spine positions that were not indexed.

Title page, copyright, contents, lists of figures and tables, and the index are not
indexed: by toc titles, ``epub:type`` (titlepage, copyright-page, toc, index, ...) and,
for short items only, file names. MathML reads as linear text.

The archive is untrusted. Before anything is decompressed every member name is checked
(no absolute paths, no ``..``) and every declared size (per member, in total, and the
compression ratio), and reads are bounded anyway; hrefs that leave the book are refused.
All of these raise ``ParseError("unsafe_archive")``. XML is parsed without entity
expansion, DTD loading or network access.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import etree

from citadel.adapters.parsers.html import (
    SKIP_EPUB_TYPES,
    Anchor,
    BlockSink,
    Element,
    Heading,
    Paragraph,
    clean_title,
    extract,
    is_skip_title,
    local_name,
    parse_html_bytes,
    title_key,
    type_tokens,
)
from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import ParsedDocument

_MIB = 1024 * 1024
_CONTAINER = "META-INF/container.xml"
_XHTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/html"})
_FRONT_FILE = re.compile(
    r"(?:^|[-_.])(?:cover|titlepage|title-page|halftitle|copyright|toc|contents|lof|lot|loi"
    r"|genindex)(?:$|[-_.])",
    re.I,
)
_INTERNAL_SUBSET = re.compile(rb"<!DOCTYPE[^\[>]*\[.*?\]\s*>", re.S | re.I)
_SHORT_ITEM_CHARS = 3000  # a file name alone may skip an item only when it holds little text


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_member_bytes: int = 64 * _MIB
    max_total_bytes: int = 512 * _MIB
    max_ratio: int = 100
    max_members: int = 10_000
    ratio_floor_bytes: int = _MIB  # small members may compress well; only big ones are judged


@dataclass(frozen=True, slots=True)
class _TocEntry:
    path: tuple[str, ...]
    member: str
    fragment: str | None


@dataclass(frozen=True, slots=True)
class _Item:
    href: str  # as the manifest has it, percent-decoded
    member: str
    media_type: str
    properties: frozenset[str]


def _unsafe(message: str) -> ParseError:
    return ParseError("unsafe_archive", message)


def _check_name(name: str) -> None:
    if (
        name.startswith(("/", "\\"))
        or "\\" in name
        or "\x00" in name
        or re.match(r"^[A-Za-z]:", name)
        or ".." in name.split("/")
    ):
        raise _unsafe(f"the archive holds an unsafe member name {name!r}")


class _Archive:
    """A zip opened for reading with every member checked before anything is inflated."""

    def __init__(self, zf: zipfile.ZipFile, limits: ArchiveLimits) -> None:
        self._zf = zf
        self._limits = limits
        self._read_total = 0
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise _unsafe(f"{len(infos)} members is over the {limits.max_members} limit")
        total = 0
        for info in infos:
            _check_name(info.filename)
            if info.file_size > limits.max_member_bytes:
                raise _unsafe(
                    f"{info.filename} would inflate to {info.file_size} bytes, over the "
                    f"{limits.max_member_bytes} limit (zip bomb?)"
                )
            if (
                info.file_size > limits.ratio_floor_bytes
                and info.file_size > limits.max_ratio * max(info.compress_size, 1)
            ):
                raise _unsafe(
                    f"{info.filename} compresses {info.file_size}:{info.compress_size}, over "
                    f"the {limits.max_ratio}:1 limit (zip bomb?)"
                )
            total += info.file_size
        if total > limits.max_total_bytes:
            raise _unsafe(
                f"the archive would inflate to {total} bytes, over the "
                f"{limits.max_total_bytes} limit (zip bomb?)"
            )
        self.names = frozenset(info.filename for info in infos)

    def read(self, name: str) -> bytes:
        try:
            info = self._zf.getinfo(name)
        except KeyError as exc:
            raise ParseError("corrupt", f"the EPUB lacks {name}") from exc
        limit = min(self._limits.max_member_bytes, info.file_size)
        try:
            with self._zf.open(info) as handle:
                # Bounded even if the header lies about the size.
                data = handle.read(limit + 1)
        except RuntimeError as exc:  # zipfile's word for an encrypted member
            raise ParseError("encrypted", f"{name} is encrypted") from exc
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError) as exc:
            raise ParseError("corrupt", f"{name} cannot be read from the archive: {exc}") from exc
        if len(data) > limit:
            raise _unsafe(f"{name} inflates past its declared size (zip bomb?)")
        self._read_total += len(data)
        if self._read_total > self._limits.max_total_bytes:
            raise _unsafe("the archive inflates past the total size limit (zip bomb?)")
        return data


def _xml(data: bytes, what: str) -> Element:
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise ParseError("corrupt", f"{what} is not well-formed XML: {exc}") from exc
    if root is None:
        raise ParseError("corrupt", f"{what} is empty")
    return root


def _content(data: bytes, what: str) -> Element | None:
    """An XHTML content document; tag soup that is not XML falls back to the HTML parser."""
    if not data.strip():
        return None
    try:
        return _xml(data, what)
    except ParseError:
        # The HTML parser knows no internal DTD subset; it would show up as text.
        return parse_html_bytes(_INTERNAL_SUBSET.sub(b"", data, count=1))


def _elements(root: Element, name: str) -> Iterator[Element]:
    for el in root.iter():
        if isinstance(el.tag, str) and local_name(el.tag) == name:
            yield el


def _children(el: Element, name: str) -> Iterator[Element]:
    for child in el:
        if isinstance(child.tag, str) and local_name(child.tag) == name:
            yield child


def _first(el: Element, name: str) -> Element | None:
    return next(_children(el, name), None)


def _text(el: Element) -> str:
    return clean_title("".join(t for t in el.itertext() if isinstance(t, str)))


def _attr(el: Element, name: str) -> str:
    """An attribute by local name, whatever its namespace (``opf:role`` or ``role``)."""
    for key, value in el.attrib.items():
        if local_name(str(key)) == name:
            return str(value)
    return ""


def _resolve(base: str, href: str) -> tuple[str, str | None] | None:
    """``href`` relative to the member ``base`` as (member, fragment); None when external."""
    parts = urlsplit(href.strip())
    if parts.scheme or parts.netloc:
        return None
    fragment = unquote(parts.fragment) or None
    path = unquote(parts.path)
    if not path:
        return (base, fragment)
    if path.startswith("/") or "\\" in path or "\x00" in path:
        raise _unsafe(f"the book refers to {href!r}, outside the archive")
    target = posixpath.normpath(posixpath.join(posixpath.dirname(base), path))
    if target == ".." or target.startswith("../"):
        raise _unsafe(f"the book refers to {href!r}, outside the archive")
    return (target, fragment)


@dataclass(frozen=True, slots=True)
class _Package:
    title: str
    authors: tuple[str, ...]
    year: int | None
    tags: tuple[str, ...]
    spine: tuple[_Item, ...]
    nav: _Item | None
    ncx: _Item | None


def _package(archive: _Archive) -> tuple[str, _Package]:
    container = _xml(archive.read(_CONTAINER), _CONTAINER)
    rootfiles = list(_elements(container, "rootfile"))
    preferred = [r for r in rootfiles if r.get("media-type") == "application/oebps-package+xml"]
    full_path = next((r.get("full-path") for r in preferred or rootfiles), None)
    if not full_path:
        raise ParseError("corrupt", "container.xml names no package document")
    opf_name = str(full_path)
    _check_name(opf_name)
    if opf_name not in archive.names:
        raise ParseError("corrupt", f"the package document {opf_name} is missing")
    opf = _xml(archive.read(opf_name), opf_name)

    metadata = next(_elements(opf, "metadata"), None)
    titles: list[str] = []
    authors: list[str] = []
    dates: list[str] = []
    tags: list[str] = []
    roles: dict[str, str] = {}
    if metadata is not None:
        for meta in _elements(metadata, "meta"):
            if meta.get("property") == "role" and meta.get("refines"):
                roles[str(meta.get("refines")).lstrip("#")] = _text(meta)
        for el in metadata.iter():
            if not isinstance(el.tag, str):
                continue
            name, value = local_name(el.tag), _text(el)
            if not value:
                continue
            if name == "title":
                titles.append(value)
            elif name == "creator":
                role = _attr(el, "role") or roles.get(el.get("id") or "", "")
                if role in ("", "aut"):
                    authors.append(value)
            elif name == "date" and _attr(el, "event") in (
                "",
                "publication",
                "original-publication",
            ):
                dates.append(value)
            elif name == "subject":
                tags.append(value)
    year = None
    for date in dates:
        match = re.search(r"\b(1\d{3}|2\d{3})\b", date)
        if match:
            year = int(match.group(1))
            break

    items: dict[str, _Item] = {}
    for el in _elements(opf, "item"):
        href, item_id = el.get("href"), el.get("id")
        if not href or not item_id:
            continue
        target = _resolve(opf_name, str(href))
        if target is None:
            continue  # a remote resource; never read
        items[str(item_id)] = _Item(
            href=unquote(urlsplit(str(href)).path),
            member=target[0],
            media_type=str(el.get("media-type") or ""),
            properties=frozenset(str(el.get("properties") or "").split()),
        )
    spine_el = next(_elements(opf, "spine"), None)
    if spine_el is None:
        raise ParseError("corrupt", "the package document has no spine")
    spine: dict[str, _Item] = {}
    for ref in _children(spine_el, "itemref"):
        item = items.get(str(ref.get("idref")))
        if item is not None:
            spine.setdefault(item.member, item)  # a member listed twice is read once
    nav = next((i for i in items.values() if "nav" in i.properties), None)
    ncx = items.get(str(spine_el.get("toc") or "")) or next(
        (i for i in items.values() if i.media_type == "application/x-dtbncx+xml"), None
    )
    return opf_name, _Package(
        title=titles[0] if titles else "",
        authors=tuple(dict.fromkeys(authors)),
        year=year,
        tags=tuple(dict.fromkeys(tags)),
        spine=tuple(spine.values()),
        nav=nav,
        ncx=ncx,
    )


def _nav_entries(root: Element, member: str) -> list[_TocEntry]:
    navs = list(_elements(root, "nav"))
    toc = next((n for n in navs if "toc" in type_tokens(n)), navs[0] if navs else None)
    entries: list[_TocEntry] = []
    if toc is None:
        return entries

    def walk(ol: Element, parents: tuple[str, ...]) -> None:
        for li in _children(ol, "li"):
            label = _first(li, "a")
            if label is None:
                label = _first(li, "span")
            title = _text(label) if label is not None else ""
            path = (*parents, title) if title else parents
            href = label.get("href") if label is not None else None
            target = _resolve(member, str(href)) if href else None
            if target is not None and title:
                entries.append(_TocEntry(path, target[0], target[1]))
            sub = _first(li, "ol")
            if sub is not None:
                walk(sub, path)

    ol = next(_elements(toc, "ol"), None)
    if ol is not None:
        walk(ol, ())
    return entries


def _ncx_entries(root: Element, member: str) -> list[_TocEntry]:
    entries: list[_TocEntry] = []

    def walk(parent: Element, parents: tuple[str, ...]) -> None:
        for point in _children(parent, "navpoint"):
            label = _first(point, "navlabel")
            text_el = _first(label, "text") if label is not None else None
            title = _text(text_el) if text_el is not None else ""
            path = (*parents, title) if title else parents
            content = _first(point, "content")
            src = content.get("src") if content is not None else None
            target = _resolve(member, str(src)) if src else None
            if target is not None and title:
                entries.append(_TocEntry(path, target[0], target[1]))
            walk(point, path)

    nav_map = next(_elements(root, "navmap"), None)
    if nav_map is not None:
        walk(nav_map, ())
    return entries


def _check_drm(archive: _Archive, spine: Sequence[_Item]) -> None:
    name = "META-INF/encryption.xml"
    if name not in archive.names:
        return
    members = {item.member for item in spine}
    for ref in _elements(_xml(archive.read(name), name), "cipherreference"):
        uri = str(ref.get("URI") or "")
        target = _resolve("", uri) if uri else None  # relative to the container root
        if target is not None and target[0] in members:
            raise ParseError("encrypted", f"{target[0]} is encrypted (DRM); it cannot be read")


class _Sections:
    """The section path as the reading position moves through toc entries and headings."""

    def __init__(self, fallback: str) -> None:
        self._fallback = fallback
        self._entry: _TocEntry | None = None
        self._base: tuple[str, ...] = ()
        self._entry_level: int | None = None
        self._stack: list[tuple[int, str]] = []
        self.anchor: str | None = None
        self.path: tuple[str, ...] = (fallback,)
        self.skip = False

    def enter(self, entry: _TocEntry) -> None:
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


class EpubParser:
    name = "epub/1"

    def __init__(self, *, limits: ArchiveLimits | None = None) -> None:
        self._limits = limits or ArchiveLimits()

    def accepts(self, path: Path) -> bool:
        if not path.is_file():
            return False
        if path.suffix.lower() == ".epub":
            return True
        with path.open("rb") as handle:
            head = handle.read(58)
        return head.startswith(b"PK\x03\x04") and head[30:58] == b"mimetypeapplication/epub+zip"

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        try:
            zf = zipfile.ZipFile(path)
        except OSError as exc:
            raise ParseError("unreadable", f"cannot read the file: {exc.strerror}") from exc
        except (zipfile.BadZipFile, ValueError, EOFError) as exc:
            raise ParseError("corrupt", f"the EPUB is not a readable zip archive: {exc}") from exc
        with zf:
            return self._parse(_Archive(zf, self._limits), path, progress)

    def _parse(
        self, archive: _Archive, path: Path, progress: ProgressCallback | None
    ) -> ParsedDocument:
        if _CONTAINER not in archive.names:
            raise ParseError("corrupt", f"the EPUB lacks {_CONTAINER}; it is not an EPUB")
        _, package = _package(archive)
        _check_drm(archive, package.spine)
        entries: list[_TocEntry] = []
        if package.nav is not None and package.nav.member in archive.names:
            nav_root = _content(archive.read(package.nav.member), package.nav.member)
            if nav_root is not None:
                entries = _nav_entries(nav_root, package.nav.member)
        if not entries and package.ncx is not None and package.ncx.member in archive.names:
            ncx_root = _xml(archive.read(package.ncx.member), package.ncx.member)
            entries = _ncx_entries(ncx_root, package.ncx.member)
        by_member: dict[str, list[_TocEntry]] = {}
        for entry in entries:
            by_member.setdefault(entry.member, []).append(entry)

        title = package.title or path.stem
        sections = _Sections(title)
        sink = BlockSink()
        skipped: list[int] = []
        total = len(package.spine)
        for position, item in enumerate(package.spine, start=1):
            if progress:
                progress(position, total)
            if item.media_type not in _XHTML_TYPES:
                continue  # an image or SVG page: no text to index
            if package.nav is not None and item.member == package.nav.member:
                skipped.append(position)
                continue
            if item.member not in archive.names:
                raise ParseError("corrupt", f"the spine names {item.href}, which is missing")
            kept = self._item(archive, item, by_member.get(item.member, []), sections, sink)
            if not kept:
                skipped.append(position)
        sink.close()
        if not sink.blocks:
            raise ParseError("empty", "no body text was found in the EPUB")
        return ParsedDocument(
            title=title,
            blocks=tuple(sink.blocks),
            parser=self.name,
            authors=package.authors,
            year=package.year,
            tags=package.tags,
            page_count=total,
            skipped_pages=tuple(skipped),
        )

    def _item(
        self,
        archive: _Archive,
        item: _Item,
        entries: Sequence[_TocEntry],
        sections: _Sections,
        sink: BlockSink,
    ) -> bool:
        """Add one spine item's text; False when it was front or back matter."""
        root = _content(archive.read(item.member), item.member)
        if root is None:
            return True
        body = next(_elements(root, "body"), root)
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
