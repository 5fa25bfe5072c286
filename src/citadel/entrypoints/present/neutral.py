"""Library text as Markdown every renderer shows as text: the one neutraliser.

Text the library holds — a passage, a verbatim quotation of one, a title — is data:
a technical book prints URLs, e-mail addresses and HTML examples, and they must read
as the book prints them. Every interface that emits such text as Markdown, or to a
client that may render it (MCP's text content, the CLI's human output), passes it
through :func:`neutral_markdown`:

* characters no reader's screen should act on — controls (ESC, so OSC 8 hyperlinks;
  the C1 controls), format characters (bidi overrides, zero-width) and the Unicode
  line and paragraph separators — become U+FFFD;
* text in which a renderer could find anything — a form of
  :func:`citadel.domain.renderable.renderable_form`, a character Markdown acts on, a
  name linkify-it links on its own (``setup.py``: a two-letter top-level domain), a
  line a block parser reads as a list, quote, heading or code — is shown as code: a
  code span for one line, a fenced code block for several, each fenced by more
  backticks than the text holds in a row. Neither CommonMark, GFM's autolinks,
  linkify-it nor raw HTML is read inside code;
* any other text is returned as it is.

HTML pages escape instead (Jinja2's autoescape); JSON carries the text raw, as data.
"""

from __future__ import annotations

import re
import unicodedata

from citadel.domain.renderable import renderable_form

_UNSHOWN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
_REPLACEMENT = "\ufffd"
# Characters CommonMark, GFM or an HTML renderer act on somewhere.
_ACTIVE = re.compile(r"[\[\]<>&`\\*_~|!#@$^{}]")
# A name linkify-it links without a scheme: a host whose top-level domain is two
# letters or on its default list.
_FUZZY_HOST = re.compile(
    r"(?:[^\W_][\w-]*\.)+(?:[^\W\d_]{2}|biz|com|edu|gov|net|org|pro|web|xxx|aero|asia"
    r"|coop|info|museum|name|shop|рф)\b",
    re.I,
)
# A line a block parser reads as something: a list item, a block quote, an ordered
# item, a setext underline or thematic break, or indented code.
_BLOCK_START = re.compile(r"^(?: {4}|\t| {0,3}(?:[-+*>=]|\d{1,9}[.)]))", re.M)
_BACKTICKS = re.compile(r"`+")


def shown_characters(text: str) -> str:
    """``text`` with every character a screen could act on replaced by U+FFFD (a
    newline and a tab stay)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        _REPLACEMENT if ch not in "\n\t" and unicodedata.category(ch) in _UNSHOWN_CATEGORIES else ch
        for ch in text
    )


def needs_code(text: str) -> bool:
    """Whether some renderer could make anything but text of ``text``."""
    return bool(
        _ACTIVE.search(text)
        or _BLOCK_START.search(text)
        or _FUZZY_HOST.search(text)
        or renderable_form(text) is not None
    )


def neutral_markdown(text: str) -> str:
    """``text`` as Markdown that every renderer shows as exactly ``text`` (see above)."""
    text = shown_characters(text)
    if not needs_code(text):
        return text
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    if "\n" in text.strip("\n"):
        fence = "`" * max(3, longest + 1)
        return f"{fence}text\n{text.strip(chr(10))}\n{fence}"
    fence = "`" * (longest + 1)
    # One space inside each end: CommonMark strips exactly one from both, so a text
    # that starts or ends with a backtick or a space stays as it is.
    return f"{fence} {text.strip(chr(10))} {fence}"


def neutral_inline(text: str) -> str:
    """``neutral_markdown`` for text set inside a line (a query, a title, a heading, an
    attribution): its line breaks become spaces first, so it is always one code span
    at most and never opens a fenced block in the middle of a line, after which the
    rest of the text would render as Markdown."""
    return neutral_markdown(" ".join(text.split()))
