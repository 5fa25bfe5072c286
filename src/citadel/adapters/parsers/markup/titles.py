"""Heading titles: cleaned of permalink marks, matched loosely, front and back matter told apart."""

from __future__ import annotations

import re

_WS = re.compile(r"\s+")
_SKIP_TITLE = re.compile(
    r"^(?:[\dIVXLC]+\.\s*)?(?:(?:table\s+of\s+)?contents|(?:general\s+|subject\s+)?index"
    r"|list\s+of\s+(?:figures|tables|illustrations|listings|examples|equations|algorithms)"
    r"|title\s*page|half[\s-]?title(?:\s+page)?|copyright(?:\s+page|\s+notice)?"
    r"|legal\s+notice|colophon|cover)$",
    re.I,
)
_TITLE_MARKS = re.compile(r"^[\s¶#›§]+|[\s¶#›§]+$")  # permalink marks around headings


def is_skip_title(title: str) -> bool:
    """True for titles of front and back matter that is not indexed (contents, index, ...)."""
    return bool(_SKIP_TITLE.match(title.strip()))


def title_key(title: str) -> str:
    """A title reduced to lowercase letters and digits, for matching toc labels to headings."""
    return "".join(ch for ch in title.lower() if ch.isalnum())


def clean_title(text: str) -> str:
    return _TITLE_MARKS.sub("", _WS.sub(" ", text))
