"""The audit log on PostgreSQL: one chain from many servers, and a table that refuses edits.

Appends from several processes, each with its own connection pool (as separate
citadel servers would be), form one chain that verifies; an append waits for the
database lock another server holds. UPDATE, DELETE and TRUNCATE on the table are
refused by the database itself, whoever asks. Users, sessions and records written
through one server are seen by another at once.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import psycopg
import pytest

from citadel.adapters.postgres.audit import APPEND_LOCK, PostgresAuditLog
from citadel.adapters.postgres.database import Connection, Database
from citadel.adapters.postgres.users import PostgresUsers
from citadel.app.audit import AuditService
from citadel.domain.audit_chain import GENESIS, UntrustedHead, record_mac
from citadel.domain.limits import Limits
from citadel.domain.manifest import canonical_json
from citadel.domain.users import Role, User, UserStatus

WORKERS = 4
PER_WORKER = 25


class _Clock:
    def now_iso(self) -> str:
        return "2024-01-01T00:00:00Z"


def body(answer_id: str) -> str:
    return canonical_json({"answer_id": answer_id})


def verify(log: PostgresAuditLog) -> tuple[bool, int, tuple[str, ...]]:
    report = AuditService(log, _Clock(), Limits()).verify()
    return report.intact, report.records, report.problems


@pytest.fixture
def db(postgres_url: str) -> Iterator[Database]:
    database = Database(postgres_url)
    yield database
    database.close()


@pytest.fixture
def log(db: Database, tmp_path: Path) -> PostgresAuditLog:
    log = PostgresAuditLog(db, tmp_path / "audit.key")
    for n in (1, 2, 3):
        log.append(f"a{n}", body(f"a{n}"))
    return log


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_log SET body = body || ' ' WHERE seq = 2",
        "UPDATE audit_log SET answer_id = 'forged' WHERE seq = 1",
        "UPDATE audit_log SET seq = seq + 10",
        "DELETE FROM audit_log WHERE seq = 3",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
    ],
)
def test_the_database_refuses_to_change_or_remove_a_record(
    log: PostgresAuditLog, postgres_url: str, statement: str
) -> None:
    before = list(log.entries())
    # The same role citadel connects as, the table's owner (a superuser here).
    with (
        psycopg.connect(postgres_url) as raw,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
    ):
        raw.execute(statement)
    assert list(log.entries()) == before
    assert verify(log) == (True, 3, ())


@pytest.mark.parametrize(
    "undo",
    [
        [],
        ["ALTER TABLE audit_log DISABLE TRIGGER USER"],
        [
            "DROP TRIGGER audit_log_no_change ON audit_log",
            "DROP TRIGGER audit_log_no_truncate ON audit_log",
        ],
    ],
    ids=["untouched", "disabled", "dropped"],
)
def test_a_server_opening_the_database_makes_the_table_append_only_again(
    log: PostgresAuditLog, postgres_url: str, tmp_path: Path, undo: list[str]
) -> None:
    with psycopg.connect(postgres_url) as raw:
        for statement in undo:
            raw.execute(statement.encode())
    again = Database(postgres_url)  # re-applies the schema: the triggers, enabled
    try:
        for statement in ("DELETE FROM audit_log WHERE seq = 1", "TRUNCATE audit_log"):
            with (
                psycopg.connect(postgres_url) as raw,
                pytest.raises(psycopg.errors.InsufficientPrivilege),
            ):
                raw.execute(statement.encode())
        other = PostgresAuditLog(again, tmp_path / "audit.key")
        assert other.append("a4", body("a4")).seq == 4
        assert [e.seq for e in log.entries()] == [1, 2, 3, 4]
    finally:
        again.close()


def test_an_append_waits_for_the_lock_another_server_holds(
    log: PostgresAuditLog, postgres_url: str
) -> None:
    done: list[int] = []
    with psycopg.connect(postgres_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        worker = threading.Thread(target=lambda: done.append(log.append("a4", body("a4")).seq))
        worker.start()
        time.sleep(0.5)
        assert worker.is_alive() and not done, "the append went ahead without the lock"
        assert [e.seq for e in log.entries()] == [1, 2, 3]
    # Leaving the block commits the other transaction, which releases the lock.
    worker.join(timeout=10)
    assert done == [4]
    assert verify(log) == (True, 4, ())


def _append_many(url: str, key_file: str, worker: int, start: object) -> None:
    """One server: its own pool, PER_WORKER appends as soon as every worker is ready."""
    db = Database(url, pool_size=2)
    try:
        log = PostgresAuditLog(db, Path(key_file))
        start.wait(timeout=60)  # type: ignore[attr-defined]
        for n in range(PER_WORKER):
            answer_id = f"w{worker}-{n:03d}"
            log.append(answer_id, body(answer_id))
    finally:
        db.close()


def test_appends_from_several_processes_form_one_chain(postgres_url: str, tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(WORKERS)
    key_file = tmp_path / "home" / "audit.key"
    processes = [
        context.Process(target=_append_many, args=(postgres_url, str(key_file), w, start))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * WORKERS
    db = Database(postgres_url)
    try:
        log = PostgresAuditLog(db, key_file)
        entries = list(log.entries())
        total = WORKERS * PER_WORKER
        assert [e.seq for e in entries] == list(range(1, total + 1))
        assert len({e.answer_id for e in entries}) == total
        # The servers' appends interleaved (they ran at once: a waiter gets the lock next) ...
        owners = [e.answer_id.split("-")[0] for e in entries]
        switches = sum(1 for a, b in pairwise(owners) if a != b)
        assert switches > WORKERS - 1, "the appends did not overlap: nothing was concurrent"
        # ... each server's records in the order it appended them, one chain throughout.
        for w in range(WORKERS):
            mine = [e.answer_id for e in entries if e.answer_id.startswith(f"w{w}-")]
            assert mine == [f"w{w}-{n:03d}" for n in range(PER_WORKER)]
        secret = log.key().secret
        assert secret is not None, "the first append made the one key every server shares"
        previous = GENESIS
        for entry in entries:
            assert entry.prev_hash == previous
            assert entry.hash == record_mac(secret, previous, entry.body)
            previous = entry.hash
        head = log.head()
        assert head is not None and (head.count, head.hash, head.keyed_from) == (
            total,
            previous,
            1,
        )
        assert verify(log) == (True, total, ())
    finally:
        db.close()


def test_a_server_without_the_key_refuses_to_append_to_a_keyed_chain(
    log: PostgresAuditLog, postgres_url: str, tmp_path: Path
) -> None:
    second = Database(postgres_url)
    try:
        elsewhere = PostgresAuditLog(second, tmp_path / "other-home" / "audit.key")
        with pytest.raises(UntrustedHead, match="audit key is missing"):
            elsewhere.append("a4", body("a4"))
        assert not (tmp_path / "other-home" / "audit.key").exists()
        assert verify(log) == (True, 3, ())
    finally:
        second.close()


def test_the_key_is_not_stored_in_the_database(log: PostgresAuditLog, postgres_url: str) -> None:
    secret = log.key().secret
    assert secret is not None
    with psycopg.connect(postgres_url) as raw:
        stored = "".join(
            str(value)
            for table in ("meta", "audit_log")
            for row in raw.execute(f"SELECT * FROM {table}").fetchall()
            for value in row
        )
    assert secret.hex() not in stored


class _CommitTrouble(Database):
    """The real database, whose next write transaction fails at its commit: ``lost``,
    the commit goes through but the client hears of it as a lost connection;
    otherwise it fails and the transaction rolls back."""

    def __init__(self, url: str, *, lost: bool) -> None:
        super().__init__(url)
        self.lost = lost
        self.armed = True

    @contextmanager
    def transaction(self, *, library: bool = True) -> Iterator[Connection]:
        with super().transaction(library=library) as conn:
            yield conn
            if self.armed and not self.lost:
                self.armed = False
                raise psycopg.OperationalError("could not commit")
        if self.armed:
            self.armed = False
            raise psycopg.OperationalError("server closed the connection unexpectedly")


@pytest.mark.parametrize("lost", [True, False], ids=["commit-lost", "commit-failed"])
def test_a_first_append_whose_commit_fails_keeps_the_key_only_if_the_record_is_stored(
    postgres_url: str, tmp_path: Path, lost: bool
) -> None:
    db = _CommitTrouble(postgres_url, lost=lost)
    key_file = tmp_path / "audit.key"
    try:
        log = PostgresAuditLog(db, key_file)
        with pytest.raises(psycopg.OperationalError):
            log.append("a1", body("a1"))
        # A key that keyed a stored record is kept (without it the record could never
        # be verified); one that keyed nothing goes, so the next append makes the key.
        assert key_file.exists() is lost
        assert [e.answer_id for e in log.entries()] == (["a1"] if lost else [])
        log.append("a2", body("a2"))
        assert verify(log) == (True, 2 if lost else 1, ())
    finally:
        db.close()


def ada() -> User:
    return User(
        name="ada",
        tenant="acme",
        role=Role.READER,
        groups=frozenset({"ops"}),
        status=UserStatus.ACTIVE,
        created_at="2026-01-01T00:00:00+00:00",
    )


def test_user_writes_leave_the_library_generation_alone(db: Database) -> None:
    users = PostgresUsers(db)
    before = db.generation()
    users.add(ada(), "hash-ada")
    users.set_status("ada", UserStatus.DISABLED)
    users.set_token("ada", "hash-ada-2")
    users.end_session("s1", expires_at=2_000, now=1_000)
    assert db.generation() == before


def test_a_user_disabled_or_signed_out_through_one_server_is_seen_by_another(
    db: Database, postgres_url: str
) -> None:
    one = PostgresUsers(db)
    second = Database(postgres_url)
    try:
        other = PostgresUsers(second)
        one.add(ada(), "hash-ada")
        assert other.get("ada") == ada()
        one.set_status("ada", UserStatus.DISABLED)
        found = other.by_token("hash-ada")
        assert found is not None and found.user.status is UserStatus.DISABLED
        one.end_session("s1", expires_at=2_000, now=1_000)
        assert other.session_ended("s1")
    finally:
        second.close()


def test_users_and_ended_sessions_survive_a_reopened_database(postgres_url: str) -> None:
    first = Database(postgres_url)
    PostgresUsers(first).add(ada(), "hash-ada")
    PostgresUsers(first).end_session("s1", expires_at=2_000, now=1_000)
    first.close()
    again = Database(postgres_url)
    try:
        assert PostgresUsers(again).get("ada") == ada()
        assert PostgresUsers(again).session_ended("s1")
    finally:
        again.close()


def test_users_list_in_byte_order_as_sqlite_does(db: Database) -> None:
    users = PostgresUsers(db)
    names = ["bo", "Zed", "ada", "Émile", "_x", "Ada"]
    for name in names:
        users.add(dataclasses.replace(ada(), name=name), f"hash-{name}")
    assert [u.name for u in users.list()] == sorted(names)
    assert [u.name for u in users.list("acme")] == sorted(names)
