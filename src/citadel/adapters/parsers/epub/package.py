"""The package document: found through ``META-INF/container.xml``, read for metadata and spine.

The OPF's metadata gives title, authors (creators whose role is the author's), year and
subjects as tags; its manifest and spine give the reading order, each member once; the
nav document and the NCX are found for the table of contents. Content named in
``META-INF/encryption.xml`` (DRM) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from citadel.adapters.parsers.epub.archive import Archive, check_name, resolve_href
from citadel.adapters.parsers.epub.safe_xml import (
    attribute,
    children,
    element_text,
    elements,
    parse_xml,
)
from citadel.adapters.parsers.markup.names import local_name
from citadel.app.errors import ParseError

CONTAINER = "META-INF/container.xml"


@dataclass(frozen=True, slots=True)
class ManifestItem:
    href: str  # as the manifest has it, percent-decoded
    member: str
    media_type: str
    properties: frozenset[str]


@dataclass(frozen=True, slots=True)
class Package:
    title: str
    authors: tuple[str, ...]
    year: int | None
    tags: tuple[str, ...]
    spine: tuple[ManifestItem, ...]
    nav: ManifestItem | None
    ncx: ManifestItem | None


def read_package(archive: Archive) -> tuple[str, Package]:
    """The package document's member name, and its metadata, spine, nav and NCX."""
    container = parse_xml(archive.read(CONTAINER), CONTAINER)
    rootfiles = list(elements(container, "rootfile"))
    preferred = [r for r in rootfiles if r.get("media-type") == "application/oebps-package+xml"]
    full_path = next((r.get("full-path") for r in preferred or rootfiles), None)
    if not full_path:
        raise ParseError("corrupt", "container.xml names no package document")
    opf_name = str(full_path)
    check_name(opf_name)
    if opf_name not in archive.names:
        raise ParseError("corrupt", f"the package document {opf_name} is missing")
    opf = parse_xml(archive.read(opf_name), opf_name)

    metadata = next(elements(opf, "metadata"), None)
    titles: list[str] = []
    authors: list[str] = []
    dates: list[str] = []
    tags: list[str] = []
    roles: dict[str, str] = {}
    if metadata is not None:
        for meta in elements(metadata, "meta"):
            if meta.get("property") == "role" and meta.get("refines"):
                roles[str(meta.get("refines")).lstrip("#")] = element_text(meta)
        for el in metadata.iter():
            if not isinstance(el.tag, str):
                continue
            name, value = local_name(el.tag), element_text(el)
            if not value:
                continue
            if name == "title":
                titles.append(value)
            elif name == "creator":
                role = attribute(el, "role") or roles.get(el.get("id") or "", "")
                if role in ("", "aut"):
                    authors.append(value)
            elif name == "date" and attribute(el, "event") in (
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

    items: dict[str, ManifestItem] = {}
    for el in elements(opf, "item"):
        href, item_id = el.get("href"), el.get("id")
        if not href or not item_id:
            continue
        target = resolve_href(opf_name, str(href))
        if target is None:
            continue  # a remote resource; never read
        items[str(item_id)] = ManifestItem(
            href=unquote(urlsplit(str(href)).path),
            member=target[0],
            media_type=str(el.get("media-type") or ""),
            properties=frozenset(str(el.get("properties") or "").split()),
        )
    spine_el = next(elements(opf, "spine"), None)
    if spine_el is None:
        raise ParseError("corrupt", "the package document has no spine")
    spine: dict[str, ManifestItem] = {}
    for ref in children(spine_el, "itemref"):
        item = items.get(str(ref.get("idref")))
        if item is not None:
            spine.setdefault(item.member, item)  # a member listed twice is read once
    nav = next((i for i in items.values() if "nav" in i.properties), None)
    ncx = items.get(str(spine_el.get("toc") or "")) or next(
        (i for i in items.values() if i.media_type == "application/x-dtbncx+xml"), None
    )
    return opf_name, Package(
        title=titles[0] if titles else "",
        authors=tuple(dict.fromkeys(authors)),
        year=year,
        tags=tuple(dict.fromkeys(tags)),
        spine=tuple(spine.values()),
        nav=nav,
        ncx=ncx,
    )


def check_drm(archive: Archive, spine: Sequence[ManifestItem]) -> None:
    """``ParseError("encrypted")`` when ``encryption.xml`` names a spine member."""
    name = "META-INF/encryption.xml"
    if name not in archive.names:
        return
    members = {item.member for item in spine}
    for ref in elements(parse_xml(archive.read(name), name), "cipherreference"):
        uri = str(ref.get("URI") or "")
        target = resolve_href("", uri) if uri else None  # relative to the container root
        if target is not None and target[0] in members:
            raise ParseError("encrypted", f"{target[0]} is encrypted (DRM); it cannot be read")
