"""One contract for the AuditLog port, run against every adapter (the in-memory fake included).

The log as ``citadel.app.ports.AuditLog`` describes it: records are chained
after the last one, atomically, and never change once appended; each record's
hash is its MAC under the audit key, which the first append creates and which
``key()`` reports without ever creating; an answer is recorded once, under the
answer id its body names; the head is the record count, the last hash, the
first keyed record and the head's own MAC; and the application's own
verification finds the chain intact. A new adapter joins by adding its name to
the ``log`` fixture.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.generators.scripted import ScriptedGenerator, cite_first
from citadel.adapters.memory import InMemoryAuditLog
from citadel.adapters.postgres import database as postgres
from citadel.adapters.postgres.audit import PostgresAuditLog
from citadel.adapters.sqlite.audit import SqliteAuditLog
from citadel.adapters.sqlite.database import Database
from citadel.app.answer import AnswerService
from citadel.app.audit import AuditService
from citadel.app.ports import AuditLog
from citadel.app.search import SearchService
from citadel.domain.audit_chain import (
    GENESIS,
    KEY_BYTES,
    AuditEntry,
    AuditHead,
    head_mac,
    record_mac,
)
from citadel.domain.audit_verify import verify_chain
from citadel.domain.limits import Limits
from citadel.domain.manifest import canonical_json
from tests.unit.test_answer_service import ACTOR, library, request


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AuditLog]:
    if request.param == "sqlite":
        db = Database(tmp_path / "contract" / "audit.db")
        yield SqliteAuditLog(db)
        db.close()
    elif request.param == "postgresql":
        # A fresh database of its own (tests/postgres.py); skips saying why without a server.
        pg = postgres.Database(request.getfixturevalue("postgres_url"))
        yield PostgresAuditLog(pg, tmp_path / "contract" / "audit.key")
        pg.close()
    else:
        yield InMemoryAuditLog()


def body(answer_id: str, **fields: object) -> str:
    """A body as the audit service writes one: canonical JSON that names its answer."""
    return canonical_json({"answer_id": answer_id, **fields})


def audit(log: AuditLog) -> AuditService:
    return AuditService(log, FixedClock("2026-01-01T00:00:00+00:00"), Limits())


def appended(log: AuditLog, count: int) -> list[AuditEntry]:
    return [log.append(f"a{n}", body(f"a{n}", n=n)) for n in range(1, count + 1)]


def secret(log: AuditLog) -> bytes:
    key = log.key().secret
    assert key is not None
    return key


def test_an_empty_log_has_no_head_no_key_and_verifies(log: AuditLog) -> None:
    assert log.head() is None
    assert log.key().secret is None and log.key().trouble == ""
    assert list(log.entries()) == []
    assert log.get("a1") is None
    report = audit(log).verify()
    assert report.intact and report.records == 0
    assert log.key().secret is None  # verifying never makes a key


def test_the_first_append_makes_the_key_and_later_ones_keep_it(log: AuditLog) -> None:
    log.append("a1", body("a1"))
    key = secret(log)
    assert len(key) == KEY_BYTES
    log.append("a2", body("a2"))
    assert secret(log) == key


def test_each_record_is_chained_after_the_last_under_the_key(log: AuditLog) -> None:
    entries = appended(log, 3)
    key = secret(log)
    previous = GENESIS
    for seq, entry in enumerate(entries, start=1):
        assert entry.seq == seq
        assert entry.answer_id == f"a{seq}"
        assert entry.body == body(f"a{seq}", n=seq)
        assert entry.prev_hash == previous
        assert entry.hash == record_mac(key, previous, entry.body)
        previous = entry.hash
    last = entries[-1].hash
    assert log.head() == AuditHead(3, last, 1, head_mac(key, 3, last, 1))
    report = audit(log).verify()
    assert (report.keyed_from, report.unkeyed) == (1, 0)


def test_records_read_back_as_appended_oldest_first(log: AuditLog) -> None:
    entries = appended(log, 3)
    assert list(log.entries()) == entries
    for entry in entries:
        assert log.get(entry.answer_id) == entry
    assert log.get("a4") is None


def test_a_body_comes_back_byte_exact(log: AuditLog) -> None:
    text = 'Ünïcödé — 数据框 🧪 \\ "quoted" \u2028 and a tab\t'
    entry = log.append("a1", body("a1", text=text))
    assert log.get("a1") == entry
    assert [e.body for e in log.entries()] == [body("a1", text=text)]
    assert audit(log).verify().intact


def test_appending_never_changes_earlier_records(log: AuditLog) -> None:
    first = appended(log, 2)
    log.append("a3", body("a3"))
    log.append("a4", body("a4"))
    assert list(log.entries())[:2] == first


def test_an_answer_is_recorded_once(log: AuditLog) -> None:
    entries = appended(log, 2)
    head = log.head()
    for again in (body("a1", n=1), body("a1", n="another")):
        with pytest.raises(ValueError, match="already recorded"):
            log.append("a1", again)
    assert log.head() == head
    assert list(log.entries()) == entries
    assert log.get("a1") == entries[0]


@pytest.mark.parametrize(
    "stored",
    [
        body("a2"),
        body("A1"),
        canonical_json({"text": "names no answer"}),
        canonical_json({"answer_id": 1}),
        canonical_json(["a1"]),
        "not json",
        "",
    ],
    ids=[
        "another-answer",
        "another-case",
        "no-answer-id",
        "not-a-string",
        "a-list",
        "text",
        "empty",
    ],
)
def test_a_body_must_name_the_answer_it_is_filed_under(log: AuditLog, stored: str) -> None:
    with pytest.raises(ValueError, match="does not name"):
        log.append("a1", stored)
    assert log.head() is None and log.key().secret is None
    assert list(log.entries()) == []
    assert log.get("a1") is None and log.get("a2") is None


def test_a_refused_append_leaves_the_chain_intact(log: AuditLog) -> None:
    appended(log, 2)
    with pytest.raises(ValueError, match="does not name"):
        log.append("a3", body("a9"))
    with pytest.raises(ValueError, match="already recorded"):
        log.append("a2", body("a2"))
    entry = log.append("a3", body("a3"))
    assert entry.seq == 3
    report = audit(log).verify()
    assert report.intact and report.records == 3


def test_concurrent_appends_make_one_chain(log: AuditLog) -> None:
    def write(worker: int) -> None:
        for n in range(10):
            answer_id = f"w{worker}-{n}"
            log.append(answer_id, body(answer_id))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = list(log.entries())
    assert [e.seq for e in entries] == list(range(1, 41))
    assert len({e.answer_id for e in entries}) == 40
    head = log.head()
    assert head is not None and (head.count, head.hash) == (40, entries[-1].hash)
    assert audit(log).verify().intact


def test_a_snapshot_holds_its_moment_while_others_append(log: AuditLog) -> None:
    # Verifying while other servers append: the head and the records must be read as
    # one state, or a record appended in between looks like one past the head.
    appended(log, 3)
    with log.snapshot() as snap:
        partial = next(snap.entries)
        log.append("late", body("late"))  # before the snapshot's records are read on
        entries = [partial, *snap.entries]
        head = snap.head
    assert isinstance(head, AuditHead) and head.count == 3
    assert [e.seq for e in entries] == [1, 2, 3]
    assert verify_chain(iter(entries), head, log.key()).intact
    assert [e.answer_id for e in log.entries()][-1] == "late"


def test_verify_while_another_server_appends_finds_the_chain_intact(log: AuditLog) -> None:
    # Reading the head, then the records, let an append in between look like a
    # record past the head: "tampered" on a healthy log under load.
    appended(log, 20)
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            log.append(f"live{n}", body(f"live{n}"))

    writer = threading.Thread(target=write)
    writer.start()
    try:
        reports = [audit(log).verify() for _ in range(15)]
    finally:
        stop.set()
        writer.join()
    assert all(r.intact for r in reports), [r.problems for r in reports if not r.intact]
    assert reports[-1].records >= 20


def test_the_apps_verify_finds_the_chain_intact(log: AuditLog) -> None:
    appended(log, 5)
    report = audit(log).verify()
    assert report.intact and report.problems == () and report.records == 5


def test_answers_recorded_by_the_audit_service_show_verify_and_replay(log: AuditLog) -> None:
    service = audit(log)
    lib = library()
    limits = Limits()
    answers = AnswerService(
        SearchService(lib, lib, limits), ScriptedGenerator([cite_first]), limits, audit=service
    )
    results = [asyncio.run(answers.answer(request(), ACTOR)) for _ in range(2)]
    for result in results:
        record = service.show(result.answer_id, ACTOR)
        assert record.answer_id == result.answer_id and record.verdict == "accepted"
        assert service.replay(result.answer_id, ACTOR).holds
        stored = log.get(result.answer_id)
        assert stored is not None and stored.body == record.to_json()
    report = service.verify()
    assert report.intact and report.records == 2
