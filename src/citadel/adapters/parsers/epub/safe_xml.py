"""XML read without entity expansion, DTD loading or network access; elements by local name.

lxml keeps entity references in text unexpanded when ``resolve_entities`` is off, but
it still expands the internal subset's entities inside attribute values (an entity
bomb gets there up to libxml2's amplification limit). So a document whose internal
subset declares any entity is not read as XML: a content document falls back to the
HTML parser, which knows no declared entities; anything else is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from citadel.adapters.parsers.html.document import parse_html_bytes
from citadel.adapters.parsers.markup.names import Element, local_name
from citadel.adapters.parsers.markup.titles import clean_title
from citadel.app.errors import ParseError

_QUOTED = rb"\"[^\"]*+\"|'[^']*+'"
_INTERNAL_SUBSET = re.compile(
    rb"\A((?:\xef\xbb\xbf)?(?:\s|<\?[^>]*+>|<!--(?:[^-]|-(?!->))*+-->)*+)"
    rb"<!DOCTYPE(?:[^\[>\"']|" + _QUOTED + rb")*+\[(?:[^\]\"']|" + _QUOTED + rb")*+\]\s*>",
    re.I,
)
"""A DOCTYPE with an internal subset in the prolog (group 1 is what precedes it); a
quoted ``>`` or ``]`` (a system id, an entity's value) does not end it. Anchored, and
possessive so that a failed match costs one pass, never a backtrack."""


def parse_xml(data: bytes, what: str) -> Element:
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
    subset = root.getroottree().docinfo.internalDTD
    if subset is not None and next(subset.iterentities(), None) is not None:
        raise ParseError("corrupt", f"{what} declares entities in its DOCTYPE")
    return root


def parse_content(data: bytes, what: str) -> Element | None:
    """An XHTML content document; tag soup that is not XML falls back to the HTML parser."""
    if not data.strip():
        return None
    try:
        return parse_xml(data, what)
    except ParseError:
        # The HTML parser knows no internal DTD subset; it would show up as text.
        return parse_html_bytes(_INTERNAL_SUBSET.sub(rb"\1", data, count=1))


def elements(root: Element, name: str) -> Iterator[Element]:
    for el in root.iter():
        if isinstance(el.tag, str) and local_name(el.tag) == name:
            yield el


def children(el: Element, name: str) -> Iterator[Element]:
    for child in el:
        if isinstance(child.tag, str) and local_name(child.tag) == name:
            yield child


def first_child(el: Element, name: str) -> Element | None:
    return next(children(el, name), None)


def element_text(el: Element) -> str:
    return clean_title("".join(t for t in el.itertext() if isinstance(t, str)))


def attribute(el: Element, name: str) -> str:
    """An attribute by local name, whatever its namespace (``opf:role`` or ``role``)."""
    for key, value in el.attrib.items():
        if local_name(str(key)) == name:
            return str(value)
    return ""
