"""Pure features of a (segment, passage) pair for the support check.

Quotations are found by ``citadel.domain.quotation``. :func:`lexical_features`
measures how much of a segment the passage covers (content words by stem, word
pairs, numbers with their units and dates) and where the two disagree (a negation
or a direction of change present in one and not the other). The learned combiner
in ``adapters/support/`` turns the features, and the embedder's similarities,
into a score.

Standard library only: the domain's import contract.

It runs on every answer (issue 14: 5 ms p95 per answer of 8 segments), so the
hot paths have quick forms that give the same values as the plain rules they
stand for: an ASCII text is folded by ``str.split`` rather than by character,
its words found on the lower-cased text with stems and weights memoised per
word, a passage's fold and sentence terms computed once per passage text and
shared by every segment citing it, and the ordered overlap counted with a
bit-parallel LCS. ``tests/unit/test_support_reference.py`` holds the checker to
its earlier outputs; the property tests here hold each quick form to its rule.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from dataclasses import dataclass, field

from citadel.domain.quotation import folded_text, passage_quoting
from citadel.domain.text import _WORD, STOPWORDS, split_sentences, stem

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
        token = "".join(match.group(0).casefold().split()).replace(",", "")
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


_MEMO_SIZE = 1 << 16
"""Words and terms memoised (per process, emptied when full): a vocabulary, not texts."""
_TERM_OF: dict[str, str] = {}
"""Lower-cased word -> its stem, ``""`` for a stop word."""
_WEIGHT_OF: dict[str, float] = {}
_SIXTHS_OF: dict[str, int] = {}


def _weight(term: str) -> float:
    weight = _WEIGHT_OF.get(term)
    if weight is None:
        if len(_WEIGHT_OF) >= _MEMO_SIZE:
            _WEIGHT_OF.clear()
        weight = _WEIGHT_OF[term] = _term_weight(term)
    return weight


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+(?:[-'][A-Za-z0-9]+)*")
r"""``_WORD`` on ASCII text: there ``[^\W_]`` is exactly ``[A-Za-z0-9]`` (and quicker)."""


# ASCII letters, digits and the two joiners kept, every other byte a space.
_ASCII_KEEP = bytes(c if (c < 128 and chr(c).isalnum()) or c in b"-'" else 32 for c in range(256))
_LOOSE_JOINERS = ("- ", " -", "--", "' ", " '", "''", "-'", "'-")


def _raw_words(text: str) -> list[str]:
    """``domain.text``'s word tokens of ``text`` as written (not yet case-folded)."""
    if not text.isascii():
        return _WORD.findall(text)
    # With every character that is neither a letter, a digit nor a joiner made a space,
    # the blank-separated tokens are the words, provided no joiner is loose (at a token's
    # edge or beside another): the pattern reads a joiner only between letters or digits.
    kept = text.encode("ascii").translate(_ASCII_KEEP).decode("ascii")
    if ("-" in kept or "'" in kept) and (
        any(pair in kept for pair in _LOOSE_JOINERS)
        or kept.startswith(("-", "'"))
        or kept.endswith(("-", "'"))
    ):
        return _ASCII_WORD.findall(text)
    return kept.split()


def _words(text: str) -> list[str]:
    """``words(text)``."""
    return [w.casefold() for w in _raw_words(text)]


def _term(word: str) -> str:
    folded = word.casefold()
    return "" if folded in STOPWORDS else stem(folded)


def _terms_of(raw: list[str]) -> list[str]:
    """``terms`` of the text whose words (as written) are ``raw``: each word's stem, or
    ``""`` for a stop word, memoised, so that a known text costs no Python-level loop."""
    memo = _TERM_OF
    found = list(map(memo.get, raw))
    if None in found:
        if len(memo) + len(raw) > _MEMO_SIZE:
            memo.clear()
        for word in raw:
            if word not in memo:
                memo[word] = _term(word)
        found = list(map(memo.get, raw))
        if None in found:  # another thread emptied the memo meanwhile
            found = [_term(word) for word in raw]
    return list(filter(None, found))


def _terms(text: str) -> list[str]:
    """``terms(text)``."""
    return _terms_of(_raw_words(text))


def _lcs(a: list[str], b: list[str], limit: int = 48) -> int:
    """Length of the longest common subsequence of the first ``limit`` items of each.

    Bit-parallel (Allison-Dix, Hyyrö): one bit per item of ``b``, one step per item
    of ``a``; the same length as the dynamic programme, without its inner loop."""
    a, b = a[:limit], b[:limit]
    if not a or not b:
        return 0
    positions: dict[str, int] = {}
    for j, y in enumerate(b):
        positions[y] = positions.get(y, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for x in a:
        match = positions.get(x)
        if match:
            u = v & match
            v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


@dataclass(frozen=True, slots=True)
class PassageView:
    """What the features read of a passage, computed once per passage text."""

    sentences: tuple[str, ...]
    sentence_terms: tuple[tuple[str, ...], ...]
    terms: frozenset[str]
    term_pairs: frozenset[tuple[str, str]]
    folded: str
    term_count: int = 0
    sentence_facts: dict[int, _SentenceFacts] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    """Filled as segments meet the sentences (``_facts``)."""


@dataclass(frozen=True, slots=True)
class _SentenceFacts:
    """What a segment's features read of the sentence that best matches it."""

    unique_terms: list[str]
    term_set: frozenset[str]
    negated: bool
    up: bool
    down: bool


def _facts(view: PassageView, index: int) -> _SentenceFacts:
    facts = view.sentence_facts.get(index)
    if facts is None:
        unique = list(dict.fromkeys(view.sentence_terms[index]))
        cues = _cue_words(view.sentences[index])
        up, down = _direction(cues)
        facts = _SentenceFacts(unique, frozenset(unique), bool(cues & _NEGATIONS), up, down)
        view.sentence_facts[index] = facts
    return facts


@functools.lru_cache(maxsize=512)
def passage_view(passage: str) -> PassageView:
    """The passage's sentences (the whole passage when it has none) and their terms."""
    spans = split_sentences(passage)
    sentences = tuple(passage[a:b] for a, b in spans) or (passage,)
    sentence_terms = tuple(tuple(_terms(x)) for x in sentences)
    flat = [t for ts in sentence_terms for t in ts]
    return PassageView(
        sentences=sentences,
        sentence_terms=sentence_terms,
        terms=frozenset(flat),
        term_pairs=frozenset(itertools.pairwise(flat)),
        folded=passage_quoting(passage).text.casefold(),
        term_count=len(flat),
    )


@functools.lru_cache(maxsize=512)
def _passage_numbers(passage: str) -> tuple[frozenset[str], frozenset[str]]:
    """The passage's numbers with units, and bare: read only for a segment stating one."""
    found = numbers(passage)
    return frozenset(found), frozenset(_bare(found))


@functools.lru_cache(maxsize=512)
def _passage_words(passage: str) -> frozenset[str]:
    """The passage's words: read only for a segment naming a month."""
    return frozenset(_words(passage))


def clear_passage_caches() -> None:
    """Forget every passage seen (benchmarks measuring passages new to the checker)."""
    passage_view.cache_clear()
    passage_quoting.cache_clear()
    _passage_numbers.cache_clear()
    _passage_words.cache_clear()


def _sixths(term: str) -> int:
    """``6 * _term_weight(term)``, an integer."""
    sixths = _SIXTHS_OF.get(term)
    if sixths is None:
        if len(_SIXTHS_OF) >= _MEMO_SIZE:
            _SIXTHS_OF.clear()
        sixths = _SIXTHS_OF[term] = 12 if any(c.isdigit() for c in term) else 6 + min(len(term), 12)
    return sixths


def _ranked(segment_terms: set[str], view: PassageView) -> list[int]:
    """Sentence indices, most weighted content words shared with the segment first; of
    sentences sharing as much, the earlier first."""
    # Summed in sixths, exactly: a sum of float weights over a set depends on the set's
    # iteration order, which changes with the process's string hash seed, so equal
    # sentences could swap places from one process to the next.
    sixths = {t: _sixths(t) for t in segment_terms}.__getitem__
    scores = [-sum(map(sixths, segment_terms.intersection(ts))) for ts in view.sentence_terms]
    return sorted(range(len(scores)), key=scores.__getitem__)  # stable: ties by index


def best_sentences(segment: str, passage: str, k: int = 2) -> list[str]:
    """The ``k`` sentences of ``passage`` sharing the most (weighted) content words with
    ``segment``, best first; the whole passage when it has no sentence."""
    view = passage_view(passage)
    return [view.sentences[i] for i in _ranked(set(_terms(segment)), view)[:k]]


def _direction(tokens: set[str]) -> tuple[bool, bool]:
    return bool(tokens & _UP), bool(tokens & _DOWN)


def _cue_words(text: str) -> set[str]:
    return set(_words(text.replace("n't", " not")))


def lexical_features(segment: str, passage: str) -> list[float]:
    """The values named by :data:`FEATURE_NAMES`, in that order, each a plain float."""
    return features_and_sentences(segment, passage, 1)[0]


def features_and_sentences(segment: str, passage: str, k: int) -> tuple[list[float], list[str]]:
    """``lexical_features(segment, passage)`` and ``best_sentences(segment, passage, k)``,
    from one ranking of the passage's sentences."""
    view = passage_view(passage)
    seg_terms = _terms(segment)
    seg_unique = list(dict.fromkeys(seg_terms))
    n = len(seg_unique)
    present = [t for t in seg_unique if t in view.terms]
    coverage = len(present) / n if n else 0.0
    total_weight = sum(map(_weight, seg_unique))
    weighted = sum(map(_weight, present)) / total_weight if total_weight else 0.0
    seg_pairs = set(itertools.pairwise(seg_terms))
    bigram = len(seg_pairs & view.term_pairs) / len(seg_pairs) if seg_pairs else coverage
    ranked = _ranked(set(seg_unique), view)
    best = ranked[0]
    facts = _facts(view, best)
    best_list = facts.unique_terms
    best_terms = facts.term_set
    sentence_coverage = len([t for t in seg_unique if t in best_terms]) / n if n else 0.0
    sentence_precision = len(best_terms & set(seg_unique)) / len(best_terms) if best_terms else 0.0
    ordered = _lcs(seg_unique, best_list) / min(n, 48) if n else 0.0
    missing_long = sum(1 for t in seg_unique if t not in view.terms and len(t) >= 7)

    seg_numbers = numbers(segment)
    missing_bare: set[str] = set()
    missing_units: set[str] = set()
    if seg_numbers:
        passage_numbers, passage_bare = _passage_numbers(passage)
        missing_bare = _bare(seg_numbers) - passage_bare
        missing_units = seg_numbers - passage_numbers
    months = set(_words(segment)) & _MONTHS
    months_missing = len(months - _passage_words(passage)) if months else 0

    seg_tokens = _cue_words(segment)
    seg_neg = bool(seg_tokens & _NEGATIONS)
    pas_neg = facts.negated
    seg_up, seg_down = _direction(seg_tokens)
    pas_up, pas_down = facts.up, facts.down
    conflict = (seg_up and not seg_down and pas_down and not pas_up) or (
        seg_down and not seg_up and pas_up and not pas_down
    )
    values = [
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
        math.log1p(view.term_count),
        float(folded_text(segment).casefold() in view.folded),
    ]
    return values, [view.sentences[i] for i in ranked[:k]]


def numbers_missing(segment: str, passage: str) -> bool:
    """Whether the segment states a number (units aside) the passage never states."""
    stated = numbers(segment)
    return bool(stated) and bool(_bare(stated) - _passage_numbers(passage)[1])
