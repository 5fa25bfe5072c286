"""Quotation detection: whether a segment is a quotation of its passage — the same
characters, whitespace runs aside, with typographic quotes, dashes and
compatibility forms (ligatures, full-width letters) folded — and the exact
``[start, end)`` span it occupies in the *original* passage.

Standard library only: the domain's import contract. An ASCII text is folded by
``str.split`` rather than by character, and a passage's fold is computed once per
passage text and shared by every segment citing it; the property tests in
``tests/unit/test_support_features.py`` hold each quick form to its rule.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from dataclasses import dataclass

from citadel.domain.statement import is_statement

# Typographic quotes and dashes a writer (or a model) may swap for the ASCII ones.
_FOLD = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u00b4`", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
    "\u2026": "...",
    "\u00a0": " ",
}


@functools.lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    folded = _FOLD.get(char)
    if folded is not None:
        return folded
    if char.isascii():
        return char
    return _FOLD.get(unicodedata.normalize("NFKC", char), unicodedata.normalize("NFKC", char))


@dataclass(frozen=True, slots=True)
class Folded:
    """A text in its comparison form, with where each of its characters came from.

    ``text[k]`` was made from ``original[starts[k]:ends[k]]``: a whitespace run
    becomes one space (and the run's whole extent), a ligature several letters
    (each mapped to the ligature), an ellipsis three dots."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]


def fold(original: str) -> Folded:
    """``original`` with whitespace runs collapsed to one space and quotes, dashes and
    compatibility characters folded; leading and trailing whitespace dropped."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for index, char in enumerate(original):
        for piece in " " if char.isspace() else _fold_char(char):
            if not piece.isspace():
                out.append(piece)
                starts.append(index)
                ends.append(index + 1)
            elif out and out[-1] == " ":  # the run goes on: the space covers it
                ends[-1] = index + 1
            elif out:  # a space before any text is dropped
                out.append(" ")
                starts.append(index)
                ends.append(index + 1)
    if out and out[-1] == " ":
        out.pop()
        starts.pop()
        ends.pop()
    return Folded("".join(out), tuple(starts), tuple(ends))


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_LONG_RUN = re.compile(r"\s\s+")


def folded_text(original: str) -> str:
    """``fold(original).text``, quickly (no offsets kept)."""
    # The fold's one ASCII change is the backtick; every other character it changes is
    # not ASCII (``_fold_char`` looks in ``_FOLD`` first, as a translation table would),
    # and ``str.split`` and ``re``'s ``\s`` share one definition of whitespace.
    if "`" in original:
        original = original.replace("`", "'")
    if not original.isascii():
        original = _NON_ASCII.sub(_fold_match, original)
    return " ".join(original.split())


def _fold_match(match: re.Match[str]) -> str:
    return _fold_char(match.group(0))


class _Quoting:
    """A passage's folded text, and (on the first quotation found) where its folded
    characters came from: ``fold``'s offsets, without its loop over characters for an
    ASCII passage (there the fold changes no character's place but whitespace runs').

    In an ASCII passage the fold drops the leading whitespace and shortens every run of
    two or more whitespace characters to one space (a single whitespace character stays
    one character), so a folded character's original place is its own plus what was
    dropped before it: the leading run, and each longer run's surplus. Those runs are
    found by one regex scan, and are few in most passages."""

    __slots__ = ("_dropped", "_lead", "_original", "_runs", "_slow", "text")

    def __init__(self, original: str) -> None:
        self._original = original
        self.text = folded_text(original)
        self._runs: list[int] | None = None
        """The folded place of each run of two or more (the one space it became)."""
        self._dropped: list[int] = []
        """How many characters were dropped up to and including each of ``_runs``."""
        self._lead = 0
        self._slow: Folded | None = None

    def span(self, at: int, length: int) -> tuple[int, int]:
        """The original range of ``text[at : at + length]`` (its ends not spaces)."""
        if not self._original.isascii():
            if self._slow is None:
                self._slow = fold(self._original)
            return self._slow.starts[at], self._slow.ends[at + length - 1]
        if self._runs is None:
            self._index_runs()
        return self._place(at), self._place(at + length - 1) + 1

    def _index_runs(self) -> None:
        original = self._original
        lead = len(original) - len(original.lstrip())
        runs: list[int] = []
        dropped: list[int] = []
        total = lead
        for run in _LONG_RUN.finditer(original, lead):
            runs.append(run.start() - total)
            total += run.end() - run.start() - 1
            dropped.append(total)
        self._lead, self._dropped, self._runs = lead, dropped, runs

    def _place(self, folded: int) -> int:
        """The original place of the (non-space) folded character at ``folded``."""
        assert self._runs is not None
        before = bisect.bisect_left(self._runs, folded)  # runs strictly before it
        return folded + (self._dropped[before - 1] if before else self._lead)


@functools.lru_cache(maxsize=512)
def passage_quoting(passage: str) -> _Quoting:
    return _Quoting(passage)


def find_quotation(segment: str, passage: str) -> tuple[int, int] | None:
    """The ``[start, end)`` span of ``passage`` that ``segment`` quotes, or None.

    The comparison ignores how whitespace is laid out and folds typographic quotes,
    dashes and compatibility forms; it is case-sensitive, and the span runs from the
    first to the last character of the quotation in the original passage (the first
    occurrence when it occurs more than once)."""
    needle = folded_text(segment)
    if not needle:
        return None
    haystack = passage_quoting(passage)
    at = haystack.text.find(needle)
    if at < 0:
        return None
    return haystack.span(at, len(needle))


def verbatim_span(segment: str, passage: str) -> tuple[int, int] | None:
    """The span that makes ``segment`` a ``verbatim`` citation of ``passage``, or None: a
    quotation (``find_quotation``) that states something (``statement.is_statement``: a
    sentence or a code line). ``12`` occurring in a passage is not a quotation of it."""
    if not is_statement(segment):
        return None
    return find_quotation(segment, passage)


def same_modulo_whitespace(a: str, b: str) -> bool:
    """Whether two texts are equal once folded (the quotation rule's equality)."""
    return folded_text(a) == folded_text(b)


# Numbers with an optional unit right after them; years and months count as dates.


def is_literal_quotation(segment: str, passage: str) -> bool:
    """Whether ``segment`` is the passage's own characters: nothing folded, only the
    width of whitespace may differ, and a line break in the segment is one in the
    passage (a model that breaks a line before ``#`` writes a heading the book did not
    print). A quotation the renderable-text rule exempts must be this literal: folded
    forms (full-width ``［x］（y）`` quoted as ``[x](y)``) are the model's text."""
    pieces = segment.split()
    if not pieces:
        return False
    gaps = re.findall(r"\s+", segment.strip())
    pattern = [re.escape(pieces[0])]
    for gap, piece in zip(gaps, pieces[1:], strict=True):
        pattern.append(r"[^\S\n]*\n\s*" if "\n" in gap else r"\s+")
        pattern.append(re.escape(piece))
    return re.search("".join(pattern), passage) is not None
