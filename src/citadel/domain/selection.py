"""Closed evidence selection: the bounded, diverse set a generator may see.

Three passes over the ranked candidates: first every passage scoring near the
best (``near_top`` of its score), then at most one passage per (book, chapter,
section) group, then backfill in rank order. Diversity may reorder but never
pushes a hit near the top out. Every admission goes through the same checks, so
the result is bounded whatever retrieval returned.
"""

from __future__ import annotations

from collections.abc import Iterable

from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence
from citadel.domain.search import Evidence
from citadel.domain.text import is_valid_utf8, normalise_passage, utf8_size


def context_bytes(item: ContextEvidence) -> int:
    """What one passage costs against the context budget: its id, passage and source fields."""
    return (
        utf8_size(item.evidence_id)
        + utf8_size(item.passage)
        + sum(utf8_size(value) for value in item.source_fields())
    )


def _group(evidence: Evidence) -> tuple[str, str, str]:
    return (evidence.source_id, evidence.chapter, evidence.section)


def _well_formed(item: ContextEvidence, limits: Limits) -> bool:
    passage = item.passage
    return (
        bool(item.evidence_id.strip())
        and bool(passage.strip())
        and utf8_size(passage) <= limits.max_passage_bytes
        and is_valid_utf8(passage)
        and is_valid_utf8(item.evidence_id)
        and all(is_valid_utf8(value) for value in item.source_fields())
    )


def select_evidence(
    ranked: Iterable[Evidence],
    limits: Limits,
    minimum_score: float = 0.0,
    near_top: float | None = None,
) -> tuple[ContextEvidence, ...]:
    """Choose the closed context from ranked evidence (best first).

    ``minimum_score`` is compared with the normalised score in [0, 1]. A score
    of exactly 0 means no evidence at all (no query term present and no
    semantic similarity), so such a passage is never admitted. A passage scoring
    at least ``near_top`` times the best candidate's score (when given:
    ``FusionPolicy.near_top``) is admitted before diversity is considered.
    """
    if not 0.0 <= minimum_score <= 1.0:
        raise ValueError("minimum_evidence_score must be in [0, 1]")
    if near_top is not None and not 0.0 < near_top <= 1.0:
        raise ValueError("near_top must be in (0, 1]")
    candidates = [e for e in ranked if e.score >= minimum_score and e.score > 0.0]
    selected: list[ContextEvidence] = []
    seen_ids: set[str] = set()
    seen_passages: set[str] = set()
    seen_groups: set[tuple[str, str, str]] = set()
    total = 0

    def admit(evidence: Evidence) -> bool:
        nonlocal total
        item = ContextEvidence(evidence)
        if len(selected) >= limits.max_evidence or not _well_formed(item, limits):
            return False
        normalised = normalise_passage(item.passage)
        cost = context_bytes(item)
        if (
            item.evidence_id in seen_ids
            or normalised in seen_passages
            or total + cost > limits.max_context_bytes
        ):
            return False
        selected.append(item)
        seen_ids.add(item.evidence_id)
        seen_passages.add(normalised)
        total += cost
        return True

    if near_top is not None:
        kept = near_top * max((e.score for e in candidates), default=0.0)
        for evidence in candidates:
            if evidence.score >= kept and admit(evidence):
                seen_groups.add(_group(evidence))
    for evidence in candidates:
        group = _group(evidence)
        if evidence.evidence_id not in seen_ids and group not in seen_groups and admit(evidence):
            seen_groups.add(group)
    for evidence in candidates:
        if evidence.evidence_id not in seen_ids:
            admit(evidence)

    # Refs follow admission order: near the top, diversity picks, then backfill.
    return tuple(selected)
