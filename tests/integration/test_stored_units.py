"""Ingest stores each chunk's quotable units beside its text; a library stored before
(schema 6) opens without them and answers the same, the generator cutting them itself."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from citadel.adapters.generators.extractive.stored import read_units
from citadel.adapters.generators.extractive.units import quotable_units
from citadel.adapters.sqlite.schema import SCHEMA_VERSION
from citadel.config import Settings
from citadel.entrypoints.cli import app
from tests.integration.test_citation_links import ask, cli, ingest
from tests.integration.test_cli import CLEAN_ENV
from tests.old_schema import to_schema_6


def stored(db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT text, units FROM chunks ORDER BY rowid").fetchall()


def segments(answer: dict[str, object]) -> list[str]:
    shown = answer["answer"]
    assert isinstance(shown, dict), answer["degraded"]
    return [str(s["text"]) for s in shown["segments"]]


def test_ingest_stores_the_units_cutting_gives(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    rows = stored(Settings(home=home).db_path)
    assert rows
    for text, units in rows:
        assert read_units(units, text) == tuple(quotable_units(text))


def test_a_schema_6_library_answers_the_same_without_stored_units(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md", "--source-id", "guide").exit_code == 0
    before = segments(ask(home))
    assert before
    db = Settings(home=home).db_path
    to_schema_6(db)

    after = ask(home)  # the first open upgrades the file
    assert segments(after) == before
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == str(SCHEMA_VERSION) == "7"
    assert {units for _, units in stored(db)} == {None}


def test_units_edited_in_the_library_file_are_never_quoted(tmp_path: Path) -> None:
    # A row's units rewritten by hand, its passage and sha256 untouched: the words the
    # edit put in never reach the reader; the generator cuts the passage itself.
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    before = segments(ask(home))
    db = Settings(home=home).db_path
    with sqlite3.connect(db) as conn:
        for rowid, units in conn.execute("SELECT rowid, units FROM chunks").fetchall():
            form = json.loads(units)
            edited = [text.replace("restart", "never restart") for text in form["text"]]
            assert edited != form["text"], "the edit must change what the units say"
            form["text"] = edited
            conn.execute("UPDATE chunks SET units = ? WHERE rowid = ?", (json.dumps(form), rowid))
    after = segments(ask(home))
    assert after == before and not any("never" in text for text in after)


def test_reindex_stores_the_units_of_a_library_stored_without(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    before = segments(ask(home))
    db = Settings(home=home).db_path
    to_schema_6(db)
    ask(home)  # upgraded: no units
    assert {units for _, units in stored(db)} == {None}

    report = json.loads(cli("reindex", "--home", str(home), "--json").stdout)
    rows = stored(db)
    assert report["units_stored"] == len(rows) > 0
    for text, units in rows:
        assert read_units(units, text) == tuple(quotable_units(text))
    assert segments(ask(home)) == before
    again = json.loads(cli("reindex", "--home", str(home), "--json").stdout)
    assert again["units_stored"] == 0


def test_reindex_without_an_embedder_still_stores_the_units(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    db = Settings(home=home).db_path
    to_schema_6(db)
    ask(home)
    lexical = dict(CLEAN_ENV, CITADEL_EMBEDDER="none")
    outcome = CliRunner().invoke(app, ["reindex", "--home", str(home)], env=lexical)
    assert outcome.exit_code == 2
    rows = stored(db)
    said = " ".join(outcome.stderr.split())  # the console wraps long lines
    assert f"quotable units were stored for {len(rows)} chunks" in said
    assert all(read_units(units, text) == tuple(quotable_units(text)) for text, units in rows)
