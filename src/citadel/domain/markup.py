"""Markup a displayed answer may not contain: the one definition validation applies.

HTML markup as an HTML tokenizer reads it, a tag spelled with space after its "<", a
character reference and the Markdown forms of a link or an image. URLs, controls and
the other text rules live in :mod:`citadel.domain.text`.
"""

from __future__ import annotations

import html.parser
import re
import string

# Markdown that a renderer would turn into a link or an image. (Autolinks, "<foo:bar>",
# are HTML start tags to the tokenizer below, so they need no rule of their own.)
_MARKDOWN_LINK = re.compile(r"!?\[[^\]\n]*\]\s*[(\[]|^\s*\[[^\]\n]+\]:\s*\S", re.M)
# A tag written with space after its "<" ("< img src=x onerror=y>", "< /b>", "< script>"). No
# HTML tokenizer reads that as a tag, but it is one whitespace clean-up away from being one
# and citadel always refused it, so it stays refused. A comparison has no "=" straight
# after its second word: "a < b and c > d" is not caught.
_SPACED_TAG = re.compile(r"<\s+/?\s*[a-z][^\s/<>]*(?:\s*/?>|\s+[a-z-]+\s*=)", re.I)
_CHARACTER_REFERENCE = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z]{2,8});", re.I)
# What may follow "<" for the HTML tokenizer to leave text and start markup: a letter (a
# start tag), "/" (an end tag or a bogus comment), "!" (a comment, a declaration, CDATA) or
# "?" (a processing instruction, a bogus comment to browsers). Only ASCII letters count.
_TAG_OPENERS = frozenset(string.ascii_letters + "/!?")


def contains_markup(text: str) -> bool:
    """The one definition of markup a displayed answer may not contain.

    HTML markup as an HTML tokenizer reads it (:func:`contains_html_markup`), a tag
    spelled with space after its "<", a character reference ("&lt;", "&#60;") and the
    Markdown forms of a link or an image.
    """
    return (
        contains_html_markup(text)
        or _SPACED_TAG.search(text) is not None
        or _CHARACTER_REFERENCE.search(text) is not None
        or _MARKDOWN_LINK.search(text) is not None
    )


def contains_html_markup(text: str) -> bool:
    """True when the standard library's HTML tokenizer finds markup in ``text``.

    Markup is anything :class:`html.parser.HTMLParser` reports as a start tag, an end
    tag, a self-closing tag, a comment, a declaration, a processing instruction or a
    marked section — whatever its name: ``<Thread(worker 1, started 123)>`` is a start
    tag, as ``<ScRiPt>``, ``<svg/onload=x>`` and ``<img src=x onerror=y>`` are.

    Where that tokenizer is more lenient than a browser it is read conservatively: a
    construct it leaves unparsed is markup when it begins with "<" and a letter, "/",
    "!" or "?" — an unterminated ``<a href=x`` or ``<!--`` at the end (which would
    swallow whatever a page puts after the text), a start tag it gives back as text,
    ``</>`` (which it drops without a report), and anything its declaration scanner
    cannot parse (it raises on ``<![x[``). ``a < b``, ``x <- c(1, 2)``, ``i<10`` and
    ``< script>`` are text to it (the last is refused by another rule).

    Linear in the length of ``text``: it stops at the first piece of markup.
    """
    if "<" not in text:
        return False
    scanner = _MarkupScanner(text)
    try:
        scanner.feed(text)
        # What feed() could not finish is an unterminated construct at the end.
        if _opens_markup(scanner.rawdata, 0):
            return True
        scanner.close()
    except _MarkupFound:
        return True
    except Exception:  # what the tokenizer cannot parse is not plain text
        return True
    return "</>" in text


class _MarkupFound(Exception):
    """Raised by the scanner at the first piece of markup, to stop the tokenizer there."""


def _opens_markup(text: str, index: int) -> bool:
    return text[index : index + 1] == "<" and text[index + 1 : index + 2] in _TAG_OPENERS


class _MarkupScanner(html.parser.HTMLParser):
    def __init__(self, text: str) -> None:
        # Character references stay inside the text (the tokenizer's own handling of
        # "&#" without convert_charrefs can give up and pass the rest off as text).
        super().__init__(convert_charrefs=True)
        self._text = text
        self._line_starts: list[int] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise _MarkupFound

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise _MarkupFound

    def handle_endtag(self, tag: str) -> None:
        raise _MarkupFound

    def handle_comment(self, data: str) -> None:
        raise _MarkupFound

    def handle_decl(self, decl: str) -> None:
        raise _MarkupFound

    def handle_pi(self, data: str) -> None:
        raise _MarkupFound

    def unknown_decl(self, data: str) -> None:
        raise _MarkupFound

    def handle_data(self, data: str) -> None:
        # Text the tokenizer gave up on parsing comes back as data that starts at a raw
        # "<" + opener ("<a"b>"); a "<" decoded from "&lt" does not count.
        if data[:1] == "<" and _opens_markup(self._text, self._offset()):
            raise _MarkupFound

    def _offset(self) -> int:
        """Where in the text the piece being handled starts (getpos() is line, column)."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self._text))]
        line, column = self.getpos()
        return self._line_starts[line - 1] + column
