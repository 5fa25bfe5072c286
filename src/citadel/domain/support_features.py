"""Pure features of a (segment, passage) pair for the support check.

Two kinds of thing live here. :func:`find_quotation` decides whether a segment is
a quotation of its passage — the same characters, whitespace runs aside, with
typographic quotes, dashes and compatibility forms (ligatures, full-width
letters) folded — and returns the exact ``[start, end)`` span it occupies in the
*original* passage. :func:`lexical_features` measures how much of a segment the
passage covers (content words by stem, word pairs, numbers with their units and
dates) and where the two disagree (a negation or a direction of change present
in one and not the other). The learned combiner in ``adapters/support/`` turns
the features, and the embedder's similarities, into a score.

Standard library only: the domain's import contract.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from dataclasses import dataclass

from citadel.domain.text import split_sentences, terms, words

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


_TRANSLATE = str.maketrans(_FOLD)
_RUNS = re.compile(r"\s+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def folded_text(original: str) -> str:
    """``fold(original).text``, quickly (no offsets kept)."""
    quick = original.translate(_TRANSLATE)
    if not quick.isascii():
        quick = _NON_ASCII.sub(lambda m: _fold_char(m.group(0)), quick)
    return _RUNS.sub(" ", quick).strip()


def find_quotation(segment: str, passage: str) -> tuple[int, int] | None:
    """The ``[start, end)`` span of ``passage`` that ``segment`` quotes, or None.

    The comparison ignores how whitespace is laid out and folds typographic quotes,
    dashes and compatibility forms; it is case-sensitive, and the span runs from the
    first to the last character of the quotation in the original passage (the first
    occurrence when it occurs more than once)."""
    needle = folded_text(segment)
    if not needle or needle not in folded_text(passage):
        return None
    haystack = fold(passage)
    at = haystack.text.find(needle)
    if at < 0:
        return None
    return haystack.starts[at], haystack.ends[at + len(needle) - 1]


def same_modulo_whitespace(a: str, b: str) -> bool:
    """Whether two texts are equal once folded (the quotation rule's equality)."""
    return folded_text(a) == folded_text(b)


# Numbers with an optional unit right after them; years and months count as dates.
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:\s?(?:%|percent|mg|kg|g|ml|l|mm|cm|km|m|ms|s|"
    r"min|h|hz|khz|mhz|ghz|kb|mb|gb|tb|°c|°f|k|x|fold|times|years?|months?|weeks?|days?))?"
    r"(?![\w])",
    re.IGNORECASE,
)
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
_NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor cannot without lack lacks lacking absent "
    "absence fail fails failed unable unlikely".split()
)
_UP = frozenset(
    "increase increases increased increasing higher high greater more raise raises raised "
    "elevated elevate enhance enhances enhanced improve improves improved promote promotes "
    "promoted activate activates activated induce induces induced gain above larger".split()
)
_DOWN = frozenset(
    "decrease decreases decreased decreasing lower low less fewer reduce reduces reduced "
    "reduction diminish diminished impair impairs impaired inhibit inhibits inhibited "
    "suppress suppresses suppressed loss below smaller attenuate attenuated block blocks".split()
)


def numbers(text: str) -> set[str]:
    """The numbers of ``text`` with their units, normalised (``"5 mg"`` -> ``"5mg"``)."""
    found = set()
    for match in _NUMBER.finditer(text):
        token = re.sub(r"\s+", "", match.group(0).casefold()).replace(",", "")
        found.add(token.replace("percent", "%"))
    return found


def _bare(values: set[str]) -> set[str]:
    return {re.sub(r"[^\d.]", "", v).strip(".") for v in values} - {""}


FEATURE_NAMES: tuple[str, ...] = (
    "coverage",
    "weighted_coverage",
    "bigram_coverage",
    "sentence_coverage",
    "sentence_precision",
    "ordered_overlap",
    "missing_long_terms",
    "numbers_present",
    "numbers_missing",
    "number_units_missing",
    "months_missing",
    "negation_mismatch",
    "segment_negated",
    "direction_conflict",
    "log_segment_terms",
    "log_passage_terms",
    "case_insensitive_quote",
)
"""The order of :func:`lexical_features`' values (the combiner's weights follow it)."""


def _term_weight(term: str) -> float:
    """A stand-in for rarity without corpus statistics: long words and codes weigh more."""
    if any(c.isdigit() for c in term):
        return 2.0
    return 1.0 + min(len(term), 12) / 6.0


def _lcs(a: list[str], b: list[str], limit: int = 48) -> int:
    """Length of the longest common subsequence of the first ``limit`` items of each."""
    a, b = a[:limit], b[:limit]
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@dataclass(frozen=True, slots=True)
class PassageView:
    """What the features read of a passage, computed once per passage text."""

    sentences: tuple[str, ...]
    sentence_terms: tuple[tuple[str, ...], ...]
    terms: frozenset[str]
    term_pairs: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    bare_numbers: frozenset[str]
    words: frozenset[str]
    folded: str


@functools.lru_cache(maxsize=512)
def passage_view(passage: str) -> PassageView:
    """The passage's sentences (the whole passage when it has none) and their terms."""
    spans = split_sentences(passage)
    sentences = tuple(passage[a:b] for a, b in spans) or (passage,)
    sentence_terms = tuple(tuple(terms(x)) for x in sentences)
    flat = [t for ts in sentence_terms for t in ts]
    found = numbers(passage)
    return PassageView(
        sentences=sentences,
        sentence_terms=sentence_terms,
        terms=frozenset(flat),
        term_pairs=frozenset(itertools.pairwise(flat)),
        numbers=frozenset(found),
        bare_numbers=frozenset(_bare(found)),
        words=frozenset(words(passage)),
        folded=folded_text(passage).casefold(),
    )


def _ranked(segment_terms: set[str], view: PassageView) -> list[int]:
    """Sentence indices, most weighted content words shared with the segment first."""
    scores = [
        -sum(_term_weight(t) for t in segment_terms.intersection(ts)) for ts in view.sentence_terms
    ]
    return sorted(range(len(scores)), key=lambda i: (scores[i], i))


def best_sentences(segment: str, passage: str, k: int = 2) -> list[str]:
    """The ``k`` sentences of ``passage`` sharing the most (weighted) content words with
    ``segment``, best first; the whole passage when it has no sentence."""
    view = passage_view(passage)
    return [view.sentences[i] for i in _ranked(set(terms(segment)), view)[:k]]


def _direction(tokens: set[str]) -> tuple[bool, bool]:
    return bool(tokens & _UP), bool(tokens & _DOWN)


def _cue_words(text: str) -> set[str]:
    return set(words(text.replace("n't", " not")))


def lexical_features(segment: str, passage: str) -> list[float]:
    """The values named by :data:`FEATURE_NAMES`, in that order, each a plain float."""
    view = passage_view(passage)
    seg_terms = terms(segment)
    seg_unique = list(dict.fromkeys(seg_terms))
    n = len(seg_unique)
    present = [t for t in seg_unique if t in view.terms]
    coverage = len(present) / n if n else 0.0
    total_weight = sum(_term_weight(t) for t in seg_unique)
    weighted = sum(_term_weight(t) for t in present) / total_weight if total_weight else 0.0
    seg_pairs = set(itertools.pairwise(seg_terms))
    bigram = len(seg_pairs & view.term_pairs) / len(seg_pairs) if seg_pairs else coverage
    best = _ranked(set(seg_unique), view)[0]
    best_list = list(dict.fromkeys(view.sentence_terms[best]))
    best_terms = set(best_list)
    sentence_coverage = len([t for t in seg_unique if t in best_terms]) / n if n else 0.0
    sentence_precision = len(best_terms & set(seg_unique)) / len(best_terms) if best_terms else 0.0
    ordered = _lcs(seg_unique, best_list) / min(n, 48) if n else 0.0
    missing_long = sum(1 for t in seg_unique if t not in view.terms and len(t) >= 7)

    seg_numbers = numbers(segment)
    missing_bare = _bare(seg_numbers) - view.bare_numbers
    missing_units = seg_numbers - view.numbers
    months_missing = len((set(words(segment)) & _MONTHS) - view.words)

    seg_tokens = _cue_words(segment)
    pas_tokens = _cue_words(view.sentences[best])
    seg_neg = bool(seg_tokens & _NEGATIONS)
    pas_neg = bool(pas_tokens & _NEGATIONS)
    seg_up, seg_down = _direction(seg_tokens)
    pas_up, pas_down = _direction(pas_tokens)
    conflict = (seg_up and not seg_down and pas_down and not pas_up) or (
        seg_down and not seg_up and pas_up and not pas_down
    )
    return [
        coverage,
        weighted,
        bigram,
        sentence_coverage,
        sentence_precision,
        ordered,
        float(min(missing_long, 5)),
        float(bool(seg_numbers)),
        float(min(len(missing_bare), 5)),
        float(min(len(missing_units), 5)),
        float(months_missing),
        float(seg_neg != pas_neg),
        float(seg_neg),
        float(conflict),
        math.log1p(n),
        math.log1p(sum(len(ts) for ts in view.sentence_terms)),
        float(folded_text(segment).casefold() in view.folded),
    ]


def numbers_missing(segment: str, passage: str) -> bool:
    """Whether the segment states a number (units aside) the passage never states."""
    return bool(_bare(numbers(segment)) - passage_view(passage).bare_numbers)
