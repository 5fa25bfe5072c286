"""Fusing lexical and dense rankings into one score in [0, 1].

Two methods, chosen by measurement (docs/retrieval.md):

- ``weighted``: each list's scores are normalised per query (divided by that
  list's best), then mixed with configured weights. A document missing from a
  list contributes 0 for it, so a strong lexical-only hit keeps a high score.
- ``rrf``: reciprocal-rank fusion, sum of ``w / (k + rank)``, divided by its
  maximum so it also lands in [0, 1].

Both are relative: the best hit of any query scores near 1, even when the
query matches nothing well. ``calibrate`` turns them into absolute scores by
multiplying every score of a query by one confidence — the best absolute
evidence among its top hits: the share of the query's terms a hit contains,
or its cosine similarity mapped from [floor, ceiling] to [0, 1]. Multiplying
by one constant never changes the order, so the measured ranking quality is
untouched, while ``minimum_evidence_score`` now means the same thing for
every query and a strong lexical-only hit keeps its score.

``diversify`` then lets repeats of one section yield to other sections: each
further hit of a section already ranked above is placed as if it had lost a
constant factor (``section_decay``), so the first results name more distinct
sections while a section's strong second passage can still stay above a weak
other section. It changes the order only: every result keeps its own calibrated
score, and the confidence is taken before it, from the fused order.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from citadel.domain.errors import InvalidValue
from citadel.domain.text import stem, words


@dataclass(frozen=True, slots=True)
class FusionPolicy:
    method: str = "weighted"
    lexical_weight: float = 0.4
    dense_weight: float = 0.6
    rrf_k: int = 60
    # Cosines of all-MiniLM-L6-v2 on SciFact train: relevant pairs 5th percentile
    # 0.31 and median 0.58; the best match of off-topic queries 0.15-0.35.
    dense_floor: float = 0.30
    dense_ceiling: float = 0.65
    # Each further hit of a section ranked above is placed as if it scored this many
    # times less; its score stays its own (1: off).
    # QA set hit@5 0.947 -> 0.963 for any decay from 0.05 to 0.85 (docs/retrieval.md).
    section_decay: float = 0.5
    # In an answer's evidence, a passage scoring at least this share of the best is
    # admitted before diversity (domain/selection.py): the answer may not lose a strong
    # second passage of the best section to weak other sections. Search results keep
    # diversity's order, which readers scan for other sections.
    near_top: float = 0.85

    def __post_init__(self) -> None:
        if self.method not in {"weighted", "rrf"}:
            raise InvalidValue(f"unknown fusion method {self.method!r}")
        if self.lexical_weight < 0 or self.dense_weight < 0:
            raise InvalidValue("fusion weights are non-negative")
        if self.lexical_weight + self.dense_weight <= 0:
            raise InvalidValue("at least one fusion weight is positive")
        if self.rrf_k < 1:
            raise InvalidValue("rrf_k is at least 1")
        if not -1.0 <= self.dense_floor < self.dense_ceiling <= 1.0:
            raise InvalidValue("dense_floor < dense_ceiling, both within [-1, 1]")
        if not 0.0 < self.section_decay <= 1.0:
            raise InvalidValue("section_decay is within (0, 1]")
        if not 0.0 < self.near_top <= 1.0:
            raise InvalidValue("near_top is within (0, 1]")


Ranking = Sequence[tuple[str, float]]
"""(id, raw score) pairs, best first; larger is better."""


def fuse(lexical: Ranking, dense: Ranking, policy: FusionPolicy) -> list[tuple[str, float]]:
    """One ranking, best first, with scores in [0, 1]; ties broken by id for determinism."""
    if policy.method == "rrf":
        scores = _rrf(lexical, dense, policy)
    else:
        scores = _weighted(lexical, dense, policy)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _weighted(lexical: Ranking, dense: Ranking, policy: FusionPolicy) -> dict[str, float]:
    total = policy.lexical_weight + policy.dense_weight
    out: dict[str, float] = {}
    for ranking, weight in ((lexical, policy.lexical_weight), (dense, policy.dense_weight)):
        for doc, normalised in _normalised(ranking).items():
            out[doc] = out.get(doc, 0.0) + weight * normalised / total
    return {doc: min(1.0, max(0.0, score)) for doc, score in out.items()}


def _normalised(ranking: Ranking) -> Mapping[str, float]:
    if not ranking:
        return {}
    best = max(score for _, score in ranking)
    if best <= 0:
        return {doc: 0.0 for doc, _ in ranking}
    return {doc: max(0.0, score) / best for doc, score in ranking}


def _rrf(lexical: Ranking, dense: Ranking, policy: FusionPolicy) -> dict[str, float]:
    ceiling = (policy.lexical_weight + policy.dense_weight) / (policy.rrf_k + 1)
    out: dict[str, float] = {}
    for ranking, weight in ((lexical, policy.lexical_weight), (dense, policy.dense_weight)):
        for rank, (doc, _) in enumerate(ranking, start=1):
            out[doc] = out.get(doc, 0.0) + weight / (policy.rrf_k + rank)
    return {doc: score / ceiling for doc, score in out.items()}


def diversify(
    ranked: Sequence[tuple[str, float]], group_of: Mapping[str, Hashable], decay: float
) -> list[tuple[str, float]]:
    """``ranked`` (best first) in another order: each hit placed as if its score were
    multiplied by ``decay`` once for every hit of its group (``group_of``; an id missing
    there is alone) placed above it. Ties keep the original order.

    Only the order changes: every hit keeps its own score, so a score still means the
    evidence of that passage alone (``minimum_evidence_score`` keeps what it kept), and
    the scores are no longer sorted. A group's first hit is never placed lower than
    before. Within a group the order is kept, so only each group's next hit competes:
    O(n log groups).
    """
    if not 0.0 < decay <= 1.0:
        raise InvalidValue("decay is within (0, 1]")
    if decay == 1.0:
        return list(ranked)
    queues: dict[Hashable, list[int]] = {}
    for rank, (doc, _) in enumerate(ranked):
        queues.setdefault(group_of.get(doc, doc), []).append(rank)
    # Each group's next hit: (negated adjusted score, its rank, group, hits placed).
    heap = [(-ranked[ranks[0]][1], ranks[0], group, 0) for group, ranks in queues.items()]
    heapq.heapify(heap)
    out: list[tuple[str, float]] = []
    while heap:
        _, rank, group, placed = heapq.heappop(heap)
        out.append(ranked[rank])
        ranks = queues[group]
        if placed + 1 < len(ranks):
            following = ranks[placed + 1]
            adjusted = ranked[following][1] * decay ** (placed + 1)
            heapq.heappush(heap, (-adjusted, following, group, placed + 1))
    return out


def dense_evidence(cosine: float, policy: FusionPolicy) -> float:
    """A cosine as absolute evidence in [0, 1]."""
    span = policy.dense_ceiling - policy.dense_floor
    return min(1.0, max(0.0, (cosine - policy.dense_floor) / span))


def term_coverage(query_terms: Sequence[str], text: str) -> float:
    """The share of the query's (stemmed, non-stop) terms that ``text`` contains."""
    wanted = {stem(t) for t in query_terms}
    if not wanted:
        return 0.0
    present = {stem(w) for w in set(words(text))}  # each distinct word stemmed once
    return len(wanted & present) / len(wanted)


def calibrate(ranked: Sequence[tuple[str, float]], confidence: float) -> list[tuple[str, float]]:
    """Scale a query's relative scores by its confidence in [0, 1]; the order is kept."""
    scale = min(1.0, max(0.0, confidence))
    return [(doc, score * scale) for doc, score in ranked]
