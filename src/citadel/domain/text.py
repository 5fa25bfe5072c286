"""Text rules shared by selection, validation and the extractive generator."""

from __future__ import annotations

import functools
import html.parser
import re
import string
import unicodedata

_WHITESPACE = re.compile(r"\s+")

# Categories a displayed answer may never contain: controls (newline aside),
# format characters (bidi overrides, zero-width, BOM, ...), surrogates,
# private use, unassigned code points and noncharacters (U+FFFE, U+FFFF), and
# the Unicode line/paragraph separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

# Anything a renderer could turn into a link: a scheme, a "www." host, or a
# scheme-less protocol-relative URL.
_URL = re.compile(
    r"(?i)(?:\b[a-z][a-z0-9+.\-]{1,31}:/{1,3}\S|\bwww\d{0,3}\.\S|(?<![\w/])//[a-z0-9]"
    r"|\b(?:javascript|vbscript|data|mailto|file|blob)\s*:)"
)
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


def normalise_passage(text: str) -> str:
    """The form two passages are compared in when removing duplicates."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8; lone surrogates count as the 3 bytes they would take."""
    return len(text.encode("utf-8", "surrogatepass"))


def is_valid_utf8(text: str) -> bool:
    """False when the string holds lone surrogates, which UTF-8 cannot encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def forbidden_character(text: str) -> str | None:
    """The first control or format character in ``text`` (newline allowed), if any."""
    for char in text:
        if char == "\n":
            continue
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            return char
    return None


def contains_url(text: str) -> bool:
    return _URL.search(text) is not None


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


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    {
        "e.g.",
        "i.e.",
        "etc.",
        "vs.",
        "cf.",
        "fig.",
        "figs.",
        "eq.",
        "eqs.",
        "no.",
        "vol.",
        "ch.",
        "sec.",
        "p.",
        "pp.",
        "dr.",
        "mr.",
        "ms.",
        "al.",
        "approx.",
        "resp.",
        "ref.",
        "refs.",
    }
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text``; a cheap rule-based splitter.

    It avoids breaking after common abbreviations and single initials, which
    are frequent in technical prose ("e.g.", "Fig. 3", "J. Smith"), and it
    ends a sentence at a short line without closing punctuation — a heading,
    a caption or a line of code — so those never glue onto the next sentence.
    """
    spans: list[tuple[int, int]] = []
    for run_start, run_end in _standalone_runs(text):
        run = text[run_start:run_end]
        spans.extend((run_start + s, run_start + e) for s, e in _prose_sentences(run))
    return spans


_SHORT_LINE = 60


def _standalone_runs(text: str) -> list[tuple[int, int]]:
    """Cut ``text`` after every short line that does not end in sentence punctuation."""
    runs: list[tuple[int, int]] = []
    start = 0
    position = 0
    for line in text.splitlines(keepends=True):
        end = position + len(line)
        body = line.strip()
        if body and len(body) <= _SHORT_LINE and body[-1] not in ".,;:!?" and end < len(text):
            runs.append((start, end))
            start = end
        position = end
    if start < len(text):
        runs.append((start, len(text)))
    return runs


def _prose_sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.start()
        last_word = (
            text[start:end].rsplit(None, 1)[-1].casefold() if text[start:end].strip() else ""
        )
        if last_word in _ABBREVIATIONS or (len(last_word) == 2 and last_word[0].isalpha()):
            continue
        if text[start:end].strip():
            spans.append((start, end))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens: letters and digits only, never query syntax."""
    return [w.casefold() for w in _WORD.findall(text)]


def terms(text: str) -> list[str]:
    """Lower-cased word tokens without stop words, lightly stemmed."""
    return [
        stem(w) for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if w not in STOPWORDS
    ]


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A deliberately small suffix stripper: enough to match plurals and -ing/-ed forms."""
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    if word.endswith(("ches", "shes", "xes", "zes")) and len(word) >= 5:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word
