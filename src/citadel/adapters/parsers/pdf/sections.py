"""Page texts split at outline headings into section blocks; front and back matter left out.

Every page's text is split at the outline headings that land on it (found by their
titles in the page text), so a section that starts mid-page gets the text after its
heading, and the text before it stays with the previous one. Pages before the first
outline entry, pages under contents/index/list entries, and pages that read like an
index or contents are not indexed. Running heads and feet that carry the page's label
are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from citadel.adapters.parsers.pdf.outline import OutlineEntry
from citadel.domain.document import Block

_SKIP_TITLES = re.compile(
    r"^\s*(?:[A-Z]|\d+|[IVX]+)?[.:]?\s*(?:"
    r"(?:table of )?contents"
    r"|(?:general |subject |function and variable |concept |author |name )?index"
    r"|list of (?:figures|tables|listings|algorithms)"
    r"|title page|copyright"
    r")\s*$",
    re.I,
)
# An index or contents page: most lines end in page numbers ("surface, 174, 181").
# Used with ``match`` on one line: anchored at the line's first non-space, the
# lazy ``.*?`` is tried once per position instead of once per start position,
# which made an unanchored ``search`` quadratic in the line length (~2 s on an
# 800-page book); for a single line the two accept exactly the same lines.
_PAGE_REFERENCE_LINE = re.compile(
    r"\s*\S.*?(?:,|(?:\s*\.){2,}|\s{2,})\s*(?:\d+|[ivxlc]+)(?:[–-]\d+)?(?:,\s*\d+(?:[–-]\d+)?)*\s*$",
    re.I,
)


def strip_running_lines(text: str, label: str) -> str:
    """Drop a running head or foot: a short first/last line that carries the page's label."""
    lines = text.split("\n")
    token = re.escape(label)
    running = re.compile(rf"^\s*(?:{token}\b.{{0,80}}|.{{0,80}}\b{token})\s*$")
    if lines and len(lines[0]) <= 90 and running.match(lines[0]):
        lines = lines[1:]
    if lines and len(lines[-1]) <= 90 and running.match(lines[-1]):
        lines = lines[:-1]
    return "\n".join(lines).strip()


def index_like(text: str, after_index: bool = False) -> bool:
    """An index or contents page; a short page right after one (its tail) counts too."""
    lines = [line for line in text.splitlines() if line.strip()]
    hits = sum(1 for line in lines if _PAGE_REFERENCE_LINE.match(line))
    if len(lines) >= 12:
        return hits / len(lines) >= 0.6
    if after_index:
        return len(" ".join(lines).split()) <= 4 or hits / max(len(lines), 1) >= 0.5
    return False


def _find_heading(text: str, title: str, after: int) -> int | None:
    """Where ``title`` starts in ``text`` at or after ``after``, whitespace-insensitively."""
    words = [re.escape(w) for w in title.split()]
    if not words:
        return None
    pattern = re.compile(r"\s*".join(words), re.I)
    match = pattern.search(text, after)
    if (
        match is None
        and len(words) > 1
        and re.fullmatch(r"[\dIVXLC.]+", title.split(maxsplit=1)[0])
    ):
        # Outline titles carry numbers the page may render apart ("1 Introduction").
        match = re.compile(r"\s*".join(words[1:]), re.I).search(text, after)
    return match.start() if match else None


def section_blocks(
    texts: Sequence[str], labels: Sequence[str], outline: Sequence[OutlineEntry]
) -> tuple[list[Block], list[int]]:
    """The blocks of every indexed page, and the 1-based numbers of the pages left out."""
    by_page: dict[int, list[OutlineEntry]] = {}
    for entry in outline:
        by_page.setdefault(entry.page, []).append(entry)
    first_page = min((e.page for e in outline), default=0)
    stack: list[OutlineEntry] = []
    blocks: list[Block] = []
    skipped: list[int] = []

    def path() -> tuple[str, ...]:
        return tuple(e.title for e in stack)

    def emit(text: str, page: int) -> None:
        text = text.strip()
        if not text:
            return
        if outline and (page < first_page or any(_SKIP_TITLES.match(e.title) for e in stack)):
            return
        blocks.append(Block(text=text, section_path=path(), page=page + 1, page_label=labels[page]))

    previous_index = False
    for page, text in enumerate(texts):
        cursor = 0
        previous_index = index_like(text, previous_index)
        if previous_index:
            skipped.append(page + 1)
            for entry in by_page.get(page, []):
                while stack and stack[-1].depth >= entry.depth:
                    stack.pop()
                stack.append(entry)
            continue
        for entry in by_page.get(page, []):
            found = _find_heading(text, entry.title, cursor)
            # Text before the book's first heading has no section; it joins that heading.
            if found is not None and found > cursor and stack:
                emit(text[cursor:found], page)
                cursor = found
            while stack and stack[-1].depth >= entry.depth:
                stack.pop()
            stack.append(entry)
        emit(text[cursor:], page)
        if outline and (page < first_page or any(_SKIP_TITLES.match(e.title) for e in stack)):
            skipped.append(page + 1)
    return blocks, skipped
