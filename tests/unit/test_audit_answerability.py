"""The audit record keeps the answerability decision (score, threshold, scorer); records
made before it (no ``answerability`` key) still read and the chain still verifies; and
``audit replay`` of a ``not_in_library`` record says what decided it."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from citadel.adapters.clock import FixedClock
from citadel.adapters.generators.scripted import ScriptedGenerator, cite_first
from citadel.adapters.memory import InMemoryAuditLog
from citadel.app.answer import AnswerService
from citadel.app.answerability import AnswerabilityStep
from citadel.app.audit import AuditService
from citadel.app.search import SearchService
from citadel.domain.answer import Answerability, AnswerResult
from citadel.domain.audit import AuditRecord, answer_record
from citadel.domain.limits import Limits
from citadel.domain.manifest import canonical_json
from citadel.entrypoints.cli.text import audit_text
from tests.fakes.relevance import TableRelevance
from tests.unit.test_answer_service import ACTOR, library, request


class World:
    def __init__(self, score: float) -> None:
        limits = Limits()
        lib = library()
        self.log = InMemoryAuditLog()
        self.audit = AuditService(
            self.log, FixedClock("2026-12-02T00:00:00+00:00"), limits, chunks=lib
        )
        self.generator = ScriptedGenerator([cite_first])
        self.service = AnswerService(
            SearchService(lib, lib, limits),
            self.generator,
            limits,
            audit=self.audit,
            relevance=AnswerabilityStep(TableRelevance({"": score}), 0.5),
        )

    def ask(self) -> AnswerResult:
        return asyncio.run(self.service.answer(request(), ACTOR))


def test_a_not_in_library_record_holds_the_decision_and_replays() -> None:
    world = World(score=0.25)
    result = world.ask()
    record = world.audit.show(result.answer_id, ACTOR)
    assert (record.verdict, record.reason) == ("degraded", "not_in_library")
    assert record.answerability == Answerability(0.25, 0.5, "table-relevance/1")
    assert record.manifest == () and record.output == "" and record.generator == ""
    body = json.loads(record.to_json())
    assert body["answerability"] == {"score": 0.25, "threshold": 0.5, "scorer": "table-relevance/1"}
    assert AuditRecord.from_json(record.to_json()) == record
    replay = world.audit.replay(result.answer_id, ACTOR)
    assert replay.holds and replay.replayed == "degraded: not_in_library"
    assert "score 0.2500 under threshold 0.5000 (table-relevance/1)" in replay.note
    assert "not answerable (score 0.25, threshold 0.50" in audit_text(record)
    assert world.audit.verify().intact


def test_an_answered_record_holds_the_decision_it_passed() -> None:
    world = World(score=0.75)
    result = world.ask()
    record = world.audit.show(result.answer_id, ACTOR)
    assert record.verdict == "accepted"
    assert record.answerability == Answerability(0.75, 0.5, "table-relevance/1")
    assert world.audit.replay(result.answer_id, ACTOR).holds


def test_a_replayed_not_in_library_record_without_its_decision_does_not_hold() -> None:
    world = World(score=0.25)
    result = world.ask()
    stored = answer_record(dataclasses.replace(result, answerability=None), ACTOR, "t")
    other = InMemoryAuditLog()
    other.append(stored.answer_id, stored.to_json())
    audit = AuditService(other, FixedClock("2026-12-02T00:00:00+00:00"), Limits())
    replay = audit.replay(stored.answer_id, ACTOR)
    assert not replay.holds and "no decision recorded" in replay.note


def test_records_made_before_the_decision_still_read_and_verify() -> None:
    world = World(score=0.75)
    new = world.ask()
    # A record as the log wrote it before the decision existed: no "answerability" key.
    older = answer_record(dataclasses.replace(new, answer_id="old-1"), ACTOR, "t")
    old_body = json.loads(older.to_json())
    del old_body["answerability"]
    world.log.append("old-1", canonical_json(old_body))
    world.ask()  # and one made after it
    assert world.audit.verify().intact
    old = world.audit.show("old-1", ACTOR)
    assert old.answerability is None and old.verdict == "accepted"
    assert world.audit.replay("old-1", ACTOR).holds
    assert "answerability: -" in audit_text(old)


def test_the_http_audit_reply_takes_every_key_the_record_stores() -> None:
    # The class of defect: the record gains a key and the reply model, which forbids
    # extra fields, turns every /v1/answers/{id}/audit call into a 500.
    from citadel.entrypoints.http.admin_replies import AuditRecordReply

    for score in (0.25, 0.75):
        world = World(score=score)
        record = world.audit.show(world.ask().answer_id, ACTOR)
        body = json.loads(record.to_json())
        reply = AuditRecordReply.model_validate(body)
        assert reply.answerability is not None and reply.answerability.score == score
        assert set(body) <= set(AuditRecordReply.model_fields)
