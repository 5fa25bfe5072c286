"""Element names and ``epub:type`` tokens, whether lxml parsed the markup as XML or HTML."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

Element = Any  # an lxml element; lxml ships no type hints

EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
SKIP_EPUB_TYPES = frozenset(
    "toc landmarks page-list loi lot titlepage halftitlepage copyright-page index cover "
    "imprint colophon".split()
)


@lru_cache(maxsize=512)
def local_name(tag: str) -> str:
    if tag.startswith("{"):
        tag = tag.split("}", 1)[1]
    return tag.rsplit(":", 1)[-1].lower()


def type_tokens(el: Element) -> frozenset[str]:
    """The ``epub:type`` tokens of an element, from XML or from HTML parsing."""
    value = el.get(EPUB_TYPE) or el.get("epub:type")
    return frozenset(str(value).split()) if value else frozenset()
