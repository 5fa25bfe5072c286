"""The answerability step: does the selected evidence answer the question at all?

It runs after search and selection and before the answer cache and the generator.
A passage answers when one of its sentences does: the step cuts the selected
passages into sentences, keeps the ``SENTENCES`` that share the most rare question
terms (each passage's best one first, so every passage is heard), and asks the
relevance scorer (``RelevanceScorer``) for each (question, sentence) pair. A
passage scores as its best scored sentence. (Sentences, not whole passages: the
scorer was trained on the sentences that answer, and a short pair costs a fraction
of a long one.)

The decision's score is the best passage's, times the question's *coverage* to the
power ``COVERAGE_POWER``: the share of the question's distinct content terms that
occur in at least one passage the search returned. A question about a tool, a
command or a place the library never names ("How do I plot a sine curve in MATLAB?")
leaves a term uncovered, whatever a sentence about plotting scores; only passages
the reader may see count, so the factor tells nothing about anyone else's sources.
Measured on the team's sets (docs/answers.md): at the threshold that answers 95% of
answerable questions, the scorer alone abstained on 13% of off-topic and 28% of
near-domain questions, and times coverage^4 on 74% and 58%.

Below the threshold the answer use case degrades to its search results with
``not_in_library`` and never calls the generator. The evidence keeps the search's
order unless the step is built with ``order=True`` (the best-scoring passage first):
on the team's QA set that order cited the gold passage less often (docs/answers.md).

The scorer is a help, not a gate the answer depends on: if it fails (raises, or
breaks its contract) the step logs it and says "answerable, undecided", and the
answer goes ahead as it would without a scorer.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from citadel.app.ports import RelevanceScorer
from citadel.domain.answer import Answerability, Degraded, DegradedReason
from citadel.domain.manifest import ContextEvidence
from citadel.domain.text import split_sentences, terms

log = logging.getLogger("citadel.answerability")

DEFAULT_THRESHOLD = 0.5
"""The probability the best passage must reach (``CITADEL_ANSWERABILITY_THRESHOLD``)."""
DEFAULT_PASSAGES = 8
"""How many of the selected passages are scored, in selection order
(``CITADEL_ANSWERABILITY_PASSAGES``); the evidence set never holds more by default."""
COVERAGE_POWER = 4
"""How hard an uncovered question term weighs: chosen by measurement (2: 61% / 49% of
off-topic / near-domain questions abstained at 95% answered; 4: 74% / 58%; 8: 80% /
63% but a threshold of 0.15 on the product, where the scorer's own score no longer
counts for much)."""
SENTENCES = 16
"""Sentences scored per answer at most: each passage's best by words, then the next
best of any passage."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the step found: the decision, and one score per passage it scored."""

    answerability: Answerability | None
    """``None`` when the scorer failed: nothing was decided, the answer goes ahead."""
    scores: tuple[float, ...] = ()
    """The scores of the first ``len(scores)`` passages of the evidence, in its order."""

    @property
    def answerable(self) -> bool:
        return self.answerability is None or self.answerability.answerable

    def ordered(self, context: Sequence[ContextEvidence]) -> tuple[ContextEvidence, ...]:
        """``context`` with its scored passages best first (a stable sort: ties keep the
        search's order), then the passages that were not scored, in their order."""
        scored = len(self.scores)
        best_first = sorted(range(scored), key=lambda i: -self.scores[i])
        return tuple(context[i] for i in best_first) + tuple(context[scored:])


class AnswerabilityStep:
    """The scorer, the threshold and how many passages it scores, shared by every answer
    of one service."""

    def __init__(
        self,
        scorer: RelevanceScorer,
        threshold: float = DEFAULT_THRESHOLD,
        passages: int = DEFAULT_PASSAGES,
        *,
        order: bool = False,
        coverage_power: float = COVERAGE_POWER,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("the answerability threshold lies in [0, 1]")
        if passages < 1:
            raise ValueError("at least one passage is scored")
        self._scorer = scorer
        self._threshold = threshold
        self._passages = passages
        self._order = order
        self._coverage_power = coverage_power

    @property
    def scorer_name(self) -> str:
        """The scorer and its weights' version: in cache keys and on every decision."""
        return self._scorer.name

    @property
    def threshold(self) -> float:
        return self._threshold

    @property
    def orders(self) -> bool:
        """Whether the evidence is given to the generator best-scoring passage first."""
        return self._order

    def decide(
        self, question: str, context: Sequence[ContextEvidence], seen: Sequence[str] = ()
    ) -> Decision:
        """Score the first passages of ``context`` for ``question`` (CPU work: call off
        the event loop); ``seen`` is the text of every passage the search returned (the
        coverage counts those and ``context``'s). Never raises for the scorer's sake: a
        failure is logged and gives an undecided (answerable) ``Decision``."""
        passages = [item.passage for item in context[: self._passages]]
        if not passages:
            return Decision(None)
        owners, texts = candidate_sentences(question, passages, SENTENCES)
        try:
            scores = [float(s) for s in self._scorer.score(question, texts)]
            if len(scores) != len(texts):
                raise RuntimeError(
                    f"the relevance scorer gave {len(scores)} scores for {len(texts)} texts"
                )
            if not all(math.isfinite(s) and 0.0 <= s <= 1.0 for s in scores):
                raise RuntimeError("the relevance scorer gave a score outside [0, 1]")
        except Exception as exc:  # the scorer is a help: the answer never fails for it
            # The exception's type only: a message may quote the question or a passage.
            log.warning(
                "relevance scorer %s failed (%s); answering without an answerability decision",
                self._scorer.name,
                type(exc).__name__,
            )
            return Decision(None)
        best = [0.0] * len(passages)
        for owner, score in zip(owners, scores, strict=True):
            best[owner] = max(best[owner], score)
        covered = coverage(question, [*seen, *(item.passage for item in context)])
        score = max(best) * covered**self._coverage_power
        decided = Answerability(score, self._threshold, self._scorer.name)
        return Decision(decided, tuple(best))


def coverage(question: str, passages: Sequence[str]) -> float:
    """The share of the question's distinct content terms found in any of ``passages``
    (1.0 for a question of stop words only: nothing to miss)."""
    wanted = set(terms(question))
    if not wanted:
        return 1.0
    found: set[str] = set()
    for passage in passages:
        found.update(wanted.intersection(terms(passage)))
        if len(found) == len(wanted):
            break
    return len(found) / len(wanted)


def candidate_sentences(
    question: str, passages: Sequence[str], limit: int
) -> tuple[list[int], list[str]]:
    """The sentences to score and the passage each is from: every passage's best by
    words, then the best of the rest, ``limit`` in all (at least one per passage).

    "By words": the rare question terms a sentence holds, each weighted by how few of
    the evidence's sentences hold it; ties go to the earlier passage and sentence."""
    wanted = set(terms(question))
    cut: list[tuple[int, int, str, frozenset[str]]] = []
    for owner, passage in enumerate(passages):
        spans = split_sentences(passage) or [(0, len(passage))]
        for order, (start, end) in enumerate(spans):
            text = passage[start:end].strip()
            if text:
                cut.append((owner, order, text, frozenset(terms(text)) & wanted))
    df: dict[str, int] = {}
    for *_, found in cut:
        for term in found:
            df[term] = df.get(term, 0) + 1
    weight = {t: math.log(1 + len(cut) / n) for t, n in df.items()}
    ranked = sorted(cut, key=lambda c: (-math.fsum(weight[t] for t in c[3]), c[0], c[1]))
    chosen: list[tuple[int, int, str, frozenset[str]]] = []
    heard: set[int] = set()
    for item in ranked:  # each passage's best first
        if item[0] not in heard:
            heard.add(item[0])
            chosen.append(item)
    for item in ranked:  # then the best of the rest
        if len(chosen) >= max(limit, len(heard)):
            break
        if item not in chosen:
            chosen.append(item)
    return [c[0] for c in chosen], [c[2] for c in chosen]


def not_in_library(answerability: Answerability) -> Degraded:
    """The degradation of an answer the evidence does not answer, saying what was found."""
    return Degraded(
        DegradedReason.NOT_IN_LIBRARY,
        "the library does not seem to answer the question: its answerability score was"
        f" {answerability.score:.2f}, under the answerability threshold"
        f" {answerability.threshold:.2f} ({answerability.scorer}); the closest passages"
        " are shown, not an answer, and the generator was not called",
    )
