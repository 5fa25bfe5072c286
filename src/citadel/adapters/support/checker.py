"""The support checker: quotation first, then features and a learned combiner.

A segment that quotes its passage (whitespace, typographic quotes and dashes
aside) and states something (a sentence or a code line: ``domain/statement.py``)
is ``verbatim``, score 1.0, with its span; a number or a word that merely occurs in
the passage is scored like any other segment. Anything else is scored from
features of the pair by the combiner of ``combiner.py``:

- ``lexical``: the pure features of :mod:`citadel.domain.support_features`
  (content-word and word-pair coverage, numbers with units, dates, negation and
  direction-of-change conflicts);
- ``static``: those plus the alignment of each segment word piece to its best
  match in the passage's best-matching sentences, on MiniLM's own input table
  (``static_tokens.py``: no transformer pass, so within the answer path's budget);
- ``embedder``: those plus the embedder's cosine between the segment and the
  passage's best-matching sentences (one ``embed`` call per ``check``; sentence
  and segment vectors cached), when a caller can afford the embedder's time.

Deterministic: the same pair always gets the same result (the cache returns the
vectors the embedder would).
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

from citadel.adapters.support.combiner import Combiner
from citadel.adapters.support.static_tokens import ALIGNMENT_NAMES, StaticTokens, alignment
from citadel.app.ports import Embedder
from citadel.app.ports.support import JudgeBudget
from citadel.domain.quotation import verbatim_span
from citadel.domain.statement import asserts_nothing
from citadel.domain.support import Support, SupportLabel
from citadel.domain.support_features import FEATURE_NAMES, features_and_sentences

SENTENCES_PER_PASSAGE = 2
"""How many of a passage's sentences (best by shared content words) the segment meets."""
CACHE_SIZE = 4096
NON_VERBATIM_CEILING = 0.99
"""1.0 is reserved for quotations."""
PARTIAL_MIN_COVERAGE = 1 / 3
"""``partial`` needs a third of the segment's content words in the passage: a sentence
the passage shares no word with is not backed "in part", whatever the score says."""

SHORT_SEGMENT_TERMS = 4
SHORT_SEGMENT_MIN_SHARED = 2
"""A segment of at most four content words is ``supported`` (or ``partial``) only when
two of them are in the passage: a short generic sentence ("This is a JSON object.") shares one word
with almost any passage, and SciFact's long claims never taught the combiner that.
On SciFact train the rule leaves balanced accuracy at 0.704 (it touches 142 of 4,190
pairs); on SmolLM2's answers it is what separates such sentences from support."""

FEATURES: dict[str, tuple[str, ...]] = {
    "lexical": FEATURE_NAMES,
    "static": FEATURE_NAMES + ALIGNMENT_NAMES,
    "embedder": (*FEATURE_NAMES, *ALIGNMENT_NAMES, "embedding_cosine"),
}
"""Each combiner's features, in order; each set extends the one before."""
_COVERAGE = FEATURE_NAMES.index("coverage")
_SEGMENT_TERMS = FEATURE_NAMES.index("log_segment_terms")
"""log1p of the number of the segment's distinct content words."""
_NUMBERS_MISSING = FEATURE_NAMES.index("numbers_missing")
"""Its value is > 0 exactly when ``numbers_missing(segment, passage)`` holds."""


@functools.cache
def _blas() -> ThreadpoolController:
    """Built once: inspecting the loaded BLAS libraries costs milliseconds."""
    return ThreadpoolController()


class VectorCache:
    """Text -> embedder vector, least recently used out; one embed call for the misses."""

    def __init__(self, embedder: Embedder, size: int = CACHE_SIZE) -> None:
        self._embedder = embedder
        self._size = size
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        with self._lock:
            found = {t: self._vectors[t] for t in texts if t in self._vectors}
            for text in found:
                self._vectors.move_to_end(text)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = self._embedder.embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    found[text] = vector
                    self._vectors[text] = vector
                while len(self._vectors) > self._size:
                    self._vectors.popitem(last=False)
        return found


class FeatureSupportChecker:
    """The ``SupportChecker`` port on quotation detection plus a learned combiner."""

    def __init__(
        self,
        combiner: Combiner,
        *,
        embedder: Embedder | None = None,
        tokens: StaticTokens | None = None,
    ) -> None:
        if combiner.features != FEATURES[combiner.kind]:
            raise ValueError(f"the {combiner.kind} weights name other features than this code")
        if combiner.kind != "lexical" and tokens is None:
            raise ValueError(f"the {combiner.kind} combiner needs the static token table")
        if combiner.kind == "embedder" and embedder is None:
            raise ValueError("the embedder combiner needs an embedder")
        self._combiner = combiner
        self._tokens = tokens if combiner.kind != "lexical" else None
        self._cache = VectorCache(embedder) if combiner.kind == "embedder" and embedder else None
        suffix = f"+{embedder.name}" if self._cache is not None and embedder else ""
        self.name = f"{combiner.version}/{combiner.kind}{suffix}"

    @property
    def combiner(self) -> Combiner:
        return self._combiner

    def check(
        self, pairs: Sequence[tuple[str, str]], *, budget: JudgeBudget | None = None
    ) -> list[Support]:
        results: list[Support | None] = []
        scored: list[tuple[str, str]] = []
        for segment, passage in pairs:
            span = verbatim_span(segment, passage)
            if span is None:
                results.append(None)
                scored.append((segment, passage))
            else:
                results.append(Support(1.0, SupportLabel.VERBATIM, span))
        if scored:
            features = self.features(scored)
            scores = self._combiner.score(features)
            made = iter(
                self._support(
                    float(score),
                    coverage=float(row[_COVERAGE]),
                    terms=round(math.expm1(float(row[_SEGMENT_TERMS]))),
                    numbers_missing=bool(row[_NUMBERS_MISSING] > 0),
                )
                for score, row in zip(scores, features, strict=True)
            )
            results = [r if r is not None else next(made) for r in results]
        return [
            unasserted(segment, r)
            for (segment, _), r in zip(pairs, results, strict=True)
            if r is not None
        ]

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The combiner's score of each pair, quotation or not (for evaluation)."""
        if not pairs:
            return []
        features = self.features(pairs)
        return [float(s) for s in self._combiner.score(features)]

    def features(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """One row per pair, in the combiner's feature order."""
        return pair_features(pairs, tokens=self._tokens, vectors=self._cache)

    def _support(
        self, score: float, *, coverage: float, terms: int, numbers_missing: bool
    ) -> Support:
        return graded(
            score,
            supported=self._combiner.supported,
            partial=self._combiner.partial,
            coverage=coverage,
            terms=terms,
            numbers_missing=numbers_missing,
        )


def unasserted(segment: str, support: Support) -> Support:
    """A question or a title is never ``supported`` or ``partial``, whatever its score:
    it asserts nothing for a passage to support (``statement.asserts_nothing``). A
    ``contradicted`` label stays: dropping a sentence's last stop must not hide a
    contradiction. Shared by every checker."""
    if support.label not in (SupportLabel.SUPPORTED, SupportLabel.PARTIAL):
        return support
    if not asserts_nothing(segment):
        return support
    return Support(support.score, SupportLabel.UNSUPPORTED)


def graded(
    score: float,
    *,
    supported: float,
    partial: float,
    coverage: float,
    terms: int,
    numbers_missing: bool,
) -> Support:
    """A non-quotation's label from its score and thresholds, under the rules every
    learned checker shares: a number the passage never states is not supported, a
    short segment needs two words in the passage, ``partial`` needs a third of them."""
    score = min(max(score, 0.0), NON_VERBATIM_CEILING)
    shared = round(coverage * terms)
    short_and_unshared = terms <= SHORT_SEGMENT_TERMS and shared < SHORT_SEGMENT_MIN_SHARED
    # A number the passage never states is not supported, however close the rest:
    # SciFact has too few such pairs for the combiner to learn it.
    if score >= supported and not numbers_missing and not short_and_unshared:
        return Support(score, SupportLabel.SUPPORTED)
    if score >= partial and coverage >= PARTIAL_MIN_COVERAGE and not short_and_unshared:
        return Support(score, SupportLabel.PARTIAL)
    return Support(score, SupportLabel.UNSUPPORTED)


def pair_features(
    pairs: Sequence[tuple[str, str]],
    *,
    tokens: StaticTokens | None = None,
    vectors: VectorCache | None = None,
) -> npt.NDArray[np.float64]:
    """One row per pair: the lexical features, then the alignment ones when ``tokens`` is
    given, then the embedder's cosine when ``vectors`` is (``FEATURES``' orders)."""
    rows: list[list[float]] = []
    chosen: list[list[str]] = []
    for segment, passage in pairs:
        row, sentences = features_and_sentences(segment, passage, SENTENCES_PER_PASSAGE)
        rows.append(row)
        chosen.append(sentences)
    if tokens is None:
        return np.asarray(rows, dtype=np.float64).reshape(len(pairs), len(FEATURE_NAMES))
    pieces = tokens.pieces([s for s, _ in pairs] + [" ".join(c) for c in chosen])
    # Products of a few dozen rows: BLAS threads only add their wake-up time (and on a
    # busy machine, milliseconds of waiting for a core).
    with _blas().limit(limits=1, user_api="blas"):
        for i, row in enumerate(rows):
            row.extend(alignment(pieces[i], pieces[len(pairs) + i]))
    if vectors is not None:
        found = vectors.vectors([s for s, _ in pairs] + [x for c in chosen for x in c])
        for row, (segment, _), sentences in zip(rows, pairs, chosen, strict=True):
            row.append(max(float(found[segment] @ found[x]) for x in sentences))
    return np.asarray(rows, dtype=np.float64)
