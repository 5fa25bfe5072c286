"""The table of contents: the EPUB 3 nav document, else the EPUB 2 NCX, as flat entries.

Each entry carries its whole path of titles and points at a spine member, maybe at an
anchor in it; entries without a title or leaving the book are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from citadel.adapters.parsers.epub.archive import resolve_href
from citadel.adapters.parsers.epub.safe_xml import children, element_text, elements, first_child
from citadel.adapters.parsers.markup.names import Element, type_tokens


@dataclass(frozen=True, slots=True)
class TocEntry:
    path: tuple[str, ...]
    member: str
    fragment: str | None


def nav_entries(root: Element, member: str) -> list[TocEntry]:
    """The entries of the nav document's toc ``nav`` (else its first ``nav``), in order."""
    navs = list(elements(root, "nav"))
    toc = next((n for n in navs if "toc" in type_tokens(n)), navs[0] if navs else None)
    entries: list[TocEntry] = []
    if toc is None:
        return entries

    def walk(ol: Element, parents: tuple[str, ...]) -> None:
        for li in children(ol, "li"):
            label = first_child(li, "a")
            if label is None:
                label = first_child(li, "span")
            title = element_text(label) if label is not None else ""
            path = (*parents, title) if title else parents
            href = label.get("href") if label is not None else None
            target = resolve_href(member, str(href)) if href else None
            if target is not None and title:
                entries.append(TocEntry(path, target[0], target[1]))
            sub = first_child(li, "ol")
            if sub is not None:
                walk(sub, path)

    ol = next(elements(toc, "ol"), None)
    if ol is not None:
        walk(ol, ())
    return entries


def ncx_entries(root: Element, member: str) -> list[TocEntry]:
    """The entries of the NCX's ``navMap``, in order."""
    entries: list[TocEntry] = []

    def walk(parent: Element, parents: tuple[str, ...]) -> None:
        for point in children(parent, "navpoint"):
            label = first_child(point, "navlabel")
            text_el = first_child(label, "text") if label is not None else None
            title = element_text(text_el) if text_el is not None else ""
            path = (*parents, title) if title else parents
            content = first_child(point, "content")
            src = content.get("src") if content is not None else None
            target = resolve_href(member, str(src)) if src else None
            if target is not None and title:
                entries.append(TocEntry(path, target[0], target[1]))
            walk(point, path)

    nav_map = next(elements(root, "navmap"), None)
    if nav_map is not None:
        walk(nav_map, ())
    return entries
