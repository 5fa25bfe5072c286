"""Which quotable units answer: scored by meaning and by words, the best passage first.

Each unit (:mod:`.units`) is scored against the question by two kinds of evidence:

- *lexical*: the share of the question's informative terms the unit contains, each
  weighted by how rare it is among the units of this evidence (a term every unit
  has tells little apart; one that no unit has is left out);
- *dense*: the embedder's cosine of question and unit, when an embedder is given
  (without one, or when it fails, the choice is lexical alone). Only the units that
  rank best by words and search rank are embedded (``Weights.max_embedded``);
- *learned*: the relevance scorer's probability that the unit answers the question
  (a cross-encoder trained on the project's questions), when one is given, for those
  same units. It is then most of a unit's score, and a unit it scores below
  ``Weights.stop`` is not quoted unless it is the best there is: the answer stops
  where the next sentence does not answer.

A passage answers as well as its best unit plus the lexical match of its section heading.
The first passage cited is the best-ranked one by search unless another answers
clearly better (search ranks passages better than one sentence does), with every
unit of it that scores close to its best; another passage is added only when it
answers nearly as well and has a unit that comes close — a weakly related section
is left out rather than filling a slot. No two chosen units overlap in their
passage or say nearly the same.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from citadel.adapters.generators.extractive.units import Unit, unit_terms
from citadel.app.ports.inference import Embedder, RelevanceScorer

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Weights:
    """The choice's knobs in one place (chosen on the QA set; see docs/answers.md)."""

    dense: float = 0.8
    """Share of the dense cosine in a unit's score when there is an embedder."""
    heading: float = 0.6
    """How much the section heading's lexical match adds to how well its passage answers
    (embedding the headings too moved no figure: not worth eight more embeddings)."""
    rank: float = 0.5
    """What each step down search's ranking costs a passage when the first is chosen."""
    keep_in_best: float = 0.6
    """A unit of the first passage is quoted when it scores this share of its best."""
    other_passage: float = 0.9
    """Another passage is quoted when it answers this share as well as the first ..."""
    other_unit: float = 0.5
    """... and its best unit scores this share of the first passage's best."""
    close_unit: float = 0.98
    """... or, whatever its heading, when its unit is about as good as that best."""
    same_meaning: float = 0.9
    """Two units whose cosine reaches this say the same thing."""
    same_words: float = 0.7
    """... as do two whose terms overlap this much (Jaccard)."""
    max_units: int = 5
    max_from_best: int = 3
    max_embedded: int = 16
    """Units embedded per answer at most: the best by words and search rank."""
    learned: float = 0.7
    """Share of the relevance scorer's probability in a unit's score, when there is one."""
    stop: float = 0.2
    """With a relevance scorer, a unit it scores below this answers nothing: not quoted
    beside a better one."""


class Choice(NamedTuple):
    passage: int
    """Position of the passage in the evidence (0 is search's best)."""
    unit: Unit


class VectorCache:
    """The embedder's vectors of recent texts (headings, sentences that recur)."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self._embedder = embedder
        self._size = size
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()  # answers are written on worker threads

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            known = {t: v for t in texts if (v := self._vectors.get(t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = np.asarray(self._embedder.embed(missing), dtype=np.float32)
            if fresh.ndim != 2 or fresh.shape[0] != len(missing):
                raise ValueError("the embedder returned a vector count that does not match")
            known.update(zip(missing, fresh, strict=True))
        with self._lock:
            for text in texts:
                self._vectors[text] = known[text]
                self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return np.stack([known[t] for t in texts])


def choose(
    question: str,
    passages: Sequence[Sequence[Unit]],
    headings: Sequence[str],
    vectors: VectorCache | None,
    shown: Callable[[str], bool],
    weights: Weights = Weights(),
    relevance: RelevanceScorer | None = None,
) -> list[Choice]:
    """The units to quote, in the order to show them: the first passage's first.

    ``shown`` says whether a unit's text may be displayed; it is asked only of the
    units about to be chosen."""
    candidates = _candidates(passages)
    if not candidates:
        return []
    wanted = unit_terms(question)
    # One count over all units (a Counter.update per unit costs more than the counting).
    df = Counter(chain.from_iterable(candidate.unit.terms & wanted for candidate in candidates))
    idf = {t: math.log(1 + len(candidates) / df[t]) for t in df}
    # fsum: correctly rounded whatever the order, and a set's order follows the
    # process's string-hash seed, so a plain sum could rank two units differently
    # after a restart (seen: 1 request in 1,000).
    total = math.fsum(idf.values())
    weight = idf.__getitem__
    weighted = frozenset(idf)  # a set, not the dict's keys: "&" with those builds one each time

    def coverage(found: frozenset[str]) -> float:
        return math.fsum(map(weight, found & weighted)) / total if total else 0.0

    lexical = [coverage(c.unit.terms) for c in candidates]
    heading_score = [coverage(unit_terms(h)) for h in headings]
    order = sorted(
        range(len(candidates)),
        key=lambda i: (-lexical[i] + weights.rank * candidates[i].passage, i),
    )
    embedded = order[: weights.max_embedded]
    dense = _dense(question, [candidates[i].unit.text for i in embedded], vectors)
    unit_score = lexical
    similar = _Similarity(None, {})
    if dense is not None:
        unit_vectors, unit_cosines = dense
        share = weights.dense
        unit_score = [-1.0] * len(candidates)  # a unit not read closely is never quoted
        for slot, index in enumerate(embedded):
            unit_score[index] = (1 - share) * lexical[index] + share * float(unit_cosines[slot])
        slots = {index: slot for slot, index in enumerate(embedded)}
        similar = _Similarity(unit_vectors @ unit_vectors.T, slots)
    learned = _learned(question, [candidates[i].unit.text for i in embedded], relevance)
    if learned is not None:
        share = weights.learned
        before = unit_score
        unit_score = [-1.0] * len(candidates)
        answers = max(learned)
        for slot, index in enumerate(embedded):
            p = learned[slot]
            if p < weights.stop and p < answers:
                continue  # answers nothing, and something else answers better
            unit_score[index] = (1 - share) * max(0.0, before[index]) + share * p
    return _pick(candidates, unit_score, heading_score, similar, shown, weights)


def _learned(
    question: str, texts: list[str], relevance: RelevanceScorer | None
) -> list[float] | None:
    """The scorer's probability for each text; None without a scorer, or when it fails."""
    if relevance is None or not texts:
        return None
    try:
        scores = [float(p) for p in relevance.score(question, texts)]
    except Exception:  # a help, never a dependency: fall back to words and meaning
        log.warning("extractive generator: the relevance scorer failed; choosing without it")
        return None
    if len(scores) != len(texts):
        log.warning("extractive generator: the relevance scorer returned the wrong count")
        return None
    return scores


class _Similarity:
    """The cosine of two embedded units, read from their matrix only when asked."""

    def __init__(self, matrix: npt.NDArray[np.float32] | None, slots: dict[int, int]) -> None:
        self._matrix = matrix
        self._slots = slots

    def __call__(self, a: int, b: int) -> float:
        """Of candidates ``a < b``; 0 when either was not embedded."""
        x = self._slots.get(a)
        y = self._slots.get(b)
        if self._matrix is None or x is None or y is None:
            return 0.0
        return float(self._matrix[x, y])


def _candidates(passages: Sequence[Sequence[Unit]]) -> list[Choice]:
    """Every unit once: a sentence two overlapping chunks share is the earlier one's."""
    seen: set[str] = set()
    out: list[Choice] = []
    for position, units in enumerate(passages):
        for unit in units:
            if unit.wording in seen:
                continue
            seen.add(unit.wording)
            out.append(Choice(position, unit))
    return out


def _dense(
    question: str, texts: list[str], vectors: VectorCache | None
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None:
    """Unit vectors, and their cosines with the question."""
    if vectors is None or not texts:
        return None
    try:
        rows = vectors.embed([question, *texts])
    except Exception:  # the embedder is a help here, never a dependency: fall back
        log.warning("extractive generator: the embedder failed; choosing by words alone")
        return None
    units = rows[1:]
    return units, units @ rows[0]


def _pick(
    candidates: list[Choice],
    unit_score: list[float],
    heading_score: Sequence[float],
    similar: _Similarity,
    shown: Callable[[str], bool],
    weights: Weights,
) -> list[Choice]:
    order = sorted(range(len(candidates)), key=lambda i: (-unit_score[i], i))
    refused: set[int] = set()

    def quotable(index: int) -> bool:
        if index in refused:
            return False
        if unit_score[index] <= 0 or not shown(candidates[index].unit.text):
            refused.add(index)
            return False
        return True

    best_unit: dict[int, float] = {}
    for index in order:  # each passage's best unit that may be shown
        passage = candidates[index].passage
        if passage not in best_unit and quotable(index):
            best_unit[passage] = unit_score[index]
    if not best_unit:
        return []
    answers = {p: s + weights.heading * heading_score[p] for p, s in best_unit.items()}
    top = max(answers, key=lambda p: (answers[p] - weights.rank * p, -p))
    top_unit = best_unit[top]
    chosen: list[int] = []

    def redundant(index: int) -> bool:
        unit = candidates[index]
        for other in chosen:
            them = candidates[other]
            if them.passage == unit.passage and _overlap(them.unit, unit.unit):
                return True
            union = len(them.unit.terms | unit.unit.terms)
            if union and len(them.unit.terms & unit.unit.terms) / union >= weights.same_words:
                return True
            if similar(min(index, other), max(index, other)) >= weights.same_meaning:
                return True
        return False

    for index in order:  # the first passage: every unit close to its best
        if len(chosen) >= min(weights.max_from_best, weights.max_units):
            break
        if candidates[index].passage != top:
            continue
        if unit_score[index] < weights.keep_in_best * top_unit:
            break
        if quotable(index) and not redundant(index):
            chosen.append(index)
    quoted = {top}
    for index in order:  # others only when they come close, one unit each
        if len(chosen) >= weights.max_units or unit_score[index] < weights.other_unit * top_unit:
            break
        passage = candidates[index].passage
        if passage in quoted:
            continue
        close = unit_score[index] >= weights.close_unit * top_unit
        if not close and answers.get(passage, -math.inf) < weights.other_passage * answers[top]:
            continue
        if quotable(index) and not redundant(index):
            chosen.append(index)
            quoted.add(passage)
    # The first passage first; each passage's units in reading order.
    rank = {p: n for n, p in enumerate(dict.fromkeys(candidates[i].passage for i in chosen))}
    chosen.sort(key=lambda i: (rank[candidates[i].passage], candidates[i].unit.start))
    return [candidates[i] for i in chosen]


def _overlap(a: Unit, b: Unit) -> bool:
    return a.start < b.end and b.start < a.end
