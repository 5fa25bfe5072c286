"""Text rules shared by selection, validation and the extractive generator.

Words, stems and sentences; sizes and forbidden characters. What counts as markup
is :mod:`citadel.domain.markup`.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Categories a displayed answer may never contain: controls (newline aside),
# format characters (bidi overrides, zero-width, BOM, ...), surrogates,
# private use, unassigned code points and noncharacters (U+FFFE, U+FFFF), and
# the Unicode line/paragraph separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# The ASCII characters among them (all Cc): C0 controls but the newline, and DEL.
_ASCII_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f]")

# Anything a renderer could turn into a link: a scheme, a "www." host, or a
# scheme-less protocol-relative URL.
_URL = re.compile(
    r"(?i)(?:\b[a-z][a-z0-9+.\-]{1,31}:/{1,3}\S|\bwww\d{0,3}\.\S|(?<![\w/])//[a-z0-9]"
    r"|\b(?:javascript|vbscript|data|mailto|file|blob)\s*:)"
)


_LINE_ENDS = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_UNDRAWN = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")


def strip_controls(text: str) -> str:
    """``text`` without the control characters no font draws (they show as empty
    boxes): line and paragraph separators of every kind (CR, vertical tab, form
    feed, U+2028, ...) become a newline, the other C0 and C1 controls and DEL go;
    newline and tab stay. Format characters stay: a zero-width non-joiner is
    spelling in Persian."""
    return _UNDRAWN.sub("", _LINE_ENDS.sub("\n", text))


def normalise_passage(text: str) -> str:
    """The form two passages are compared in when removing duplicates."""
    # Whitespace runs as one space, none at the ends (str.split's whitespace is the
    # regex's \s: the same as a substitution, without one per run).
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


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
    if text.isascii():  # of ASCII, only the controls are forbidden: one regex pass
        found = _ASCII_CONTROL.search(text)
        return found.group() if found is not None else None
    for char in text:
        if char == "\n":
            continue
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            return char
    return None


def contains_url(text: str) -> bool:
    # Each form of _URL holds a ":", a "//" or a "www" (in any case; only "W" and "w"
    # match "w" ignoring case): text with none of them skips the costlier regex.
    if ":" not in text and "//" not in text and "www" not in text.lower():
        return False
    return _URL.search(text) is not None


# A sentence stop: ".", "!" or "?", closing quotes or brackets, whitespace, and what
# may open the next sentence. (Starting at the stop itself, not after it, lets the
# regex engine skip to the next stop character instead of trying every position.)
_SENTENCE_STOP = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
# The same when the text holds no "!" or "?" (most passages): a literal first character
# is searched for much faster than a class of three.
_PERIOD_STOP = re.compile(r"\.[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
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
_LONGEST_ABBREVIATION = max(map(len, _ABBREVIATIONS))


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text``; a cheap rule-based splitter.

    It avoids breaking after common abbreviations and single initials, which
    are frequent in technical prose ("e.g.", "Fig. 3", "J. Smith"), and it
    ends a sentence at a short line without closing punctuation — a heading,
    a caption or a line of code — so those never glue onto the next sentence.

    One pass of the stop regex over the whole text: a stop whose whitespace runs
    past the end of its standalone run (see :func:`_run_ends`) is no stop, as if
    each run were split alone.
    """
    spans: list[tuple[int, int]] = []
    runs = iter(_run_ends(text))
    run_end = next(runs, 0)
    start = 0  # where the current sentence starts
    stops = _SENTENCE_STOP if "!" in text or "?" in text else _PERIOD_STOP
    for match in stops.finditer(text):
        end = match.start() + 1  # right after the stop character
        while end > run_end:  # the stop lies in a later run: close this one
            _close_run(text, start, run_end, spans)
            start = run_end
            run_end = next(runs)
        after = match.end()
        if after >= run_end:
            continue  # the next sentence would start in the next run: no stop here
        # The word before the stop, if it is short enough to be an abbreviation (case
        # folding never shortens a word, so only that many characters are read).
        low = max(start, end - _LONGEST_ABBREVIATION - 1)
        window = text[low:end]
        word = window.rsplit(None, 1)[-1]
        if len(word) < len(window) or low == start:
            word = word.casefold()
            if word in _ABBREVIATIONS or (len(word) == 2 and word[0].isalpha()):
                continue  # "e.g.", "Fig.", an initial: no stop
        spans.append((start, end))
        start = after
    while run_end:
        _close_run(text, start, run_end, spans)
        start = run_end
        run_end = next(runs, 0)
    return spans


def _close_run(text: str, start: int, run_end: int, spans: list[tuple[int, int]]) -> None:
    """The run's last sentence, unterminated, up to its trailing whitespace."""
    tail = text[start:run_end].rstrip()
    if tail:
        spans.append((start, start + len(tail)))


_SHORT_LINE = 60


def _run_ends(text: str) -> list[int]:
    """Where the standalone runs of ``text`` end: after every short line that does not
    end in sentence punctuation (a heading, a caption, a line of code), and at the end."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= 1:
        return [len(text)] if text else []
    ends: list[int] = []
    position = 0
    size = len(text)
    for line in lines:
        position += len(line)
        body = line.strip()
        if body and len(body) <= _SHORT_LINE and body[-1] not in ".,;:!?" and position < size:
            ends.append(position)
    ends.append(size)
    return ends


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
