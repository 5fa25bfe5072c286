"""Markup a displayed answer may not contain: the one definition validation applies.

Each rule is there for what it protects. HTML markup as an HTML tokenizer reads it (a
browser would build an element); a character reference that would decode to something
(a real HTML5 named reference or a numeric one: a page that decodes text twice would
show something else than was checked); and the Markdown forms of a link or an image that
clients rendering Markdown (agent clients over MCP) would follow or load. Text that
only looks like these — ``sort < input > output``, ``int *p = &count;``, ``a[i][j]``,
``d[key](args)`` — is text to every renderer and passes. URLs, controls and the other
text rules live in :mod:`citadel.domain.text`.
"""

from __future__ import annotations

import html
import html.entities
import html.parser
import re
import string

# A character reference as an HTML tokenizer decodes it when it ends in ";": numeric
# ("&#60;", "&#x3C;") always, named only when the name is one of HTML5's ("&lt;",
# "&amp;", "&frac12;", "&NotEqualTilde;"); "&count;" is shown as it is written.
_NUMERIC_REFERENCE = re.compile(r"&#(?:[0-9]+|[xX][0-9a-fA-F]+);")
_NAMED_REFERENCE = re.compile(r"&([A-Za-z][A-Za-z0-9]*;)")
_HTML5_NAMES = frozenset(html.entities.html5)

# Markdown. An inline link or image closes its text with "](" (some renderers allow
# space between); what follows is the destination, up to space or an unbalanced ")".
_INLINE_OPEN = re.compile(r"\]\s*\(\s*")
_ANGLE_DESTINATION = re.compile(r"<[^<>\n]*>")
# A destination longer than this is not read to its end: it counts as URL-like. (It
# keeps the check linear; a segment is at most 1 KiB anyway.)
_MAX_DESTINATION = 1024
# A link reference definition: "[label]: destination" at the start of a line, or after
# a block quote's ">" or a list item's marker (the label may span lines, the destination
# may be on the next one; as in CommonMark, at most 999 characters). Without one,
# "[a][b]" and "[a]" are text: only a definition makes a reference link.
_LINK_DEFINITION = re.compile(
    r"^(?:[ \t>*+\-]|\d{1,9}[.)])*"
    r"\[\s{0,999}(?:\\[\s\S]|[^\s\]\\])(?:\\[\s\S]|[^\]\\]){0,998}\]:\s*\S",
    re.M,
)
# A destination that looks like a URL or a path: a scheme ("x:" and more; "x:" alone,
# as in Python's "def f[T](x: T)", goes nowhere), or one that starts with "/" (so
# "//host" too), "./", "../", "#" or "www.", or one holding both "." and "/"
# ("docs/a.html"), an "@", or a name ending in a dot and two letters or more
# ("notes.html", "evil.example": relative to the page, or a host to a client that
# guesses; "d[k](a.b)" stays code). A backslash counts as "/", as browsers read it.
_URL_LIKE_DESTINATION = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S|/|\.\.?/|#|www\.", re.I)
_NAME_WITH_EXTENSION = re.compile(r"\.[^\W\d_]{2,}$")
# Markdown's backslash escapes: "\/" is "/" to a renderer.
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")

# What may follow "<" for the HTML tokenizer to leave text and start markup: a letter (a
# start tag), "/" (an end tag or a bogus comment), "!" (a comment, a declaration, CDATA) or
# "?" (a processing instruction, a bogus comment to browsers). Only ASCII letters count.
_TAG_OPENERS = frozenset(string.ascii_letters + "/!?")


def contains_markup(text: str) -> bool:
    """The one definition of markup a displayed answer may not contain.

    HTML markup as an HTML tokenizer reads it (:func:`contains_html_markup`), a
    character reference that decodes (:func:`contains_character_reference`) and the
    Markdown forms of a link or an image (:func:`contains_markdown_link`).
    """
    return (
        contains_html_markup(text)
        or contains_character_reference(text)
        or contains_markdown_link(text)
    )


def contains_character_reference(text: str) -> bool:
    """True for "&#60;", "&#x3c;" and "&name;" where ``name`` is an HTML5 named reference.

    ``&count;`` (C's address-of before a semicolon) is not one: a browser shows it as
    written, so it passes. Forms without the ";" are not refused (as before).
    """
    if "&" not in text:
        return False
    if _NUMERIC_REFERENCE.search(text):
        return True
    return any(m.group(1) in _HTML5_NAMES for m in _NAMED_REFERENCE.finditer(text))


def contains_markdown_link(text: str) -> bool:
    """True for a Markdown link or image a renderer would follow or load.

    * an inline link ``[text](target)`` whose target looks like a URL or a path (a
      scheme, a leading "/", "./", "../", "#" or "www.", both "." and "/", an "@",
      or a name ending in ".html"-like two letters or more), read
      after Markdown's backslash escapes and character references;
    * any inline image ``![alt](src)``: an image is fetched without a click;
    * any link reference definition ``[label]: target``, which is what turns
      ``[text][label]`` or ``[label]`` into a link.

    ``a[i][j]``, ``d[key](args)``, ``f(x)[0]`` and ``m[i](x, y)`` are text. Autolinks
    (``<http://x>``) are HTML start tags to :func:`contains_html_markup`.
    """
    if "]" not in text:
        return False
    if _LINK_DEFINITION.search(text):
        return True
    image = text.find("![")
    for opening in _INLINE_OPEN.finditer(text):
        if image != -1 and image < opening.start():
            return True
        if _looks_like_url(_destination(text, opening.end())):
            return True
    return False


def _destination(text: str, start: int) -> str | None:
    """The link destination starting at ``start``, decoded as a Markdown renderer would.

    None when it runs longer than ``_MAX_DESTINATION`` (then it counts as URL-like).
    """
    angle = _ANGLE_DESTINATION.match(text, start)
    if angle is not None:
        raw = angle.group(0)[1:-1]
    else:
        depth = 0
        end = start
        limit = min(len(text), start + _MAX_DESTINATION)
        while end < limit:
            char = text[end]
            if char.isspace() or (char == ")" and depth == 0):
                break
            if char == "\\":  # an escaped character never closes the destination
                end += 2
                continue
            depth += char == "("
            depth -= char == ")"
            end += 1
        if end >= start + _MAX_DESTINATION:
            return None
        raw = text[start:end]
    return html.unescape(_MARKDOWN_ESCAPE.sub(r"\1", raw)).replace("\\", "/").strip()


def _looks_like_url(destination: str | None) -> bool:
    if destination is None:
        return True
    return (
        _URL_LIKE_DESTINATION.match(destination) is not None
        or ("." in destination and "/" in destination)
        or "@" in destination
        or _NAME_WITH_EXTENSION.search(destination) is not None
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
    cannot parse (it raises on ``<![x[``). ``a < b``, ``x <- c(1, 2)``, ``i<10``,
    ``sort < input > output`` and ``< script>`` are text to it, as to a browser.

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
