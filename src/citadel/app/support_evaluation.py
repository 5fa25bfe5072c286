"""Support evaluation on labelled pairs: how well a checker tells supported from not.

Each pair is a segment (``claim`` or ``segment``) with a passage (``evidence`` or
``passage``) and a gold verdict: ``label`` SUPPORT (positive) / CONTRADICT / NEI
as in SciFact, or a boolean ``supported``. Every pair is checked alone (its own
``check`` call, timed), and the figures are:

- AUROC of the checker's score (ties count half, the Mann-Whitney statistic);
- at the checker's own labels — ``supported`` or ``verbatim`` is a positive —
  balanced accuracy, precision and recall of "supported";
- the time of one pair's check, p50 and p95.

Nothing here reads a file: the caller parses the lines (``parse_pair_lines``).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from citadel.app.errors import InvalidRequest
from citadel.app.ports.support import SupportChecker
from citadel.domain.support import SupportLabel

POSITIVE_LABELS = frozenset({SupportLabel.VERBATIM, SupportLabel.SUPPORTED})


@dataclass(frozen=True, slots=True)
class LabelledPair:
    segment: str
    passage: str
    supported: bool


@dataclass(frozen=True, slots=True)
class SupportEvaluationReport:
    checker: str
    pairs: int
    positives: int
    auroc: float
    balanced_accuracy: float
    precision: float
    recall: float
    ms_per_pair_p50: float
    ms_per_pair_p95: float
    labels: dict[str, int] = field(default_factory=dict)


def parse_pair_lines(lines: Iterable[str]) -> tuple[LabelledPair, ...]:
    """JSON lines to pairs; blank lines skipped, anything else malformed is refused."""
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"line {number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidRequest(f"line {number}: not a JSON object")
        segment = row.get("segment", row.get("claim"))
        passage = row.get("passage", row.get("evidence"))
        if not isinstance(segment, str) or not isinstance(passage, str):
            raise InvalidRequest(f"line {number}: needs claim/segment and evidence/passage text")
        if isinstance(row.get("supported"), bool):
            supported = row["supported"]
        elif row.get("label") in ("SUPPORT", "CONTRADICT", "NEI"):
            supported = row["label"] == "SUPPORT"
        else:
            raise InvalidRequest(
                f"line {number}: needs label SUPPORT/CONTRADICT/NEI or a boolean supported"
            )
        pairs.append(LabelledPair(segment, passage, supported))
    if not pairs:
        raise InvalidRequest("no pairs")
    return tuple(pairs)


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """Probability a random positive outscores a random negative (ties half); 0.5 when a
    class is missing."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    n_pos = sum(positive)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    rank_sum = sum(r for r, p in zip(ranks, positive, strict=True) if p)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    return sorted_values[int(q * (len(sorted_values) - 1))] if sorted_values else 0.0


def evaluate_support(
    checker: SupportChecker,
    pairs: Sequence[LabelledPair],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> SupportEvaluationReport:
    scores: list[float] = []
    predicted: list[bool] = []
    timings: list[float] = []
    labels: Counter[str] = Counter()
    for done, pair in enumerate(pairs, start=1):
        started = time.perf_counter()
        (support,) = checker.check([(pair.segment, pair.passage)])
        timings.append((time.perf_counter() - started) * 1000)
        scores.append(support.score)
        predicted.append(support.label in POSITIVE_LABELS)
        labels[support.label.value] += 1
        if progress is not None:
            progress(done, len(pairs))
    gold = [p.supported for p in pairs]
    tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g and p)
    fp = sum(1 for g, p in zip(gold, predicted, strict=True) if not g and p)
    positives = sum(gold)
    negatives = len(gold) - positives
    recall = tp / positives if positives else 0.0
    specificity = (negatives - fp) / negatives if negatives else 0.0
    timings.sort()
    return SupportEvaluationReport(
        checker=checker.name,
        pairs=len(pairs),
        positives=positives,
        auroc=auroc(scores, gold),
        balanced_accuracy=(recall + specificity) / 2,
        precision=tp / (tp + fp) if tp + fp else 0.0,
        recall=recall,
        ms_per_pair_p50=_quantile(timings, 0.5),
        ms_per_pair_p95=_quantile(timings, 0.95),
        labels={label.value: labels[label.value] for label in SupportLabel},
    )
