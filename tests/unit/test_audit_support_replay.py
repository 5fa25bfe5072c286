"""The audit record keeps each shown citation's support, and ``audit replay`` recomputes
it from the stored passages under the recorded policy: a label changed in the log, a
passage changed in the store, or a checker that now disagrees does not hold."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from citadel.adapters.clock import FixedClock
from citadel.adapters.generators.scripted import ScriptedGenerator
from citadel.adapters.memory import InMemoryAuditLog, InMemoryLibrary
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.app.answer import AnswerService
from citadel.app.audit import AuditService
from citadel.app.search import SearchService
from citadel.app.support import SupportStep
from citadel.domain.answer import AnswerResult
from citadel.domain.audit import AuditRecord
from citadel.domain.limits import Limits
from citadel.domain.support import SupportLabel, SupportPolicy
from tests.fakes.support import TableSupport
from tests.unit.test_answer_service import ACTOR, QUESTION, library, request
from tests.unit.test_answer_support import CHECKER_LABELS, INVENTED, quote_and_invent


class World:
    def __init__(
        self, policy: SupportPolicy, *, quotes: bool = False, quoting: frozenset[str] = frozenset()
    ) -> None:
        self.limits = Limits()
        self.lib: InMemoryLibrary = library()
        self.log = InMemoryAuditLog()
        self.checker = TableSupport(CHECKER_LABELS)
        self.audit = AuditService(
            self.log,
            FixedClock("2026-12-01T00:00:00+00:00"),
            self.limits,
            support=self.checker,
            chunks=self.lib,
            quoting=quoting,
        )
        metrics = CountingMetrics()
        self.service = AnswerService(
            SearchService(self.lib, self.lib, self.limits),
            ScriptedGenerator([quote_and_invent] * 2, quotes=quotes),
            self.limits,
            audit=self.audit,
            metrics=metrics,
            support=SupportStep(self.checker, policy, metrics),
        )

    def ask(self) -> AnswerResult:
        return asyncio.run(self.service.answer(request(QUESTION), ACTOR))


def test_the_record_holds_each_citations_label_checker_and_policy() -> None:
    world = World(SupportPolicy.LABEL)
    result = world.ask()
    record = world.audit.show(result.answer_id, ACTOR)
    assert record.support_checker == "table/1" and record.support_policy == "label"
    assert [c.support for c in record.citations] == ["verbatim", "unsupported"]
    quoted = record.citations[0]
    assert quoted.span is not None and quoted.score == 1.0
    # The record survives its own JSON; it holds no passage text beyond what the
    # output quoted (the support data are labels, scores and offsets).
    assert AuditRecord.from_json(record.to_json()) == record
    assert result.answer is not None
    quoted_text = result.answer.segments[0].text
    others = [e.passage for e in result.search.results if e.passage != quoted_text]
    assert others and not any(p in record.to_json() for p in others)


def test_replay_recomputes_the_labels_and_holds() -> None:
    for policy in SupportPolicy:
        world = World(policy)
        result = world.ask()
        report = world.audit.replay(result.answer_id, ACTOR)
        assert report.holds, (policy, report)


def test_replay_decides_a_quoting_generators_answer_as_it_was_decided() -> None:
    # Live, a quoting generator's non-verbatim segment is dropped even under "label";
    # replay must drop it too, or the record would not hold against its own answer.
    for policy in SupportPolicy:
        world = World(policy, quotes=True, quoting=frozenset({"scripted"}))
        result = world.ask()
        assert result.answer is None or len(result.answer.segments) == 1, policy
        report = world.audit.replay(result.answer_id, ACTOR)
        assert report.holds, (policy, report)
    unaware = World(SupportPolicy.LABEL, quotes=True)  # replay not told it quotes
    assert not unaware.audit.replay(unaware.ask().answer_id, ACTOR).holds


def test_a_label_rewritten_in_the_log_does_not_hold() -> None:
    world = World(SupportPolicy.LABEL)
    result = world.ask()
    entry = world.log.get(result.answer_id)
    assert entry is not None
    body = json.loads(entry.body)
    body["citations"][1]["support"]["label"] = "supported"
    forged = AuditRecord.from_json(json.dumps(body))
    assert [c.support for c in forged.citations] == ["verbatim", "supported"]
    # The tamper an attacker with the database would do (``audit verify`` also sees it).
    world.log._entries = [
        dataclasses.replace(e, body=forged.to_json()) if e.answer_id == result.answer_id else e
        for e in world.log._entries
    ]
    report = world.audit.replay(result.answer_id, ACTOR)
    assert not report.holds
    assert report.replayed == "accepted with other support labels"


def test_a_checker_that_now_disagrees_does_not_hold_and_says_so() -> None:
    world = World(SupportPolicy.LABEL)
    result = world.ask()
    world.checker._labels[INVENTED] = SupportLabel.SUPPORTED
    world.checker.name = "table/2"
    report = world.audit.replay(result.answer_id, ACTOR)
    assert not report.holds
    assert "table/1" in report.note and "table/2" in report.note


def test_a_passage_changed_in_the_store_cannot_be_rechecked() -> None:
    world = World(SupportPolicy.LABEL)
    result = world.ask()
    assert result.answer is not None
    cited = result.answer.segments[0].citations[0]
    stored = world.lib.passages([cited.chunk_id])[cited.chunk_id]
    world.lib._chunks[cited.chunk_id] = dataclasses.replace(stored.chunk, text="Other words.")
    report = world.audit.replay(result.answer_id, ACTOR)
    assert not report.holds and report.replayed == "passage gone"
