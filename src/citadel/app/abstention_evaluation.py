"""Abstention on questions the library does not answer, beside the answered share of
the ones it does (issue 27).

An answer *abstains* when it has no answer and its degraded reason is
``not_in_library``: the answerability decision found no passage that answers. For
the unanswerable questions (per ``kind``, far and near, per near book and overall)
and for the answerable ones (per book and overall) the figures count the questions
abstained, answered, and degraded for any other reason.

When the results carry an answerability score, answerable questions are the
positives and unanswerable ones the negatives: the AUROC of the score (each kind
against all answerable questions, and all of them), and at each candidate threshold
the share of answerable questions the decision would let through (score at or
above it) and of unanswerable ones it would stop. Those cover only the questions
with a score (a ``no_evidence`` answer has none) and say what the decision alone
would do, not what generation does after it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from citadel.app.errors import InvalidRequest
from citadel.app.evaluation_lines import json_objects
from citadel.app.support_evaluation import auroc
from citadel.domain.answer import Answerability, AnswerResult, DegradedReason

KINDS = ("far", "near")
"""``far``: off the library's subjects; ``near``: a neighbouring subject, in the
words of one of its books."""
REQUIRED_FIELDS = ("id", "kind", "question")
DEFAULT_THRESHOLDS = tuple(round(n / 10, 1) for n in range(1, 10))
ABSTAINED = DegradedReason.NOT_IN_LIBRARY.value


@dataclass(frozen=True, slots=True)
class UnanswerableQuestion:
    id: str
    kind: str
    question: str
    topic: str = ""
    near_book: str | None = None
    """The book whose words a near question shares (a name of the data set's, not a
    path of the QA set's)."""


class Decided(Protocol):
    """What the figures read of one question's answer."""

    @property
    def degraded(self) -> str | None: ...

    @property
    def answerability(self) -> Answerability | None: ...


@dataclass(frozen=True, slots=True)
class UnanswerableOutcome:
    id: str
    kind: str
    near_book: str | None
    degraded: str | None
    answerability: Answerability | None
    latency_ms: float


@dataclass(frozen=True, slots=True)
class Decisions:
    """How a group of questions' answers went: each is exactly one of answered,
    abstained (``not_in_library``) or degraded for another reason."""

    questions: int
    answered: int
    abstained: int
    degraded: Mapping[str, int]
    """The other degraded reasons and their counts."""

    @property
    def answered_share(self) -> float:
        return self.answered / self.questions if self.questions else 0.0

    @property
    def abstained_share(self) -> float:
        return self.abstained / self.questions if self.questions else 0.0


@dataclass(frozen=True, slots=True)
class ThresholdRow:
    threshold: float
    answerable_answered: float
    """Share of the scored answerable questions scoring at or above the threshold."""
    abstained: Mapping[str, float]
    """Per kind and ``all``: share of the scored unanswerable questions below it."""


@dataclass(frozen=True, slots=True)
class AbstentionReport:
    answerable: Decisions
    answerable_per_book: Mapping[str, Decisions]
    unanswerable: Decisions
    unanswerable_per_kind: Mapping[str, Decisions]
    unanswerable_per_near_book: Mapping[str, Decisions]
    scored: Mapping[str, int]
    """Questions whose result carries a score: ``answerable``, each kind."""
    decided_by: tuple[tuple[str, float], ...]
    """The (scorer, threshold) pairs the results were decided with."""
    auroc: Mapping[str, float | None]
    """Per kind and ``all``; ``None`` when either side has no scored question."""
    thresholds: tuple[ThresholdRow, ...]
    outcomes: tuple[UnanswerableOutcome, ...] = ()


def parse_unanswerable_lines(lines: Iterable[str]) -> tuple[UnanswerableQuestion, ...]:
    """Questions the library does not answer, in JSON lines: string ``id``, ``kind``
    (far or near) and ``question``; ``topic`` a string and ``near_book`` a string or
    null when present; other fields (``checked``) are not read. Blank lines are
    skipped. ``InvalidRequest`` names the first bad line, and a repeated id."""
    questions: list[UnanswerableQuestion] = []
    seen: set[str] = set()
    for number, row in json_objects(lines):
        question = _question(number, row)
        if question.id in seen:
            raise InvalidRequest(f"line {number}: id {question.id!r} is repeated")
        seen.add(question.id)
        questions.append(question)
    if not questions:
        raise InvalidRequest("the unanswerable set has no questions")
    return tuple(questions)


def _question(number: int, row: dict[str, object]) -> UnanswerableQuestion:
    missing = [name for name in REQUIRED_FIELDS if name not in row]
    if missing:
        raise InvalidRequest(f"line {number}: missing {', '.join(missing)}")
    for name in REQUIRED_FIELDS:
        value = row[name]
        if not isinstance(value, str) or not value.strip():
            raise InvalidRequest(f"line {number}: {name} must be a non-empty string")
    if row["kind"] not in KINDS:
        raise InvalidRequest(
            f"line {number}: kind {row['kind']!r} is not one of {', '.join(KINDS)}"
        )
    topic = row.get("topic", "")
    if not isinstance(topic, str):
        raise InvalidRequest(f"line {number}: topic must be a string")
    near_book = row.get("near_book")
    if near_book is not None and (not isinstance(near_book, str) or not near_book.strip()):
        raise InvalidRequest(f"line {number}: near_book must be a non-empty string or null")
    # Each checked above to be a non-empty string.
    identity, kind, question = (str(row[name]) for name in ("id", "kind", "question"))
    return UnanswerableQuestion(identity, kind, question, topic, near_book)


def parse_thresholds(text: str) -> tuple[float, ...]:
    """Comma-separated candidate thresholds in [0, 1], returned sorted, once each."""
    values: set[float] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            value = float(part)
        except ValueError:
            raise InvalidRequest(f"threshold {part.strip()!r} is not a number") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise InvalidRequest(f"threshold {part.strip()!r} is not in [0, 1]")
        values.add(value)
    if not values:
        raise InvalidRequest("no thresholds given")
    return tuple(sorted(values))


def degraded_reason(result: AnswerResult) -> str | None:
    return result.degraded.reason.value if result.degraded is not None else None


def score_unanswerable(
    question: UnanswerableQuestion, result: AnswerResult, latency_ms: float
) -> UnanswerableOutcome:
    return UnanswerableOutcome(
        id=question.id,
        kind=question.kind,
        near_book=question.near_book,
        degraded=degraded_reason(result),
        answerability=result.answerability,
        latency_ms=latency_ms,
    )


def decisions(outcomes: Sequence[Decided]) -> Decisions:
    """How ``outcomes`` went (all zero for none)."""
    others = Counter(
        o.degraded for o in outcomes if o.degraded is not None and o.degraded != ABSTAINED
    )
    return Decisions(
        questions=len(outcomes),
        answered=sum(1 for o in outcomes if o.degraded is None),
        abstained=sum(1 for o in outcomes if o.degraded == ABSTAINED),
        degraded=dict(sorted(others.items())),
    )


def _scores(outcomes: Iterable[Decided]) -> list[float]:
    return [o.answerability.score for o in outcomes if o.answerability is not None]


def threshold_rows(
    answerable: Sequence[float], unanswerable: Mapping[str, Sequence[float]], cuts: Sequence[float]
) -> tuple[ThresholdRow, ...]:
    """At each cut, the share of answerable scores at or above it and, per group of
    unanswerable scores, the share below it (0 for an empty group)."""

    def share(hits: int, of: int) -> float:
        return hits / of if of else 0.0

    return tuple(
        ThresholdRow(
            threshold=cut,
            answerable_answered=share(sum(1 for s in answerable if s >= cut), len(answerable)),
            abstained={
                group: share(sum(1 for s in scores if s < cut), len(scores))
                for group, scores in unanswerable.items()
            },
        )
        for cut in cuts
    )


def abstention_report(
    answerable: Sequence[tuple[str, Decided]],
    unanswerable: Sequence[UnanswerableOutcome],
    *,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
) -> AbstentionReport:
    """The figures over the answerable outcomes (each with its book, books in the order
    first named) and the unanswerable ones."""
    per_book: dict[str, list[Decided]] = {}
    for book, outcome in answerable:
        per_book.setdefault(book, []).append(outcome)
    per_near_book: dict[str, list[UnanswerableOutcome]] = {}
    for u in unanswerable:
        if u.kind == "near" and u.near_book is not None:
            per_near_book.setdefault(u.near_book, []).append(u)
    per_kind = {kind: [u for u in unanswerable if u.kind == kind] for kind in KINDS}
    positives = _scores(o for _, o in answerable)
    negatives = {kind: _scores(rows) for kind, rows in per_kind.items()}
    negatives["all"] = _scores(unanswerable)

    def area(scores: Sequence[float]) -> float | None:
        if not positives or not scores:
            return None
        return auroc([*positives, *scores], [True] * len(positives) + [False] * len(scores))

    everyone: list[Decided] = [o for _, o in answerable]
    everyone.extend(unanswerable)
    decided_by = sorted(
        {(o.answerability.scorer, o.answerability.threshold) for o in everyone if o.answerability}
    )
    return AbstentionReport(
        answerable=decisions([o for _, o in answerable]),
        answerable_per_book={book: decisions(rows) for book, rows in per_book.items()},
        unanswerable=decisions(unanswerable),
        unanswerable_per_kind={kind: decisions(rows) for kind, rows in per_kind.items()},
        unanswerable_per_near_book={b: decisions(rows) for b, rows in per_near_book.items()},
        scored={"answerable": len(positives), **{k: len(negatives[k]) for k in KINDS}},
        decided_by=tuple(decided_by),
        auroc={group: area(scores) for group, scores in negatives.items()},
        thresholds=threshold_rows(positives, negatives, thresholds)
        if positives or negatives["all"]
        else (),
        outcomes=tuple(unanswerable),
    )
