"""One HTML document read from bytes: its charset, its lxml tree, its metadata, its content root."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from lxml import etree
from lxml import html as lxml_html

from citadel.adapters.parsers.markup.names import Element
from citadel.adapters.parsers.markup.titles import clean_title
from citadel.app.errors import ParseError

_WS = re.compile(r"\s+")
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


def _meta_values(doc: Element, *names: str) -> list[str]:
    wanted = {n.lower() for n in names}
    values: list[str] = []
    for meta in doc.iter("meta"):
        key = (meta.get("name") or meta.get("property") or "").lower()
        content = meta.get("content")
        if key in wanted and content and content.strip():
            values.append(_WS.sub(" ", str(content)).strip())
    return values


def content_root(doc: Element) -> Element:
    for candidate in doc.iter("main"):
        return candidate
    for candidate in doc.xpath("//*[@role='main']"):
        return candidate
    body = doc.find("body")
    return doc if body is None else body


@dataclass(frozen=True, slots=True)
class DocumentMeta:
    title: str
    authors: tuple[str, ...]
    year: int | None
    tags: tuple[str, ...]


def document_meta(doc: Element, fallback: str) -> DocumentMeta:
    title_el = doc.find(".//title")
    title_text = clean_title(title_el.text_content()) if title_el is not None else ""
    titles = _meta_values(doc, "dc.title", "dcterms.title", "citation_title", "og:title")
    authors = _meta_values(doc, "author", "dc.creator", "citation_author")
    keywords = [k.strip() for v in _meta_values(doc, "keywords") for k in re.split(r"[,;]", v)]
    year = None
    for value in _meta_values(
        doc, "date", "dc.date", "dcterms.date", "citation_publication_date", "citation_date"
    ):
        match = re.search(r"\b(1\d{3}|2\d{3})\b", value)
        if match:
            year = int(match.group(1))
            break
    return DocumentMeta(
        title=(titles[0] if titles else "") or title_text or fallback,
        authors=tuple(dict.fromkeys(authors)),
        year=year,
        tags=tuple(dict.fromkeys(k for k in keywords if k)),
    )
