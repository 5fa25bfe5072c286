"""The span-support judge's verdicts in the audit record, and ``audit replay`` with them.

A judge's reply is not reproducible, so the record keeps every verdict it gave on the
decided candidate — on segments a policy then dropped too — with the judge's model,
and replay applies them again to the labels the local checker recomputes. A record
with no judge keeps the bytes it had before the judge existed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.generators.scripted import ScriptedGenerator
from citadel.adapters.memory import InMemoryAuditLog, InMemoryLibrary
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.adapters.support.judge import JudgedSupportChecker, SpanJudge
from citadel.app.answer import AnswerService
from citadel.app.answer_cache import AnswerCache
from citadel.app.audit import AuditService
from citadel.app.ports.support import SupportChecker
from citadel.app.search import SearchService
from citadel.app.support import SupportStep
from citadel.domain.answer import AnswerResult, JudgedCitation
from citadel.domain.audit import AuditRecord
from citadel.domain.limits import Limits
from citadel.domain.support import JudgeVerdict, SupportLabel, SupportPolicy
from tests.fakes.judge import judged_by
from tests.fakes.support import TableSupport
from tests.unit.test_answer_service import ACTOR, QUESTION, library, request
from tests.unit.test_answer_support import INVENTED, quote_and_invent


class World:
    def __init__(
        self,
        judge: SpanJudge | None = None,
        policy: SupportPolicy = SupportPolicy.LABEL,
        *,
        cache: bool = False,
        judged: bool = True,
    ) -> None:
        """``judge`` over the local table (default: one that contradicts every pair);
        ``judged=False``: the local table alone."""
        limits = Limits()
        self.lib: InMemoryLibrary = library()
        self.log = InMemoryAuditLog()
        local = TableSupport({INVENTED: SupportLabel.SUPPORTED})
        checker: SupportChecker = local
        if judged:
            checker = (
                judged_by(local, "contradicted", "contradicting-judge")
                if judge is None
                else JudgedSupportChecker(local, judge)
            )
        self.audit = AuditService(
            self.log,
            FixedClock("2026-12-03T00:00:00+00:00"),
            limits,
            support=local,
            chunks=self.lib,
        )
        metrics = CountingMetrics()
        self.service = AnswerService(
            SearchService(self.lib, self.lib, limits),
            ScriptedGenerator([quote_and_invent] * 4),
            limits,
            audit=self.audit,
            metrics=metrics,
            support=SupportStep(checker, policy, metrics),
            sources=self.lib if cache else None,
            cache=AnswerCache() if cache else None,
        )

    def ask(self) -> AnswerResult:
        return asyncio.run(self.service.answer(request(QUESTION), ACTOR))

    def record(self, answer_id: str) -> AuditRecord:
        entry = self.log.get(answer_id)
        assert entry is not None
        return AuditRecord.from_json(entry.body)

    def forge(self, answer_id: str, record: AuditRecord) -> None:
        self.log._entries = [
            dataclasses.replace(e, body=record.to_json()) if e.answer_id == answer_id else e
            for e in self.log._entries
        ]


def test_the_lowered_label_is_shown_and_the_verdict_recorded_with_its_model() -> None:
    world = World()
    result = world.ask()
    assert result.answer is not None
    assert [s.label for s in result.answer.segments] == [
        SupportLabel.VERBATIM,
        SupportLabel.CONTRADICTED,
    ]
    record = world.record(result.answer_id)
    invented_ref = record.citations[1].ref
    verdict = JudgeVerdict("contradicting-judge", SupportLabel.CONTRADICTED)
    assert record.judged == (JudgedCitation(1, invented_ref, verdict),)  # the quote was not sent
    assert record.support_checker == "table/1+judge/1/contradicting-judge"
    assert [c.support for c in record.citations] == ["verbatim", "contradicted"]
    assert AuditRecord.from_json(record.to_json()) == record


@pytest.mark.parametrize("policy", list(SupportPolicy))
def test_replay_applies_the_recorded_verdicts_and_holds(policy: SupportPolicy) -> None:
    world = World(policy=policy)
    result = world.ask()
    record = world.record(result.answer_id)
    assert len(record.judged) == 1, policy  # recorded when the segment was dropped or refused too
    report = world.audit.replay(result.answer_id, ACTOR)
    assert report.holds, (policy, report)


def test_a_verdict_removed_from_the_log_does_not_replay() -> None:
    world = World()
    result = world.ask()
    world.forge(result.answer_id, dataclasses.replace(world.record(result.answer_id), judged=()))
    report = world.audit.replay(result.answer_id, ACTOR)
    assert not report.holds and report.replayed == "accepted with other support labels"


def test_a_record_without_a_judge_has_no_judge_key() -> None:
    world = World(judged=False)
    result = world.ask()
    entry = world.log.get(result.answer_id)
    assert entry is not None
    assert "judge" not in json.loads(entry.body)["support"]
    assert world.record(result.answer_id).judged == ()
    assert world.audit.replay(result.answer_id, ACTOR).holds
