"""Checking that a cited passage supports the sentence citing it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from citadel.domain.support import Support


@dataclass(slots=True)
class JudgeBudget:
    """One answer's time for a remote span-support judge, all its checks together (a
    repair's check too): only the time spent asking the judge counts, not the local
    check before it nor the generation between. Made by ``SupportStep.judge_budget``;
    one answer's checks run one after another, so it needs no lock."""

    seconds: float
    spent: float = 0.0

    @property
    def left(self) -> float:
        return self.seconds - self.spent


class SupportChecker(Protocol):
    """Scores (segment text, cited passage) pairs; the passage is the one the model saw."""

    name: str
    """The checker and its weights' version, e.g. ``"support/2"``: recorded in the audit,
    so a replay knows whether it recomputes with the same checker."""

    def check(
        self, pairs: Sequence[tuple[str, str]], *, budget: JudgeBudget | None = None
    ) -> list[Support]:
        """One ``Support`` per ``(segment, passage)`` pair, in order. Deterministic: the
        same pair always gets the same result. A quotation of the passage (whitespace
        aside) is ``verbatim`` with its span in the passage.

        ``budget`` is the answer's judge time: a checker that asks a remote judge asks
        for at most what is left of it, whatever its own deadline, and adds the time
        it took. Local checkers, bounded by their own work, ignore it.

        A checker under a span-support judge (``adapters/support/judge.py``) also has a
        ``judge_model`` attribute; its results carry the judge's verdicts
        (``Support.judged``), and when the judge gave none the support step does not
        cache the answer (``SupportStep.complete``)."""
        ...
