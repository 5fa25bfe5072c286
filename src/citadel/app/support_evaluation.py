"""Support evaluation on labelled pairs: how well a checker tells supported from not,
and a contradiction from a sentence the passage does not address.

Each pair is a segment (``segment``, ``sentence`` or ``claim``) with a passage
(``passage`` or ``evidence``) and a gold verdict: ``label`` SUPPORT / CONTRADICT /
NEI (SciFact's, and the project's written pairs in ``data/support/``), or a boolean
``supported`` (gold ``NOT_SUPPORT`` when false); an optional ``kind`` names how the
pair was made (``paraphrase``, ``negation``, ``added_specific``…). Every pair is
checked alone (its own ``check`` call, timed), and the figures are:

- AUROC of the checker's score (ties count half, the Mann-Whitney statistic);
- at the checker's own labels — ``supported`` or ``verbatim`` is a positive —
  balanced accuracy, precision and recall of "supported";
- the confusion of the gold labels with the five predicted labels, and the
  three-way balanced accuracy: SUPPORT is right as ``verbatim`` or ``supported``,
  CONTRADICT as ``contradicted``, NEI as ``partial`` or ``unsupported``
  (``NOT_SUPPORT`` as any of the last three);
- the same per gold label and per kind (``GroupFigures``);
- the time of one pair's check, p50 and p95.

Nothing here reads a file: the caller parses the lines (``parse_pair_lines``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from citadel.app.errors import InvalidRequest
from citadel.app.evaluation_lines import json_objects
from citadel.app.ports.support import SupportChecker
from citadel.domain.support import SupportLabel

POSITIVE_LABELS = frozenset({SupportLabel.VERBATIM, SupportLabel.SUPPORTED})
GOLD_LABELS = ("SUPPORT", "CONTRADICT", "NEI")
NOT_SUPPORT = "NOT_SUPPORT"
"""The gold label of a line that says only ``"supported": false``."""
RIGHT_LABELS: dict[str, frozenset[SupportLabel]] = {
    "SUPPORT": POSITIVE_LABELS,
    "CONTRADICT": frozenset({SupportLabel.CONTRADICTED}),
    "NEI": frozenset({SupportLabel.PARTIAL, SupportLabel.UNSUPPORTED}),
    NOT_SUPPORT: frozenset(
        {SupportLabel.PARTIAL, SupportLabel.UNSUPPORTED, SupportLabel.CONTRADICTED}
    ),
}
"""The predicted labels that are right for each gold label (the three-way figures)."""


@dataclass(frozen=True, slots=True)
class LabelledPair:
    segment: str
    passage: str
    gold: str
    """SUPPORT, CONTRADICT or NEI; NOT_SUPPORT for a line with ``"supported": false``."""
    kind: str = ""

    @property
    def supported(self) -> bool:
        return self.gold == "SUPPORT"


@dataclass(frozen=True, slots=True)
class GroupFigures:
    """One gold label's or one kind's pairs.

    ``auroc`` ranks this group's pairs against the other class: a group of negatives
    against every SUPPORT pair of the file, a group of SUPPORT pairs against every
    other pair, a group with both classes within itself."""

    pairs: int
    gold: dict[str, int]
    labels: dict[str, int]
    """Predicted label -> pairs, all five labels."""
    supported_share: float
    """Share labelled ``verbatim`` or ``supported``."""
    right: float
    """Share with a predicted label right for its gold label (``RIGHT_LABELS``)."""
    mean_score: float
    auroc: float


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
    three_way_balanced_accuracy: float = 0.0
    """The mean, over the gold labels present, of the share predicted right."""
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    """Gold label -> predicted label -> pairs."""
    by_gold: dict[str, GroupFigures] = field(default_factory=dict)
    by_kind: dict[str, GroupFigures] = field(default_factory=dict)
    """Empty when no pair has a kind."""


def parse_pair_lines(lines: Iterable[str]) -> tuple[LabelledPair, ...]:
    """JSON lines to pairs; blank lines skipped, anything else malformed is refused with
    its line number (and its ``id``, when it has one)."""
    pairs = []
    for number, row in json_objects(lines):
        pairs.append(_pair(row, _where(number, row)))
    if not pairs:
        raise InvalidRequest("no pairs")
    return tuple(pairs)


def _where(number: int, row: dict[str, object]) -> str:
    named = row.get("id")
    if isinstance(named, str) and named.isprintable() and 0 < len(named) <= 60:
        return f"line {number} ({named})"
    return f"line {number}"


def _pair(row: dict[str, object], where: str) -> LabelledPair:
    segment = row.get("segment", row.get("sentence", row.get("claim")))
    passage = row.get("passage", row.get("evidence"))
    if not isinstance(segment, str) or not isinstance(passage, str):
        raise InvalidRequest(
            f"{where}: needs the text of segment (or sentence, or claim) and of passage"
            " (or evidence)"
        )
    label, supported = row.get("label"), row.get("supported")
    if label is not None and label not in GOLD_LABELS:
        shown = repr(label)[:40]
        raise InvalidRequest(f"{where}: label must be SUPPORT, CONTRADICT or NEI, not {shown}")
    if supported is not None and not isinstance(supported, bool):
        raise InvalidRequest(f"{where}: supported must be true or false")
    if label is None and supported is None:
        raise InvalidRequest(f"{where}: needs label SUPPORT/CONTRADICT/NEI or a boolean supported")
    if label is not None and supported is not None and (label == "SUPPORT") != supported:
        raise InvalidRequest(f"{where}: label {label} and supported {supported} disagree")
    kind = row.get("kind")
    if kind is not None and (not isinstance(kind, str) or not kind.strip()):
        raise InvalidRequest(f"{where}: kind must be a non-empty string")
    gold = str(label) if label is not None else ("SUPPORT" if supported else NOT_SUPPORT)
    return LabelledPair(segment, passage, gold, kind.strip() if kind else "")


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


@dataclass(frozen=True, slots=True)
class _Checked:
    pair: LabelledPair
    score: float
    label: SupportLabel


def evaluate_support(
    checker: SupportChecker,
    pairs: Sequence[LabelledPair],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> SupportEvaluationReport:
    checked: list[_Checked] = []
    timings: list[float] = []
    for done, pair in enumerate(pairs, start=1):
        started = time.perf_counter()
        (support,) = checker.check([(pair.segment, pair.passage)])
        timings.append((time.perf_counter() - started) * 1000)
        checked.append(_Checked(pair, support.score, support.label))
        if progress is not None:
            progress(done, len(pairs))
    gold = [c.pair.supported for c in checked]
    predicted = [c.label in POSITIVE_LABELS for c in checked]
    tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g and p)
    fp = sum(1 for g, p in zip(gold, predicted, strict=True) if not g and p)
    positives = sum(gold)
    negatives = len(gold) - positives
    recall = tp / positives if positives else 0.0
    specificity = (negatives - fp) / negatives if negatives else 0.0
    timings.sort()
    by_gold = _groups(checked, lambda c: c.pair.gold)
    return SupportEvaluationReport(
        checker=checker.name,
        pairs=len(pairs),
        positives=positives,
        auroc=auroc([c.score for c in checked], gold),
        balanced_accuracy=(recall + specificity) / 2,
        precision=tp / (tp + fp) if tp + fp else 0.0,
        recall=recall,
        ms_per_pair_p50=_quantile(timings, 0.5),
        ms_per_pair_p95=_quantile(timings, 0.95),
        labels=_label_counts(checked),
        three_way_balanced_accuracy=(
            sum(g.right for g in by_gold.values()) / len(by_gold) if by_gold else 0.0
        ),
        confusion={name: dict(group.labels) for name, group in by_gold.items()},
        by_gold=by_gold,
        by_kind=_groups(checked, lambda c: c.pair.kind) if any(p.kind for p in pairs) else {},
    )


def _label_counts(checked: Sequence[_Checked]) -> dict[str, int]:
    counts = Counter(c.label.value for c in checked)
    return {label.value: counts[label.value] for label in SupportLabel}


def _order(name: str) -> tuple[int, str]:
    return (list(RIGHT_LABELS).index(name) if name in RIGHT_LABELS else len(RIGHT_LABELS)), name


def _groups(checked: Sequence[_Checked], key: Callable[[_Checked], str]) -> dict[str, GroupFigures]:
    members: dict[str, list[_Checked]] = {}
    for c in checked:
        members.setdefault(key(c) or "(none)", []).append(c)
    positives = [c for c in checked if c.pair.supported]
    negatives = [c for c in checked if not c.pair.supported]
    out: dict[str, GroupFigures] = {}
    for name in sorted(members, key=_order):
        group = members[name]
        ours_pos = [c for c in group if c.pair.supported]
        ours_neg = [c for c in group if not c.pair.supported]
        ranked = (ours_pos or positives) + (ours_neg or negatives)
        out[name] = GroupFigures(
            pairs=len(group),
            gold=dict(Counter(c.pair.gold for c in group)),
            labels=_label_counts(group),
            supported_share=sum(c.label in POSITIVE_LABELS for c in group) / len(group),
            right=sum(c.label in RIGHT_LABELS[c.pair.gold] for c in group) / len(group),
            mean_score=sum(c.score for c in group) / len(group),
            auroc=auroc([c.score for c in ranked], [c.pair.supported for c in ranked]),
        )
    return out
