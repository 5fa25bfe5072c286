"""The audit commands through the real CLI with ``CITADEL_DB=postgresql://…``.

A note is ingested and asked about with the library in PostgreSQL; ``audit verify``
finds the answers' chain intact, ``audit replay`` and ``audit show`` find each
record, the key is a file in CITADEL_HOME (and no SQLite file is made there). An
edit made behind the triggers' back makes ``audit verify`` exit 1 naming it.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import psycopg
from typer.testing import CliRunner, Result

from citadel.entrypoints.cli import app
from tests.integration.test_citation_links import ALLOWED, NOTE, QUESTION
from tests.integration.test_cli import CLEAN_ENV


def cli(url: str, *args: str) -> Result:
    env = dict(
        CLEAN_ENV, CITADEL_DB=url, CITADEL_LINK_ALLOWED_HOSTS=ALLOWED, CITADEL_EMBEDDER="hashing"
    )
    # catch_exceptions=False: a traceback fails the test instead of becoming exit code 1.
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def answered(url: str, tmp_path: Path, times: int) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    note = tmp_path / "note.md"
    note.write_text(NOTE, encoding="utf-8")
    ingested = cli(url, "ingest", "--home", str(home), "--json", str(note))
    assert ingested.exit_code == 0, ingested.stderr
    ids = []
    for _ in range(times):
        asked = cli(url, "ask", "--home", str(home), "--json", QUESTION)
        assert asked.exit_code == 0, asked.stderr
        answer: dict[str, Any] = json.loads(asked.stdout)
        ids.append(answer["answer_id"])
    return home, ids


def test_audit_verify_show_and_replay_over_postgresql(postgres_url: str, tmp_path: Path) -> None:
    home, ids = answered(postgres_url, tmp_path, 2)
    verified = cli(postgres_url, "audit", "verify", "--home", str(home), "--json")
    assert verified.exit_code == 0, verified.stderr
    assert json.loads(verified.stdout) == {"records": 2, "intact": True, "problems": []}
    for answer_id in ids:
        replayed = cli(postgres_url, "audit", "replay", "--home", str(home), "--json", answer_id)
        assert replayed.exit_code == 0, replayed.stderr
        report = json.loads(replayed.stdout)
        assert report["answer_id"] == answer_id and report["holds"] is True
        shown = cli(postgres_url, "audit", "show", "--home", str(home), "--json", answer_id)
        assert shown.exit_code == 0 and json.loads(shown.stdout)["answer_id"] == answer_id
    # The records are in PostgreSQL, the key beside CITADEL_HOME's other keys.
    with psycopg.connect(postgres_url) as raw:
        stored = [row[0] for row in raw.execute("SELECT answer_id FROM audit_log ORDER BY seq")]
    assert stored == ids
    key_file = home / "audit.key"
    assert len(key_file.read_bytes()) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not (home / "citadel.db").exists()


def test_audit_verify_over_postgresql_names_an_edited_record(
    postgres_url: str, tmp_path: Path
) -> None:
    home, ids = answered(postgres_url, tmp_path, 2)
    with psycopg.connect(postgres_url) as raw:
        raw.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
        raw.execute("UPDATE audit_log SET answer_id = 'forged' WHERE seq = 1")
        raw.execute("ALTER TABLE audit_log ENABLE TRIGGER USER")
    outcome = cli(postgres_url, "audit", "verify", "--home", str(home), "--json")
    assert outcome.exit_code == 1, (outcome.stdout, outcome.stderr)
    report = json.loads(outcome.stdout)
    assert report["intact"] is False and report["records"] == 2
    assert any("forged" in p and ids[0] in p for p in report["problems"])
    text = cli(postgres_url, "audit", "verify", "--home", str(home))
    assert text.exit_code == 1 and "NOT intact" in text.stdout and "forged" in text.stdout


def test_users_through_the_cli_over_postgresql(postgres_url: str, tmp_path: Path) -> None:
    home, _ = answered(postgres_url, tmp_path, 0)
    added = cli(postgres_url, "users", "add", "ada", "--json", "--home", str(home))
    assert added.exit_code == 0, added.stderr
    assert json.loads(added.stdout)["name"] == "ada"
    listed = cli(postgres_url, "users", "list", "--json", "--home", str(home))
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["ada"]
    asked = cli(postgres_url, "ask", "--home", str(home), "--json", "--as", "ada", QUESTION)
    assert asked.exit_code == 0, asked.stderr
    answer_id = json.loads(asked.stdout)["answer_id"]
    shown = cli(
        postgres_url, "audit", "show", "--home", str(home), "--json", "--as", "ada", answer_id
    )
    assert shown.exit_code == 0 and json.loads(shown.stdout)["actor"]["user_id"] == "ada"
    assert cli(postgres_url, "users", "disable", "ada", "--home", str(home)).exit_code == 0
    refused = cli(postgres_url, "ask", "--home", str(home), "--json", "--as", "ada", QUESTION)
    assert refused.exit_code != 0
    with psycopg.connect(postgres_url) as raw:
        rows = raw.execute("SELECT name, status FROM users").fetchall()
    assert rows == [("ada", "disabled")]
    verified = cli(postgres_url, "audit", "verify", "--home", str(home), "--json")
    assert json.loads(verified.stdout) == {"records": 1, "intact": True, "problems": []}
