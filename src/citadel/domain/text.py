"""Text rules shared by selection, validation and the extractive generator.

Words, stems and sentences; sizes and forbidden characters. What counts as markup
is :mod:`citadel.domain.markup`.
"""

from __future__ import annotations

import functools
import re
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
