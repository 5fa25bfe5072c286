"""``citadel db migrate --to postgresql://…``: an embedded library copied into PostgreSQL.

A real book (R-intro) and a note with two versions, one source with groups, one
deleted (a tombstone), a user and two audited answers are made in SQLite through
the CLI; after the copy, search, the source list and ``audit verify`` give the same
results through ``CITADEL_DB=postgresql://…`` as through the SQLite file. A second
copy into the now non-empty target is refused, and a copy that fails half-way (a
clashing user, with ``--force``) leaves the target exactly as it was.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner, Result

from citadel.entrypoints.cli import app
from tests.conftest import shared_path
from tests.integration.test_cli import CLEAN_ENV

QUERIES = (
    "How do I read data from a file into a data frame?",
    "linear regression model formula",
    "plotting a histogram",
    "retention of old versions",
)
NOTE_V1 = "# Retention\n\nOld versions of a source are kept for citations.\n"
NOTE_V2 = NOTE_V1 + "\nA retention of three versions is the default.\n"


def cli(db: str, home: Path, *args: str) -> Result:
    env = dict(CLEAN_ENV, CITADEL_DB=db, CITADEL_EMBEDDER="hashing", CITADEL_HOME=str(home))
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def ok(result: Result) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout) if result.stdout.strip() else None


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(home, SQLite file) of a small real library with every kind of row."""
    home = tmp_path_factory.mktemp("embedded")
    db = home / "citadel.db"
    book = shared_path("books", "pdf", "R-intro.pdf")
    ok(cli(str(db), home, "ingest", "--json", str(book)))
    note = home / "note.md"
    note.write_text(NOTE_V1, encoding="utf-8")
    first = ok(cli(str(db), home, "ingest", "--json", str(note)))
    note.write_text(NOTE_V2, encoding="utf-8")
    ok(cli(str(db), home, "ingest", "--json", str(note)))
    ok(cli(str(db), home, "sources", "acl", first["source_id"], "--set", "staff", "--json"))
    # A move: the note's former origin stays in the registry's locations.
    moved = home / "moved-note.md"
    moved.write_text(NOTE_V2, encoding="utf-8")
    ok(cli(str(db), home, "sources", "move", first["source_id"], str(moved), "--json"))
    gone = home / "gone.md"
    gone.write_text("# Gone\n\nThis source is deleted after ingest.\n", encoding="utf-8")
    deleted = ok(cli(str(db), home, "ingest", "--json", str(gone)))
    ok(cli(str(db), home, "sources", "delete", deleted["source_id"], "--json"))
    ok(cli(str(db), home, "users", "add", "ada", "--groups", "staff", "--json"))
    for question in QUERIES[:2]:
        ok(cli(str(db), home, "ask", "--json", question))
    return home, db


def book_bytes() -> bytes:
    return shared_path("books", "pdf", "R-intro.pdf").read_bytes()


def hits(db: str, home: Path, query: str, *extra: str) -> list[tuple[str, float]]:
    found = ok(cli(db, home, "search", "--json", "--limit", "10", *extra, query))
    return [(hit["evidence_id"], round(hit["score"], 6)) for hit in found["results"]]


def test_migrate_copies_everything_and_postgresql_answers_the_same(
    embedded: tuple[Path, Path], postgres_url: str
) -> None:
    home, db = embedded
    out = ok(cli(str(db), home, "db", "migrate", "--to", postgres_url, "--json"))
    assert out["audit"] == {"records": 2, "intact": True}
    rows = out["rows"]
    assert rows["sources"] == 3 and rows["source_versions"] == 4 and rows["users"] == 1
    assert rows["chunks"] > 100 and rows["embeddings"] > 100 and rows["audit_log"] == 2
    # Indexed: the book and the note's current version; not the tombstone's chunks.
    with psycopg.connect(postgres_url) as conn:
        live = conn.execute(
            "SELECT count(*) FROM chunks c JOIN sources s USING (tenant, source_id)"
            " WHERE NOT s.deleted AND c.version = s.current_version"
        ).fetchone()
    assert live is not None and rows["lexical"] == live[0]
    # The book's kept original (the CLI keeps a PDF's), byte for byte, in the database.
    assert rows["originals"] == 1
    with psycopg.connect(postgres_url) as conn:
        parts = conn.execute(
            "SELECT p.data FROM originals o JOIN original_parts p"
            " USING (tenant, source_id, version) ORDER BY p.part"
        ).fetchall()
    assert b"".join(bytes(p[0]) for p in parts) == book_bytes()
    for query in QUERIES:
        assert hits(postgres_url, home, query) == hits(str(db), home, query), query
    listed = [_lines(cli(d, home, "sources", "list", "--json")) for d in (str(db), postgres_url)]
    assert listed[0] == listed[1] and len(listed[0]) == 2
    # The former locations too (shadow mode tells a moved link from an invented one).
    with sqlite3.connect(db) as lite, psycopg.connect(postgres_url) as pg:
        query = "SELECT tenant, source_id, kind, location FROM source_locations ORDER BY 1, 2, 3, 4"
        former = lite.execute(query).fetchall()
        assert rows["source_locations"] == len(former) >= 1
        assert [tuple(r) for r in pg.execute(query).fetchall()] == former
        assert any(str(home / "note.md") in location for *_, location in former)
        # Each chunk's stored units, as ingest cut them (the extractive generator's).
        units = "SELECT chunk_id, units FROM chunks ORDER BY chunk_id"
        stored = lite.execute(units).fetchall()
        assert stored and all(form is not None for _, form in stored)
        assert [tuple(r) for r in pg.execute(units).fetchall()] == stored
    verified = [ok(cli(d, home, "audit", "verify", "--json")) for d in (str(db), postgres_url)]
    assert verified[0] == verified[1] == {"records": 2, "intact": True, "problems": []}
    # The copy goes on as a library of its own: a new answer extends the copied chain.
    ok(cli(postgres_url, home, "ask", "--json", QUERIES[2]))
    again = ok(cli(postgres_url, home, "audit", "verify", "--json"))
    assert again == {"records": 3, "intact": True, "problems": []}


def test_migrate_refuses_a_non_empty_target(embedded: tuple[Path, Path], postgres_url: str) -> None:
    home, db = embedded
    ok(cli(str(db), home, "db", "migrate", "--to", postgres_url, "--json"))
    before = _counts(postgres_url)
    refused = cli(str(db), home, "db", "migrate", "--to", postgres_url)
    assert refused.exit_code == 1
    assert "not empty" in refused.stderr and "--force" in refused.stderr
    assert _counts(postgres_url) == before


def test_a_failed_copy_leaves_the_target_as_it_was(
    embedded: tuple[Path, Path], postgres_url: str, tmp_path: Path
) -> None:
    home, db = embedded
    # The target has one user already, named as the source's: with --force the copy
    # starts, writes sources, versions, chunks and vectors, then clashes on users.
    other = tmp_path / "other"
    ok(cli(postgres_url, other, "users", "add", "ada", "--json"))
    before = _counts(postgres_url)
    failed = cli(str(db), home, "db", "migrate", "--to", postgres_url, "--force")
    assert failed.exit_code == 1, failed.stdout
    assert "nothing was copied" in failed.stderr
    assert _counts(postgres_url) == before
    assert before["users"] == 1 and before["sources"] == 0 and before["chunks"] == 0


def test_a_library_file_without_the_locations_table_copies_as_none(
    embedded: tuple[Path, Path], postgres_url: str, tmp_path: Path
) -> None:
    # A file of the current schema that no newer citadel has opened yet lacks
    # source_locations (a library makes it on open; the copy opens read-only).
    home, db = embedded
    older = tmp_path / "older.db"
    with sqlite3.connect(db) as source, sqlite3.connect(older) as target:
        source.backup(target)
    with sqlite3.connect(older) as conn:
        conn.execute("DROP TABLE source_locations")
    out = ok(cli(str(older), home, "db", "migrate", "--to", postgres_url, "--json"))
    assert out["rows"]["source_locations"] == 0 and out["rows"]["sources"] == 3


def test_migrate_refuses_what_is_not_a_postgresql_url(embedded: tuple[Path, Path]) -> None:
    home, db = embedded
    refused = cli(str(db), home, "db", "migrate", "--to", str(home / "copy.db"))
    assert refused.exit_code == 2 and "postgresql://" in refused.stderr


def _lines(result: Result) -> list[Any]:
    assert result.exit_code == 0, result.stderr
    return sorted((json.loads(line) for line in result.stdout.splitlines()), key=json.dumps)


def _counts(url: str) -> dict[str, int]:
    tables = ("sources", "source_versions", "chunks", "embeddings", "lexical", "users", "originals")
    with psycopg.connect(url) as conn:
        out = {}
        for table in (*tables, "audit_log"):
            row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            out[table] = int(row[0]) if row else -1
        head = conn.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()
        out["audit_head"] = 0 if head is None else 1
    return out
