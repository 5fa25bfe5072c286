"""Tampering with the audit log in PostgreSQL directly: every column, the head, whole rows.

The PostgreSQL counterpart of ``test_audit_tamper.py``. The tamperer has the
database's rights but not the audit key (a file in CITADEL_HOME): the table
refuses UPDATE, DELETE and TRUNCATE, so they disable its triggers first, as the
table's owner may, then edit, remove or add rows, change a column's type, or
rewrite the head in meta. ``audit verify`` must report a broken chain, naming the
problem, and never crash; a lookup goes by what a record's hashed body says;
appending after a head the key does not vouch for is refused.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from citadel.adapters.postgres.audit import PostgresAuditLog
from citadel.adapters.postgres.database import Database
from citadel.app.audit import AuditService
from citadel.domain.audit_chain import (
    GENESIS,
    AuditHead,
    MalformedHead,
    UntrustedHead,
    chain_hash,
    format_head,
    keyed_head,
    record_mac,
)
from citadel.domain.limits import Limits
from citadel.domain.manifest import canonical_json
from tests import postgres

HEX = "ab" * 32
COLUMNS = "seq, answer_id, body, prev_hash, hash"
HEAD = "SELECT value FROM meta WHERE key = 'audit_head'"


class _Clock:
    def now_iso(self) -> str:
        return "2024-01-01T00:00:00Z"


@dataclass(frozen=True)
class Pristine:
    """A database holding three records (and its key), as first appended."""

    url: str
    key_file: Path
    key: bytes
    rows: list[tuple[object, ...]]
    head: str


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    # One database for the module's edits of rows and the head, put back before each
    # test (a fresh database per test would cost most of the module's time).
    url = postgres.server().fresh_database()
    key_file = tmp_path_factory.mktemp("home") / "audit.key"
    db = Database(url)
    log = PostgresAuditLog(db, key_file)
    for n in (1, 2, 3):
        log.append(f"a{n}", canonical_json({"answer_id": f"a{n}", "n": n}))
    db.close()
    with psycopg.connect(url) as raw:
        rows = raw.execute(f"SELECT {COLUMNS} FROM audit_log ORDER BY seq").fetchall()
        (head,) = raw.execute(HEAD).fetchone() or ("",)
    return Pristine(url, key_file, key_file.read_bytes(), rows, head)


@pytest.fixture
def log(pristine: Pristine) -> Iterator[PostgresAuditLog]:
    """The pristine records back in place (and the key), on a pool of its own."""
    tamper(pristine.url, "TRUNCATE audit_log", "DELETE FROM meta WHERE key = 'audit_head'")
    with psycopg.connect(pristine.url) as raw:
        raw.cursor().executemany(
            f"INSERT INTO audit_log({COLUMNS}) VALUES (%s, %s, %s, %s, %s)", pristine.rows
        )
        raw.execute("INSERT INTO meta(key, value) VALUES ('audit_head', %s)", (pristine.head,))
    pristine.key_file.write_bytes(pristine.key)
    db = Database(pristine.url, pool_size=2)
    yield PostgresAuditLog(db, pristine.key_file)
    db.close()


@pytest.fixture
def fresh_log(postgres_url: str, tmp_path: Path) -> Iterator[PostgresAuditLog]:
    """Three records in a database of their own (for edits of the table itself)."""
    db = Database(postgres_url)
    log = PostgresAuditLog(db, tmp_path / "audit.key")
    for n in (1, 2, 3):
        log.append(f"a{n}", canonical_json({"answer_id": f"a{n}", "n": n}))
    yield log
    db.close()


def tamper(url: str, *statements: str) -> None:
    """Run ``statements`` in one transaction with the table's triggers disabled."""
    with psycopg.connect(url) as raw:
        raw.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
        for statement in statements:
            raw.execute(statement.encode())
        raw.execute("ALTER TABLE audit_log ENABLE TRIGGER USER")


def verify(log: PostgresAuditLog) -> tuple[bool, tuple[str, ...]]:
    report = AuditService(log, _Clock(), Limits()).verify()
    return report.intact, report.problems


def test_the_untouched_log_verifies(log: PostgresAuditLog) -> None:
    assert verify(log) == (True, ())


@pytest.mark.parametrize(
    "change",
    [
        "answer_id = 'forged'",
        "answer_id = 'a2 '",
        "answer_id = upper(answer_id)",
        "body = body || ' '",
        "body = replace(body, '\"n\":', '\"n\":1')",
        "body = (body::jsonb)::text",
        "prev_hash = '" + HEX + "'",
        "prev_hash = ' ' || prev_hash",
        "hash = '" + HEX + "'",
        "hash = ''",
        "seq = 7",
        "seq = -seq",
    ],
)
@pytest.mark.parametrize("seq", [1, 2, 3])
def test_a_change_to_any_column_of_any_row_is_detected(
    log: PostgresAuditLog, pristine: Pristine, change: str, seq: int
) -> None:
    tamper(pristine.url, f"UPDATE audit_log SET {change} WHERE seq = {seq}")
    intact, problems = verify(log)
    assert not intact and problems, change
    # Looking a record up scans the bodies on a miss: a tampered row must not break it.
    assert log.get("no-such-answer") is None


@pytest.mark.parametrize("column", ["answer_id", "body", "prev_hash", "hash"])
@pytest.mark.parametrize("seq", [1, 3])
def test_a_column_made_null_is_detected(
    fresh_log: PostgresAuditLog, postgres_url: str, column: str, seq: int
) -> None:
    tamper(
        postgres_url,
        f"ALTER TABLE audit_log ALTER COLUMN {column} DROP NOT NULL",
        f"UPDATE audit_log SET {column} = NULL WHERE seq = {seq}",
    )
    intact, problems = verify(fresh_log)
    assert not intact and problems
    assert fresh_log.get("no-such-answer") is None


@pytest.mark.parametrize(
    "alter",
    [
        # The same values, stored as another type.
        "body TYPE bytea USING convert_to(body, 'UTF8')",
        "body TYPE jsonb USING body::jsonb",
        "hash TYPE bytea USING decode(hash, 'hex')",
        "prev_hash TYPE bytea USING decode(prev_hash, 'hex')",
        "answer_id TYPE bytea USING convert_to(answer_id, 'UTF8')",
    ],
)
def test_a_column_stored_as_another_type_is_detected(
    fresh_log: PostgresAuditLog, postgres_url: str, alter: str
) -> None:
    tamper(postgres_url, f"ALTER TABLE audit_log ALTER COLUMN {alter}")
    intact, problems = verify(fresh_log)
    assert not intact and problems, alter
    assert fresh_log.get("no-such-answer") is None


def test_a_forged_answer_id_is_named_and_a_lookup_goes_by_the_body(
    log: PostgresAuditLog, pristine: Pristine
) -> None:
    tamper(pristine.url, "UPDATE audit_log SET answer_id = 'forged' WHERE seq = 2")
    intact, problems = verify(log)
    assert not intact
    assert any("record 2 (forged)" in p and "a2" in p for p in problems)
    found = log.get("a2")
    assert found is not None and found.seq == 2 and found.answer_id == "forged"
    assert log.get("forged") is None
    first = log.get("a1")
    assert first is not None and first.seq == 1


def test_a_body_swap_between_rows_is_detected(log: PostgresAuditLog, pristine: Pristine) -> None:
    # Swap two rows' ids and bodies wholesale (each row stays self-consistent) ...
    tamper(
        pristine.url,
        "UPDATE audit_log SET answer_id = 'x' || answer_id WHERE seq IN (1, 2)",
        "UPDATE audit_log SET seq = 9 WHERE seq = 1",
        "UPDATE audit_log SET seq = 1 WHERE seq = 2",
        "UPDATE audit_log SET seq = 2 WHERE seq = 9",
    )
    intact, problems = verify(log)
    assert not intact and any("does not follow" in p for p in problems)


@pytest.mark.parametrize(
    ("statements", "reason"),
    [
        (["DELETE FROM audit_log WHERE seq = 2"], "does not follow"),
        (["DELETE FROM audit_log WHERE seq = 1"], "missing"),
        (["DELETE FROM audit_log WHERE seq = 3"], "removed"),
        (["TRUNCATE audit_log"], "removed"),
    ],
)
def test_a_removed_record_is_detected(
    log: PostgresAuditLog, pristine: Pristine, statements: list[str], reason: str
) -> None:
    tamper(pristine.url, *statements)
    intact, problems = verify(log)
    assert not intact and any(reason in p for p in problems), problems


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("x", "malformed"),
        ("", "malformed"),
        ("3", "malformed"),
        ("3:", "malformed"),
        (f"three:{HEX}", "malformed"),
        (f"3:{HEX}:extra", "malformed"),
        (f"-3:{HEX}", "malformed"),
        (f"{'9' * 30}:{HEX}", "malformed"),
        (f"5:{HEX}", "removed"),
        (f"2:{HEX}", "added outside"),
        (f"3:{HEX}", "hash of its last record"),
        (f"0:{GENESIS}", "added outside"),
    ],
)
def test_a_malformed_or_wrong_head_is_a_broken_chain(
    log: PostgresAuditLog, pristine: Pristine, value: str, reason: str
) -> None:
    tamper(pristine.url, f"UPDATE meta SET value = '{value}' WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact
    assert any("head" in p and reason in p for p in problems), problems
    if reason == "malformed":
        # Appending after an unreadable head is refused, not chained onto garbage.
        with pytest.raises(MalformedHead):
            log.append("a4", canonical_json({"answer_id": "a4"}))


def test_a_missing_head_is_a_broken_chain(log: PostgresAuditLog, pristine: Pristine) -> None:
    tamper(pristine.url, "DELETE FROM meta WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact and any("no head" in p for p in problems)
    with pytest.raises(MalformedHead, match="no head"):
        log.append("a4", canonical_json({"answer_id": "a4"}))


def test_an_empty_log_without_a_head_but_with_a_key_is_a_broken_chain(
    log: PostgresAuditLog, pristine: Pristine
) -> None:
    tamper(pristine.url, "TRUNCATE audit_log", "DELETE FROM meta WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact and any("records and head were removed" in p for p in problems)
    # The next answer does not make the emptied log look new.
    with pytest.raises(UntrustedHead, match="no head"):
        log.append("a4", canonical_json({"answer_id": "a4"}))


def test_appending_after_a_rewritten_head_is_refused(
    log: PostgresAuditLog, pristine: Pristine
) -> None:
    tamper(
        pristine.url,
        "DELETE FROM audit_log WHERE seq = 3",
        "UPDATE meta SET value = '2:' || (SELECT hash FROM audit_log WHERE seq = 2)"
        " WHERE key = 'audit_head'",
    )
    with pytest.raises(UntrustedHead, match="unkeyed"):
        log.append("a4", canonical_json({"answer_id": "a4"}))
    intact, problems = verify(log)
    assert not intact and any("rewritten" in p for p in problems)
    assert [e.seq for e in log.entries()] == [1, 2]


@pytest.mark.parametrize("how", ["sha256", "another-key"])
def test_a_forged_record_with_a_recomputed_hash_and_head_is_detected(
    log: PostgresAuditLog, pristine: Pristine, how: str
) -> None:
    last = log.get("a3")
    assert last is not None
    forged_body = canonical_json({"answer_id": "forged-answer", "n": 4})
    other = secrets.token_bytes(32)
    if how == "sha256":
        digest = chain_hash(last.hash, forged_body)
        head = format_head(AuditHead(4, digest))
    else:
        digest = record_mac(other, last.hash, forged_body)
        head = format_head(keyed_head(other, 4, digest, 1))
    tamper(
        pristine.url,
        "INSERT INTO audit_log(seq, answer_id, body, prev_hash, hash)"
        f" VALUES (4, 'forged-answer', '{forged_body}', '{last.hash}', '{digest}')",
        f"UPDATE meta SET value = '{head}' WHERE key = 'audit_head'",
    )
    intact, problems = verify(log)
    assert not intact
    assert any("record 4 (forged-answer) was altered" in p for p in problems), problems


def test_a_keyed_log_whose_key_is_missing_refuses_appends_and_makes_no_new_key(
    log: PostgresAuditLog, pristine: Pristine
) -> None:
    key_file = pristine.key_file
    key_file.unlink()
    with pytest.raises(UntrustedHead, match="audit key is missing"):
        log.append("a4", canonical_json({"answer_id": "a4"}))
    assert not key_file.exists()
    intact, problems = verify(log)
    assert not intact
    assert problems == (
        f"the audit key is missing ({key_file}): records 1–3 are keyed and cannot be"
        " verified without it; restore the key from a backup",
    )


def test_a_short_key_file_is_named(log: PostgresAuditLog, pristine: Pristine) -> None:
    pristine.key_file.write_bytes(b"short")
    intact, problems = verify(log)
    assert not intact and any("fewer than 32 bytes" in p for p in problems)
    with pytest.raises(ValueError, match="cannot be used"):
        log.append("a4", canonical_json({"answer_id": "a4"}))


def test_a_library_from_before_keying_is_anchored_by_its_first_keyed_record(
    postgres_url: str, tmp_path: Path
) -> None:
    """Records copied in unkeyed (a library migrated from before keying) stay checkable."""
    db = Database(postgres_url)
    try:
        log = PostgresAuditLog(db, tmp_path / "audit.key")
        hashes, last = [], GENESIS
        rows = []
        for n in (1, 2):
            body = canonical_json({"answer_id": f"old{n}", "n": n})
            last = chain_hash(last, body)
            hashes.append(last)
            rows.append(
                f"({n}, 'old{n}', '{body}', '{GENESIS if n == 1 else hashes[0]}', '{last}')"
            )
        unkeyed = format_head(AuditHead(2, last))
        tamper(
            postgres_url,
            "INSERT INTO audit_log(seq, answer_id, body, prev_hash, hash) VALUES "
            + ", ".join(rows),
            f"INSERT INTO meta(key, value) VALUES ('audit_head', '{unkeyed}')",
        )
        report = AuditService(log, _Clock(), Limits()).verify()
        assert not report.intact and report.unkeyed == 2
        entry = log.append("a3", canonical_json({"answer_id": "a3"}))
        assert (entry.seq, entry.prev_hash) == (3, hashes[-1])
        report = AuditService(log, _Clock(), Limits()).verify()
        assert report.intact and (report.records, report.keyed_from, report.unkeyed) == (3, 3, 2)
        # Rewriting an old record, its chain rehashed and relinked, now shows.
        body = canonical_json({"answer_id": "old1", "n": "forged"})
        first = chain_hash(GENESIS, body)
        second = chain_hash(first, canonical_json({"answer_id": "old2", "n": 2}))
        tamper(
            postgres_url,
            f"UPDATE audit_log SET body = '{body}', hash = '{first}' WHERE seq = 1",
            f"UPDATE audit_log SET prev_hash = '{first}', hash = '{second}' WHERE seq = 2",
            f"UPDATE audit_log SET prev_hash = '{second}' WHERE seq = 3",
        )
        intact, problems = verify(log)
        assert not intact and any("record 3 (a3) was altered" in p for p in problems)
    finally:
        db.close()
