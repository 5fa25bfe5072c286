"""CITADEL_DB=postgresql://… wires the PostgreSQL library: the CLI ingests into it and
searches it, and nothing is written to a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
from typer.testing import CliRunner

from citadel.adapters.postgres.library import PostgresLibrary
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.entrypoints.cli import app
from tests.integration.test_cli import CLEAN_ENV

BOOK = "# Runbook\n\n## Restarts\n\nRestart the workers one at a time after a deploy.\n"


def run(env: dict[str, str | None], *args: str) -> Any:
    outcome = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    return [json.loads(line) for line in outcome.stdout.splitlines() if line.startswith("{")]


def test_the_cli_ingests_into_and_searches_postgresql(postgres_url: str, tmp_path: Path) -> None:
    home, book = tmp_path / "home", tmp_path / "runbook.md"
    book.write_text(BOOK)
    env = {
        **CLEAN_ENV,
        "CITADEL_DB": postgres_url,
        "CITADEL_HOME": str(home),
        "CITADEL_EMBEDDER": "hashing",
    }
    ingested = run(env, "ingest", str(book), "--json")
    assert ingested[0]["chunks"] >= 1
    found = run(env, "search", "restart the workers", "--json")
    assert found, "the search found nothing"
    assert "Restart the workers" in json.dumps(found)
    assert not (home / "citadel.db").exists()
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT count(*) FROM sources WHERE title = 'Runbook'").fetchone()
    assert row == (1,)


def test_build_chooses_the_postgresql_library_by_the_url(postgres_url: str, tmp_path: Path) -> None:
    settings = Settings.from_env({"CITADEL_DB": postgres_url, "CITADEL_HOME": str(tmp_path)})
    services = build(settings)
    try:
        assert isinstance(services.registry, PostgresLibrary)
        assert services.registry.list() == []
    finally:
        services.close()
    settings = Settings.from_env({"CITADEL_HOME": str(tmp_path)})
    services = build(settings)
    try:
        assert not isinstance(services.registry, PostgresLibrary)
    finally:
        services.close()
