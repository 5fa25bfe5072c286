"""A library made with schema 4 (source ids global) opens as schema 5 (ids scoped to
their tenant), upgraded in place: same sources, chunk ids and search results,
citations that still resolve, and an audit chain that still verifies.

The old file is made the way a user's would be (ingest, ask, through the CLI) and
then rewritten into schema 4's tables (``tests/old_schema.py``, the old DDL verbatim).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from citadel.adapters.sqlite.schema import SCHEMA_VERSION
from citadel.config import Settings
from tests.integration.test_citation_links import ask, cli, ingest
from tests.old_schema import to_schema_4


def lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def columns(db: Path, table: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_a_schema_4_library_is_upgraded_in_place_and_still_answers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    at = ("--home", str(home))
    made = ingest(home, tmp_path / "note.md", "--source-id", "guide")
    assert made.exit_code == 0, made.output
    answer = ask(home)
    assert answer["answer"] is not None, answer["degraded"]
    chunks_before = lines(cli("sources", "chunks", "guide", "--json", *at).stdout)
    search_before = json.loads(cli("search", "flux capacitor", "--json", *at).stdout)
    assert chunks_before and search_before["results"]

    db = Settings(home=home).db_path
    to_schema_4(db)
    assert "tenant" not in columns(db, "chunks")  # really the old layout now
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == "4"

    # The first open upgrades it; everything answers as before.
    chunks_after = lines(cli("sources", "chunks", "guide", "--json", *at).stdout)
    assert chunks_after == chunks_before, "chunk ids and text stay as stored"
    assert json.loads(cli("search", "flux capacitor", "--json", *at).stdout) == search_before
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        tenants = conn.execute("SELECT DISTINCT tenant FROM chunks").fetchall()
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert version == str(SCHEMA_VERSION) == "7"
    assert tenants == [("default",)]
    assert "tenant" in columns(db, "source_versions")

    verified = cli("audit", "verify", "--json", *at)
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["intact"] is True
    shown = cli("audit", "show", answer["answer_id"], "--json", *at)
    assert shown.exit_code == 0 and answer["answer_id"] in shown.stdout
    again = ask(home)
    assert again["answer"] is not None, again["degraded"]
    cited = [c for s in again["answer"]["segments"] for c in s["citations"]]
    assert cited and {(c["source_id"], c["link"]["state"]) for c in cited} == {("guide", "viewer")}
    assert json.loads(cli("audit", "verify", "--json", *at).stdout)["intact"] is True

    # And the upgraded library scopes ids: another tenant may now have its own guide.
    other = ingest(home, tmp_path / "other.md", "--source-id", "guide", "--tenant", "other")
    assert other.exit_code == 0, other.output
    assert lines(other.stdout)[0]["status"] == "created"
    assert lines(cli("sources", "chunks", "guide", "--json", *at).stdout) == chunks_before
