"""The one rule for model-written text: nothing a common renderer turns into something.

A renderer here is any of those an answer reaches: a browser (HTML), a CommonMark or
GFM renderer with its autolinks, linkify-it (what markdown-it and many chat clients
use to linkify bare text) and a terminal that follows OSC 8 hyperlinks. Model-written
text may hold none of what one of them would turn into a link, an image, markup or a
heading. :func:`renderable_form` names the first such form found, or None:

* a link (``LINK``): a URL with a scheme (``https://``, ``javascript:``), with
  backslashes for slashes (``https:\\\\host``, as browsers read it), a ``www.`` host, a
  protocol-relative ``//host``, a bare host followed by a path, query, fragment or port
  (``evil.example/collect?d=…``: linkify-it's fuzzy links), a bare host under a common
  generic top-level domain (``collect.evil.com``), an e-mail address (GFM and
  linkify-it link ``name@host.tld``);
* markup (``MARKUP``): HTML as a tokenizer reads it (autolinks ``<http://…>`` are start
  tags to it), a character reference that decodes — with or without its ``;``
  (``&lt``, ``&#60``: browsers decode the legacy names and numbers without it) — a
  Markdown link, image or link reference definition (:mod:`citadel.domain.markup`),
  and a Markdown heading (``# …`` or a line underlined by ``===``/``---``).

Terminal escapes (ESC, so OSC 8; the C1 controls) and bidirectional controls are
characters no displayed text may hold: :func:`citadel.domain.text.forbidden_character`
refuses them before this rule is asked.

Ordinary technical prose stays text: ``e.g.``, ``x.y``, ``3.14``, ``3.11``,
``file.txt``, ``setup.py``, ``os.path.join``, ``docs/a.html``, ``C:\\Users``,
``a < b``, ``#include``, ``issue #26``, ``a && b``, ``&count;``. Two-letter top-level
domains are left out of the bare-host form on purpose: ``setup.py`` and ``main.rs``
are file names far more often than hosts (linkify-it would link them; they carry no
path to send data in).

Text the library itself holds — a passage, or a segment that quotes one verbatim — is
data and is not held to this rule; the interfaces that emit it to a renderer
neutralise it instead (``citadel.entrypoints.present.neutral``).
"""

from __future__ import annotations

import enum
import html.entities
import re

from citadel.domain.markup import contains_markup
from citadel.domain.text import contains_url


class Renderable(enum.StrEnum):
    LINK = "link"
    MARKUP = "markup"


# A host name: labels of letters, digits and inner hyphens (any script, as linkify-it
# reads them), then a top-level domain of letters (or an IDNA "xn--" label). Not inside
# a path, a word or an e-mail address (what comes before it is not a word character,
# ".", "@", "/", "\" or "-").
_HOST = r"(?<![\w.@/\\-])(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+(?:[^\W\d_]{2,63}|xn--[a-z0-9-]{1,59})"
# A host followed by what carries data to it: a path, a query, a fragment or a port.
_HOST_WITH_PATH = re.compile(_HOST + r"(?::\d{1,5})?[/?#]", re.I)
# Generic top-level domains linkify-it and chat clients link without a path (its default
# list, and the most registered ones). Not "name", "info" or "pro": ``os.name``.
_COMMON_TLDS = frozenset(
    "com net org edu gov mil biz xxx aero asia coop museum xyz online onion example"
    " invalid localhost рф".split()
)
_BARE_HOST = re.compile(_HOST + r"\b", re.I)
# An e-mail address: a local part, "@", a host with a top-level domain of letters.
_EMAIL = re.compile(
    r"[\w.!#$%&'*+=?^`{|}~-]+@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,63}\b", re.I
)
# A scheme followed by slashes at least one of which is a backslash ("https:\\host",
# "https:/\host"): browsers read "\" as "/" in a URL.
_BACKSLASH_SCHEME = re.compile(r"\b[a-z][a-z0-9+.\-]{1,31}:[/\\]*\\", re.I)
# A character reference a browser decodes without its ";": a number, or one of HTML's
# legacy names ("&lt", "&amp", "&copy"), as the prefix of what follows the "&".
_NUMERIC_WITHOUT_SEMICOLON = re.compile(r"&#(?:[0-9]|[xX][0-9a-fA-F])")
_LEGACY_NAMES = tuple(
    sorted((name for name in html.entities.html5 if not name.endswith(";")), key=len, reverse=True)
)
_AFTER_AMPERSAND = re.compile(r"&([A-Za-z][A-Za-z0-9]*)")
# A Markdown heading: an ATX "#" to "######" then a space or the line's end (up to three
# spaces before it), or a setext underline ("===" or "---") below a line of text.
# Either may sit inside block quotes and list items ("> # x", "- # x", "1. # x"):
# CommonMark renders <blockquote><h1> there too, so container markers come first.
_CONTAINERS = r"(?: {0,3}(?:>|[-+*]|\d{1,9}[.)])[ \t]*)*"
_ATX_HEADING = re.compile(r"^" + _CONTAINERS + r" {0,3}#{1,6}(?:[ \t]|$)", re.M)
_SETEXT_UNDERLINE = re.compile(
    r"^[^\S\n]*\S[^\n]*\n" + _CONTAINERS + r" {0,3}(?:=+|-+)[ \t]*$", re.M
)


def renderable_form(text: str) -> Renderable | None:
    """The kind of the first form in ``text`` a common renderer would turn into a link,
    an image, markup or a heading; None when every renderer shows it as text."""
    if contains_url(text) or _links(text):
        return Renderable.LINK
    if contains_markup(text) or _decodes_without_semicolon(text) or _heading(text):
        return Renderable.MARKUP
    return None


def _links(text: str) -> bool:
    if "\\" in text and _BACKSLASH_SCHEME.search(text):
        return True
    if "." not in text:
        return False
    if _HOST_WITH_PATH.search(text):
        return True
    if "@" in text and _EMAIL.search(text):
        return True
    return any(
        m.group(0).rsplit(".", 1)[1].lower() in _COMMON_TLDS for m in _BARE_HOST.finditer(text)
    )


def _decodes_without_semicolon(text: str) -> bool:
    if "&" not in text:
        return False
    if _NUMERIC_WITHOUT_SEMICOLON.search(text):
        return True
    return any(m.group(1).startswith(_LEGACY_NAMES) for m in _AFTER_AMPERSAND.finditer(text))


def _heading(text: str) -> bool:
    return bool(_ATX_HEADING.search(text)) or (
        ("=" in text or "-" in text) and _SETEXT_UNDERLINE.search(text) is not None
    )
