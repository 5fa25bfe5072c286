"""Tampering with the audit log's SQLite file directly: every column, and the head.

A tamperer with write access to the file (but not to the audit key beside it)
drops the append-only triggers and edits, removes or adds rows, or rewrites
the head in meta. ``audit verify`` must report a broken chain, naming the
problem, and never crash; ``audit show`` goes by what a record's hashed body
says, not by a column that can be rewritten. Appending after a head the key
does not vouch for is refused, so the next answer cannot hide a removal.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.sqlite.audit import SqliteAuditLog
from citadel.adapters.sqlite.database import Database
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
from tests.integration.test_citation_links import ask, cli, ingest

HEX = "ab" * 32


class _Clock:
    def now_iso(self) -> str:
        return "2024-01-01T00:00:00Z"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "audit.db"


@pytest.fixture
def log(path: Path) -> Iterator[SqliteAuditLog]:
    db = Database(path)
    log = SqliteAuditLog(db)
    for n in (1, 2, 3):
        log.append(f"a{n}", canonical_json({"answer_id": f"a{n}", "n": n}))
    yield log
    db.close()


def tamper(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TRIGGER IF EXISTS audit_log_no_update")
        raw.execute("DROP TRIGGER IF EXISTS audit_log_no_delete")
        for statement in statements:
            raw.execute(statement)
    raw.close()


def verify(log: SqliteAuditLog) -> tuple[bool, tuple[str, ...]]:
    report = AuditService(log, _Clock(), Limits()).verify()
    return report.intact, report.problems


def test_the_untouched_log_verifies(log: SqliteAuditLog) -> None:
    assert verify(log) == (True, ())


@pytest.mark.parametrize(
    "change",
    [
        "answer_id = 'forged'",
        "answer_id = 'a2 '",
        "body = body || ' '",
        "body = replace(body, '\"n\":', '\"n\":1')",
        "prev_hash = '" + HEX + "'",
        "hash = '" + HEX + "'",
        "seq = 7",
        # The same text, stored as another type or as bytes that are not UTF-8.
        "body = CAST(body AS BLOB)",
        "answer_id = CAST(answer_id AS BLOB)",
        "hash = CAST(hash AS BLOB)",
        "prev_hash = 5",
        "answer_id = CAST(x'ff' AS TEXT)",
        "body = CAST(x'7bff7d' AS TEXT)",
    ],
)
@pytest.mark.parametrize("seq", [1, 2, 3])
def test_a_change_to_any_column_of_any_row_is_detected(
    log: SqliteAuditLog, path: Path, change: str, seq: int
) -> None:
    tamper(path, f"UPDATE audit_log SET {change} WHERE seq = {seq}")
    intact, problems = verify(log)
    assert not intact and problems, change
    # Looking a record up scans the bodies on a miss: a tampered row must not break it.
    assert log.get("no-such-answer") is None


def test_a_forged_answer_id_is_named_and_show_goes_by_the_body(
    log: SqliteAuditLog, path: Path
) -> None:
    tamper(path, "UPDATE audit_log SET answer_id = 'forged' WHERE seq = 2")
    intact, problems = verify(log)
    assert not intact
    assert any("record 2 (forged)" in p and "a2" in p for p in problems)
    # The row is found by what its hashed body says, and not under the forged id.
    found = log.get("a2")
    assert found is not None and found.seq == 2 and found.answer_id == "forged"
    assert log.get("forged") is None
    assert log.get("a1") is not None and log.get("a1").seq == 1  # type: ignore[union-attr]


def test_a_body_swap_between_rows_is_detected(log: SqliteAuditLog, path: Path) -> None:
    # Swap two rows' ids and bodies wholesale (each row stays self-consistent) ...
    tamper(
        path,
        "UPDATE audit_log SET answer_id = 'x' || answer_id WHERE seq IN (1, 2)",
        "UPDATE audit_log SET seq = 9 WHERE seq = 1",
        "UPDATE audit_log SET seq = 1 WHERE seq = 2",
        "UPDATE audit_log SET seq = 2 WHERE seq = 9",
    )
    intact, problems = verify(log)
    assert not intact and any("does not follow" in p for p in problems)


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
    log: SqliteAuditLog, path: Path, value: str, reason: str
) -> None:
    tamper(path, f"UPDATE meta SET value = '{value}' WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact
    assert any("head" in p and reason in p for p in problems), problems
    if reason == "malformed":
        # Appending after an unreadable head is refused, not chained onto garbage.
        with pytest.raises(MalformedHead):
            log.append("a4", canonical_json({"answer_id": "a4"}))


@pytest.mark.parametrize("value", ["CAST('3:' AS BLOB)", "3", "3.5"])
def test_a_head_stored_as_another_type_is_a_broken_chain(
    log: SqliteAuditLog, path: Path, value: str
) -> None:
    tamper(path, f"UPDATE meta SET value = {value} WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact and any("head" in p for p in problems)


def test_a_missing_head_is_a_broken_chain(log: SqliteAuditLog, path: Path) -> None:
    tamper(path, "DELETE FROM meta WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact and any("no head" in p for p in problems)


def test_an_empty_log_without_a_head_verifies(path: Path) -> None:
    db = Database(path)
    try:
        assert verify(SqliteAuditLog(db)) == (True, ())
    finally:
        db.close()


def test_a_body_that_names_another_answer_is_not_appended(log: SqliteAuditLog) -> None:
    with pytest.raises(ValueError, match="does not name"):
        log.append("a4", canonical_json({"answer_id": "a5"}))
    head = log.head()
    assert head is not None and head.count == 3


# Through the real CLI, on the library's own file.


def asked(tmp_path: Path, times: int) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    ids = [ask(home)["answer_id"] for _ in range(times)]
    verified = cli("audit", "verify", "--home", str(home), "--json")
    assert verified.exit_code == 0, verified.stderr
    assert json.loads(verified.stdout)["intact"] is True
    return home, ids


def verify_cli(home: Path) -> dict[str, object]:
    # catch_exceptions=False: a traceback fails the test instead of becoming exit code 1.
    outcome = cli("audit", "verify", "--home", str(home), "--json")
    assert outcome.exit_code == 1, (outcome.stdout, outcome.stderr)
    assert "Traceback" not in outcome.stderr
    report: dict[str, object] = json.loads(outcome.stdout)
    assert report["intact"] is False
    return report


def test_cli_verify_detects_a_forged_answer_id_and_show_still_finds_the_record(
    tmp_path: Path,
) -> None:
    home, ids = asked(tmp_path, 2)
    tamper(
        home / "citadel.db",
        f"UPDATE audit_log SET answer_id = 'forged' WHERE answer_id = '{ids[0]}'",
    )
    report = verify_cli(home)
    problems = report["problems"]
    assert isinstance(problems, list)
    assert any("forged" in p and ids[0] in p for p in problems)
    shown = cli("audit", "show", "--home", str(home), "--json", ids[0])
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["answer_id"] == ids[0]
    assert cli("audit", "show", "--home", str(home), "--json", "forged").exit_code == 1
    # The text rendering says the same, without a traceback.
    text = cli("audit", "verify", "--home", str(home))
    assert text.exit_code == 1 and "NOT intact" in text.stdout and "forged" in text.stdout


@pytest.mark.parametrize("value", ["x", "", "2", "abc:def", "1:x:y", "99:" + HEX])
def test_cli_verify_reports_a_malformed_head_as_a_broken_chain(tmp_path: Path, value: str) -> None:
    home, _ = asked(tmp_path, 1)
    tamper(home / "citadel.db", f"UPDATE meta SET value = '{value}' WHERE key = 'audit_head'")
    report = verify_cli(home)
    problems = report["problems"]
    assert isinstance(problems, list) and any("head" in p for p in problems)
    assert report["records"] == 1


def test_cli_verify_reports_a_missing_head_as_a_broken_chain(tmp_path: Path) -> None:
    home, _ = asked(tmp_path, 1)
    tamper(home / "citadel.db", "DELETE FROM meta WHERE key = 'audit_head'")
    report = verify_cli(home)
    problems = report["problems"]
    assert isinstance(problems, list) and any("no head" in p for p in problems)


def test_an_empty_log_without_a_head_but_with_a_key_is_a_broken_chain(
    log: SqliteAuditLog, path: Path
) -> None:
    tamper(path, "DELETE FROM audit_log", "DELETE FROM meta WHERE key = 'audit_head'")
    intact, problems = verify(log)
    assert not intact and any("records and head were removed" in p for p in problems)
    # The next answer does not make the emptied log look new.
    with pytest.raises(UntrustedHead, match="no head"):
        log.append("a4", canonical_json({"answer_id": "a4"}))


def test_appending_after_a_rewritten_head_is_refused(log: SqliteAuditLog, path: Path) -> None:
    tamper(
        path,
        "DELETE FROM audit_log WHERE seq = 3",
        "UPDATE meta SET value = '2:' || (SELECT hash FROM audit_log WHERE seq = 2)"
        " WHERE key = 'audit_head'",
    )
    with pytest.raises(UntrustedHead, match="unkeyed"):
        log.append("a4", canonical_json({"answer_id": "a4"}))
    intact, problems = verify(log)
    assert not intact and any("rewritten" in p for p in problems)
    assert [e.seq for e in log.entries()] == [1, 2]


def test_a_keyed_log_whose_key_is_missing_refuses_appends_and_makes_no_new_key(
    log: SqliteAuditLog, path: Path
) -> None:
    key_file = path.parent / "audit.key"
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


def test_a_short_key_file_is_named(log: SqliteAuditLog, path: Path) -> None:
    (path.parent / "audit.key").write_bytes(b"short")
    intact, problems = verify(log)
    assert not intact and any("fewer than 32 bytes" in p for p in problems)
    with pytest.raises(ValueError, match="cannot be used"):
        log.append("a4", canonical_json({"answer_id": "a4"}))


def test_the_key_is_made_by_the_first_append_only(path: Path) -> None:
    db = Database(path)
    try:
        log = SqliteAuditLog(db, key_file=path.parent / "keys" / "audit.key")
        assert verify(log) == (True, ())
        assert not (path.parent / "keys").exists()  # verifying makes no key
        with pytest.raises(ValueError, match="does not name"):
            log.append("a1", canonical_json({"answer_id": "a2"}))
        assert not (path.parent / "keys").exists()
        log.append("a1", canonical_json({"answer_id": "a1"}))
        key_file = path.parent / "keys" / "audit.key"
        assert len(key_file.read_bytes()) == 32
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert [p.name for p in key_file.parent.iterdir()] == ["audit.key"]
        assert verify(log) == (True, ())
    finally:
        db.close()


def write_unkeyed(path: Path, count: int) -> list[str]:
    """Records as a citadel made before keying wrote them: a sha256 chain and a
    ``count:hash`` head; their hashes."""
    hashes, last = [], GENESIS
    with sqlite3.connect(path) as raw:
        for n in range(1, count + 1):
            body = canonical_json({"answer_id": f"old{n}", "n": n})
            digest = chain_hash(last, body)
            raw.execute(
                "INSERT INTO audit_log(seq, answer_id, body, prev_hash, hash)"
                " VALUES (?, ?, ?, ?, ?)",
                (n, f"old{n}", body, last, digest),
            )
            hashes.append(digest)
            last = digest
        raw.execute(
            "INSERT INTO meta(key, value) VALUES ('audit_head', ?)",
            (format_head(AuditHead(count, last)),),
        )
    raw.close()
    return hashes


def test_a_library_from_before_keying_is_anchored_by_its_first_keyed_record(path: Path) -> None:
    db = Database(path)
    try:
        log = SqliteAuditLog(db)
        hashes = write_unkeyed(path, 2)
        report = AuditService(log, _Clock(), Limits()).verify()
        assert not report.intact and report.unkeyed == 2
        assert any("not keyed" in p for p in report.problems)
        entry = log.append("a3", canonical_json({"answer_id": "a3"}))
        assert (entry.seq, entry.prev_hash) == (3, hashes[-1])
        report = AuditService(log, _Clock(), Limits()).verify()
        assert report.intact and (report.records, report.keyed_from, report.unkeyed) == (3, 3, 2)
        # Rewriting an old record, its chain rehashed and relinked, now shows.
        body = canonical_json({"answer_id": "old1", "n": "forged"})
        first = chain_hash(GENESIS, body)
        second_body = canonical_json({"answer_id": "old2", "n": 2})
        second = chain_hash(first, second_body)
        tamper(
            path,
            f"UPDATE audit_log SET body = '{body}', hash = '{first}' WHERE seq = 1",
            f"UPDATE audit_log SET prev_hash = '{first}', hash = '{second}' WHERE seq = 2",
            f"UPDATE audit_log SET prev_hash = '{second}' WHERE seq = 3",
        )
        intact, problems = verify(log)
        assert not intact and any("record 3 (a3) was altered" in p for p in problems)
    finally:
        db.close()


# The review's reproductions, through the real CLI on the library's own file.


def test_cli_the_key_lives_in_citadel_home_private_and_is_made_by_the_first_answer(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    assert not (home / "audit.key").exists()
    verified = cli("audit", "verify", "--home", str(home), "--json")
    assert verified.exit_code == 0 and json.loads(verified.stdout) == {
        "records": 0,
        "intact": True,
        "problems": [],
    }
    ask(home)
    key_file = home / "audit.key"
    assert len(key_file.read_bytes()) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with sqlite3.connect(home / "citadel.db") as raw:
        stored = b"".join(str(v).encode() for row in raw.execute("SELECT * FROM meta") for v in row)
    raw.close()
    assert key_file.read_bytes().hex().encode() not in stored


@pytest.mark.parametrize("form", ["unkeyed", "old-mac", "made-up-mac"])
def test_cli_removing_the_last_record_and_rewriting_the_head_is_detected(
    tmp_path: Path, form: str
) -> None:
    home, _ = asked(tmp_path, 3)
    second = "(SELECT hash FROM audit_log WHERE seq = 2)"
    value = {
        "unkeyed": f"'2:' || {second}",
        "old-mac": f"'2:' || {second} || ':1:' || substr(value, -64)",
        "made-up-mac": f"'2:' || {second} || ':1:{HEX}'",
    }[form]
    tamper(
        home / "citadel.db",
        "DELETE FROM audit_log WHERE seq = 3",
        f"UPDATE meta SET value = {value} WHERE key = 'audit_head'",
    )
    report = verify_cli(home)
    assert report["records"] == 2
    problems = report["problems"]
    assert isinstance(problems, list) and any("head" in p and "rewritten" in p for p in problems)
    # The next answer is refused rather than sealing the truncated log.
    refused = cli("ask", "--home", str(home), "--json", "What does the note say?")
    assert refused.exit_code != 0
    assert "audit log refuses new records" in refused.output
    assert verify_cli(home)["records"] == 2


def test_cli_removing_every_record_and_the_head_is_detected(tmp_path: Path) -> None:
    home, _ = asked(tmp_path, 2)
    tamper(
        home / "citadel.db", "DELETE FROM audit_log", "DELETE FROM meta WHERE key = 'audit_head'"
    )
    report = verify_cli(home)
    assert report["records"] == 0
    problems = report["problems"]
    assert isinstance(problems, list) and any(
        "records and head were removed" in p for p in problems
    )


@pytest.mark.parametrize("how", ["sha256", "another-key"])
def test_cli_a_forged_record_with_a_recomputed_hash_and_head_is_detected(
    tmp_path: Path, how: str
) -> None:
    home, ids = asked(tmp_path, 2)
    path = home / "citadel.db"
    with sqlite3.connect(path) as raw:
        body, last = raw.execute("SELECT body, hash FROM audit_log WHERE seq = 2").fetchone()
    raw.close()
    forged_body = body.replace(ids[1], "forged-answer")
    other = secrets.token_bytes(32)
    if how == "sha256":
        digest = chain_hash(last, forged_body)
        head = format_head(AuditHead(3, digest))
    else:
        digest = record_mac(other, last, forged_body)
        head = format_head(keyed_head(other, 3, digest, 1))
    with sqlite3.connect(path) as raw:
        raw.execute(
            "INSERT INTO audit_log(seq, answer_id, body, prev_hash, hash) VALUES (3, ?, ?, ?, ?)",
            ("forged-answer", forged_body, last, digest),
        )
        raw.execute("UPDATE meta SET value = ? WHERE key = 'audit_head'", (head,))
    raw.close()
    report = verify_cli(home)
    assert report["records"] == 3
    problems = report["problems"]
    assert isinstance(problems, list)
    assert any("record 3 (forged-answer) was altered" in p for p in problems)


def test_cli_verify_without_the_key_says_so(tmp_path: Path) -> None:
    home, _ = asked(tmp_path, 2)
    (home / "audit.key").unlink()
    report = verify_cli(home)
    assert report["problems"] == [
        f"the audit key is missing ({home / 'audit.key'}): records 1–2 are keyed and"
        " cannot be verified without it; restore the key from a backup"
    ]
    text = cli("audit", "verify", "--home", str(home))
    assert text.exit_code == 1 and "NOT intact" in text.stdout and "audit key" in text.stdout
