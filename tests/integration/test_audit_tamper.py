"""Tampering with the audit log's SQLite file directly: every column, and the head.

A tamperer with write access to the file drops the append-only triggers and
edits rows, or rewrites the head in meta. ``audit verify`` must report a
broken chain, naming the problem, and never crash; ``audit show`` goes by what
a record's hashed body says, not by a column that can be rewritten.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.sqlite.audit import SqliteAuditLog
from citadel.adapters.sqlite.database import Database
from citadel.app.audit import AuditService
from citadel.domain.audit import GENESIS, MalformedHead
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
    assert log.head()[0] == 3


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
