"""Checking that a cited passage supports the sentence citing it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citadel.domain.support import Support


class SupportChecker(Protocol):
    """Scores (segment text, cited passage) pairs; the passage is the one the model saw."""

    name: str
    """The checker and its weights' version, e.g. ``"support/2"``: recorded in the audit,
    so a replay knows whether it recomputes with the same checker."""

    def check(
        self, pairs: Sequence[tuple[str, str]], *, until: float | None = None
    ) -> list[Support]:
        """One ``Support`` per ``(segment, passage)`` pair, in order. Deterministic: the
        same pair always gets the same result. A quotation of the passage (whitespace
        aside) is ``verbatim`` with its span in the passage.

        ``until`` is a ``time.monotonic()`` instant: a checker that asks a remote judge
        stops asking by then, whatever its own deadline (the answer's judge budget,
        shared by its repair attempts). Local checkers, bounded by their own work,
        ignore it.

        A checker under a span-support judge (``adapters/support/judge.py``) also has a
        ``judge_model`` attribute; its results carry the judge's verdicts
        (``Support.judged``), and when the judge gave none the support step does not
        cache the answer (``SupportStep.complete``)."""
        ...
