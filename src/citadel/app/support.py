"""The support step: every validated segment checked against each passage it cites,
then the support policy applied.

It runs after validation, on the same frozen manifest: membership is settled,
and only the segment's text and the passages the model saw go into the check.
What the model says about its own answer never does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from citadel.app.ports import TrustMetrics
from citadel.app.ports.support import JudgeBudget, SupportChecker
from citadel.domain.answer import AnswerSegment, Degraded, DegradedReason, JudgedCitation
from citadel.domain.manifest import Manifest
from citadel.domain.support import (
    NOT_BACKED,
    Support,
    SupportLabel,
    SupportPolicy,
    strongest,
    unjudged,
)


@dataclass(frozen=True, slots=True)
class Checked:
    """A validated answer after the support policy: the segments kept, one ``Support``
    per ref of each, and whether any were removed."""

    segments: tuple[AnswerSegment, ...]
    supports: tuple[tuple[Support, ...], ...]
    limited: bool = False


@dataclass(frozen=True, slots=True)
class SupportVerdict:
    """What the check found before the policy decides: all segments with their support."""

    segments: tuple[AnswerSegment, ...]
    supports: tuple[tuple[Support, ...], ...]

    @property
    def unsupported(self) -> tuple[int, ...]:
        """Indexes of segments the policies act on: no citation supports them at all, or
        one contradicts them (``strongest``: a contradiction vetoes)."""
        return tuple(
            i
            for i, found in enumerate(self.supports)
            if strongest([s.label for s in found]) in NOT_BACKED
        )

    @property
    def judged(self) -> tuple[JudgedCitation, ...]:
        """The span-support judge's verdicts, by segment and ref (for the record)."""
        return tuple(
            JudgedCitation(i, ref, support.judged)
            for i, (segment, found) in enumerate(zip(self.segments, self.supports, strict=True))
            for ref, support in zip(segment.refs, found, strict=True)
            if support.judged is not None
        )

    @property
    def contradicted(self) -> tuple[int, ...]:
        """Indexes of segments a cited passage contradicts (a subset of ``unsupported``)."""
        return tuple(
            i
            for i, found in enumerate(self.supports)
            if strongest([s.label for s in found]) is SupportLabel.CONTRADICTED
        )

    @property
    def unquoted(self) -> tuple[int, ...]:
        """Indexes of segments that quote none of the passages they cite."""
        return tuple(
            i
            for i, found in enumerate(self.supports)
            if strongest([s.label for s in found]) is not SupportLabel.VERBATIM
        )


class SupportStep:
    """The checker and the policy, shared by every answer of one service."""

    def __init__(
        self, checker: SupportChecker, policy: SupportPolicy, metrics: TrustMetrics
    ) -> None:
        self._checker = checker
        self._policy = policy
        self._metrics = metrics

    @property
    def policy(self) -> SupportPolicy:
        return self._policy

    @property
    def checker_name(self) -> str:
        return self._checker.name

    @property
    def judges(self) -> bool:
        """Whether a span-support judge rules after the checker (``judge_model``)."""
        return bool(getattr(self._checker, "judge_model", ""))

    def complete(self, verdict: SupportVerdict) -> bool:
        """Whether ``verdict`` is all the checker gives: with a judge, every citation it
        rules on has its verdict (one the judge failed on may be asked again)."""
        return not (self.judges and unjudged(s for found in verdict.supports for s in found))

    def judge_budget(self) -> JudgeBudget | None:
        """One answer's judge time, all its checks together (``None`` without a judge):
        made once per answer, so a repair does not buy the judge a new deadline."""
        seconds = getattr(self._checker, "judge_deadline_s", None)
        return None if seconds is None else JudgeBudget(seconds)

    @property
    def identity(self) -> str:
        """The checker and the policy, for cache keys: a change of either is a new answer."""
        return f"{self._checker.name}:{self._policy.value}"

    def check(
        self,
        segments: tuple[AnswerSegment, ...],
        passages: Mapping[str, str],
        budget: JudgeBudget | None = None,
    ) -> SupportVerdict:
        """Each segment against every passage it cites, ``passages`` by ref (CPU work:
        call off the event loop); a judge asks within ``budget`` (``judge_budget``)."""
        started = time.perf_counter()
        pairs = [(segment.text, passages[ref]) for segment in segments for ref in segment.refs]
        found = self._checker.check(pairs, budget=budget)
        if len(found) != len(pairs):
            raise RuntimeError(
                f"the support checker gave {len(found)} results for {len(pairs)} pairs"
            )
        supports: list[tuple[Support, ...]] = []
        at = 0
        for segment in segments:
            supports.append(tuple(found[at : at + len(segment.refs)]))
            at += len(segment.refs)
        self._metrics.stage("support", time.perf_counter() - started)
        return SupportVerdict(segments, tuple(supports))

    def decide(self, verdict: SupportVerdict, *, quotes: bool = False) -> Checked | Degraded:
        """The policy: label everything, drop what is unsupported or contradicted, or
        refuse the answer (reason ``unsupported`` for both).

        With ``quotes`` (the generator quotes by construction: ``AnswerGenerator.quotes``)
        a segment that is not ``verbatim`` counts as unsupported, and is dropped even
        under ``label``: from such a generator it is a defect (a stored unit edited, a
        cutting bug), and a reader must never see it as the book's words."""
        unsupported = verdict.unquoted if quotes else verdict.unsupported
        if not unsupported or (self._policy is SupportPolicy.LABEL and not quotes):
            return Checked(verdict.segments, verdict.supports)
        if self._policy is SupportPolicy.REFUSE or len(unsupported) == len(verdict.segments):
            return Degraded(
                DegradedReason.UNSUPPORTED,
                f"{_not_backed(verdict, unsupported, quotes)}"
                f" (support policy {self._policy.value}); showing search results",
            )
        keep = [i for i in range(len(verdict.segments)) if i not in unsupported]
        return Checked(
            tuple(verdict.segments[i] for i in keep),
            tuple(verdict.supports[i] for i in keep),
            limited=True,
        )


def _not_backed(verdict: SupportVerdict, unsupported: tuple[int, ...], quotes: bool) -> str:
    """Which segments were refused and why: contradicted ones named apart."""
    contradicted = [i for i in verdict.contradicted if i in unsupported]
    rest = [i for i in unsupported if i not in contradicted]
    found = "quotes" if quotes else "supports"
    parts = []
    if rest:
        parts.append(f"no cited passage {found} segment(s) {_numbers(rest)}")
    if contradicted:
        parts.append(f"a cited passage contradicts segment(s) {_numbers(contradicted)}")
    return "; ".join(parts)


def _numbers(indexes: list[int]) -> str:
    return ", ".join(str(i + 1) for i in indexes)


def manifest_passages(manifest: Manifest) -> dict[str, str]:
    """Each ref's passage as the model saw it."""
    out: dict[str, str] = {}
    for entry in manifest.entries:
        evidence = manifest.evidence_for(entry.ref)
        # A frozen manifest carries the evidence of every entry; a miss is a bug.
        assert evidence is not None
        out[entry.ref] = evidence.passage
    return out
