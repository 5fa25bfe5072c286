"""A PDF's outline (bookmarks, else one found in its text) and its printed page labels."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_SPACE = re.compile(r"[\s\x00-\x1f\x7f]+")


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    depth: int
    title: str
    page: int  # 0-based physical index


def page_labels(reader: object, total: int) -> list[str]:
    """Each page's printed label from ``/PageLabels``; physical numbers when it is missing."""
    try:
        labels = list(reader.page_labels)  # type: ignore[attr-defined]
    except Exception:
        labels = []
    if len(labels) != total:
        labels = [str(i + 1) for i in range(total)]
    return labels


def read_outline(reader: object) -> list[OutlineEntry]:
    """The bookmarks that point at a page, depth first; none when the outline is unreadable."""
    entries: list[OutlineEntry] = []

    def walk(items: object, depth: int) -> None:
        for item in items:  # type: ignore[attr-defined]
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)  # type: ignore[attr-defined]
            except Exception:
                continue
            title = _SPACE.sub(" ", str(getattr(item, "title", "") or "")).strip()
            if title and page is not None and page >= 0:
                entries.append(OutlineEntry(depth, title, int(page)))

    try:
        walk(reader.outline, 0)  # type: ignore[attr-defined]
    except Exception:
        return []
    return entries


_TOC_LINE = re.compile(
    r"^\s*((?:\d+|[A-Z])(?:\.\d+)*)\.?\s+(\S.*?)\s*(?:\.\s*){3,}\s*(\d+|[ivxlc]+)\s*$", re.I
)
_NUMBERED_HEADING = re.compile(r"^\s*(\d+(?:\.\d+){0,3})\.?\s+([A-Z][^\n]{2,80}?)\s*$")


def outline_from_text(texts: Sequence[str], labels: Sequence[str]) -> list[OutlineEntry]:
    """An outline for a PDF without bookmarks, from its own text.

    First choice: a printed table of contents (numbered entries with dotted
    leaders and page labels), mapped to physical pages through the labels.
    Otherwise: numbered heading lines ("2.3 Vectors") whose numbers follow on
    from the previous heading, which rules out numbered list items and
    equations. No font information is used.
    """
    by_label: dict[str, int] = {}
    for index, label in enumerate(labels):
        by_label.setdefault(label.lower(), index)
    toc: list[OutlineEntry] = []
    for page, text in enumerate(texts[:20]):
        found = [m for m in map(_TOC_LINE.match, text.splitlines()) if m is not None]
        if len(found) < 3:
            continue
        for match in found:
            number, title, label = match.groups()
            target = by_label.get(label.lower())
            if target is not None and target > page:
                toc.append(OutlineEntry(number.count("."), f"{number}. {title}", target))
    if len(toc) >= 3:
        return toc
    headings: list[OutlineEntry] = []
    previous: tuple[int, ...] = ()
    for page, text in enumerate(texts):
        for line in text.splitlines():
            heading = _NUMBERED_HEADING.match(line)
            if heading is None:
                continue
            number = tuple(int(part) for part in heading.group(1).split("."))
            if _follows(previous, number):
                headings.append(OutlineEntry(len(number) - 1, line.strip(), page))
                previous = number
    return headings if len(headings) >= 2 else []


def _follows(previous: tuple[int, ...], number: tuple[int, ...]) -> bool:
    """True when ``number`` can be the next heading after ``previous`` (1 → 1.1, 1.2 → 2)."""
    if not previous:
        return number in {(1,), (1, 1)}
    if len(number) == len(previous) + 1:
        return number[:-1] == previous and number[-1] == 1
    if len(number) <= len(previous):
        head = previous[: len(number)]
        return number[:-1] == head[:-1] and number[-1] == head[-1] + 1
    return False
