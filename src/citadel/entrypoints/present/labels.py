"""How a citation is labelled for a reader: the chapter, the pages, the footnote.

Shared by the terminal (``citadel ask``) and the web UI, so both say it alike.
"""

from __future__ import annotations

import re

from citadel.domain.answer import Citation

# "7 Reading data", "Chapter 5. Data Definition", "B Invoking R" — but not "A sample session".
_NUMBERED = re.compile(
    r"^(?:[Cc]hapter\s+|[Aa]ppendix\s+)?(\d+(?:\.\d+)*|[A-Z](?:\.\d+)*(?=[.:]?\s+[A-Z0-9]))"
    r"[.:]?\s+(.+)$"
)


def chapter_label(chapter: str) -> str:
    """``7 Reading data from files`` → ``ch. 7 "Reading data from files"``."""
    if not chapter:
        return ""
    match = _NUMBERED.match(chapter)
    if match:
        return f'ch. {match.group(1)} "{match.group(2)}"'
    return f'"{chapter}"'


def page_count_or_none(count: int) -> int | None:
    """A version's page count as the JSON shapes carry it: null for a format without
    pages (Markdown, plain text: its parser records 0), never a count of 0."""
    return count or None


def page_count_text(count: int) -> str:
    """``"312 pages, "`` for a paged format; nothing where there are no pages, so a
    Markdown source never reports "0 pages"."""
    if not count:
        return ""
    return f"{count} page{'' if count == 1 else 's'}, "


def pages_label(pages: str) -> str:
    if not pages:
        return ""
    return f"pp. {pages}" if "–" in pages else f"p. {pages}"


def footnote(number: int, citation: Citation) -> str:
    """``[1] An Introduction to R, ch. 7 "Reading data from files", § ..., p. 32``."""
    parts = [citation.title]
    if citation.chapter:
        parts.append(chapter_label(citation.chapter))
    if citation.section and citation.section != citation.chapter:
        parts.append(f'§ "{citation.section}"')
    if citation.pages:
        parts.append(pages_label(citation.pages))
    return f"[{number}] " + ", ".join(parts)


def support_mark(citation: Citation) -> str:
    """The support label shown beside a footnote mark (``verbatim``, ``unsupported``…);
    empty where no check ran."""
    return citation.support.label.value if citation.support is not None else ""


LIMITED_NOTE = "Limited answer: segments the cited passages did not support were removed."

NOT_IN_LIBRARY_NOTE = (
    "The library does not seem to answer this question. The passages shown are the closest"
    " ones found, not an answer."
)
"""Said wherever a ``not_in_library`` result is shown: the passages are not an answer."""


_UNITS = ("KiB", "MiB", "GiB", "TiB")


def human_bytes(size: int) -> str:
    """``536870912`` → ``512 MiB``, ``1536`` → ``1.5 KiB``, ``900`` → ``900 bytes``."""
    if size < 1024:
        return f"{size} byte" if size == 1 else f"{size} bytes"
    value = size / 1024
    power = 0
    while value >= 1024 and power < len(_UNITS) - 1:
        value /= 1024
        power += 1
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text} {_UNITS[power]}"
