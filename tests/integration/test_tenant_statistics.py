"""One tenant's search never depends on another tenant's library (issue 12, defect 8).

BM25 weighs a term by how many chunks hold it. With every tenant's chunks in one
index, tenant ``ta`` ingesting notes full of "zebra" lowered the weight of "zebra"
in tenant ``tb``'s own results, down to a score of 0: a reader of ``tb`` could tell,
from its own search, which words another tenant's library is full of. Each tenant
is now indexed alone, in SQLite (one FTS5 table per tenant) and in the in-memory
fake alike, and a library of the older layout is split by tenant when it is opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.memory.library import InMemoryLibrary
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.adapters.sqlite.schema import SCHEMA_VERSION, fts_table
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source
from tests.builders import Passage, commit
from tests.old_schema import to_schema_4, to_schema_5

OURS = {
    "one.md": "# One\n\nThe zebra walks over the bridge at dawn.\n",
    "two.md": "# Two\n\nThe quokka walks over the bridge at dawn.\n",
}


def theirs(folder: Path) -> list[str]:
    folder.mkdir()
    paths = []
    for n in range(15):
        path = folder / f"a{n}.md"
        path.write_text(f"# A{n}\n\nA zebra note, number {n}, about stripes and zebra herds.\n")
        paths.append(str(path))
    return paths


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CITADEL_")},
        "CITADEL_HOME": str(home),
        "CITADEL_EMBEDDER": "none",  # lexical only: the scores are BM25's
    }
    done = subprocess.run(
        [sys.executable, "-m", "citadel", *args],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


def results(home: Path, who: str, query: str = "zebra quokka") -> list[tuple[str, float]]:
    found = json.loads(run(home, "search", query, "--limit", "20", "--as", who, "--json").stdout)
    return [(r["title"], r["score"]) for r in found["results"]]


def ours(tmp_path: Path) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    paths = []
    for name, text in OURS.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(str(path))
    run(home, "users", "add", "rb", "--tenant", "tb", "--json")
    run(home, "ingest", *paths, "--tenant", "tb", "--json")
    return home, paths


def test_another_tenants_library_changes_no_score_of_mine(tmp_path: Path) -> None:
    home, _ = ours(tmp_path)
    before = results(home, "rb")
    assert {title for title, _ in before} == {"One", "Two"}
    assert all(score > 0 for _, score in before)

    run(home, "ingest", *theirs(tmp_path / "theirs"), "--tenant", "ta", "--json")

    assert results(home, "rb") == before
    # And ``ta`` ranks within its own library only.
    run(home, "users", "add", "ra", "--tenant", "ta", "--json")
    assert {t for t, _ in results(home, "ra", "zebra stripes")} == {f"A{n}" for n in range(15)}


def test_an_older_library_is_split_by_tenant_when_opened(tmp_path: Path) -> None:
    home, _ = ours(tmp_path)
    run(home, "ingest", *theirs(tmp_path / "theirs"), "--tenant", "ta", "--json")
    run(home, "users", "add", "ra", "--tenant", "ta", "--json")
    mine, others = results(home, "rb"), results(home, "ra")
    db = home / "citadel.db"
    for older in (to_schema_5, to_schema_4):
        older(db)
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM chunks_fts").fetchone() == (17,)
        # The first open splits the one index: scores are each tenant's own again.
        assert results(home, "rb") == mine
        assert results(home, "ra") == others
        with sqlite3.connect(db) as conn:
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
            assert version.fetchone() == (str(SCHEMA_VERSION),)
            shared = conn.execute("SELECT name FROM sqlite_master WHERE name = 'chunks_fts'")
            assert shared.fetchall() == []
            counts = [
                conn.execute(f"SELECT count(*) FROM {fts_table(t)}").fetchone()[0]
                for t in ("ta", "tb")
            ]
            assert counts == [15, 2]
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


Library = InMemoryLibrary | SqliteLibrary


@pytest.fixture(params=["sqlite", "memory"])
def library(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Library]:
    if request.param == "memory":
        yield InMemoryLibrary()
        return
    found = SqliteLibrary(tmp_path / "lib.db")
    yield found
    found.close()


def source(source_id: str, tenant: str) -> Source:
    return Source(source_id=source_id, tenant=tenant, title=source_id, current_version=1)


def test_both_adapters_score_a_tenant_by_its_own_chunks(library: Library) -> None:
    commit(library, source("one", "tb"), [Passage("The zebra walks over the bridge.")])
    commit(library, source("two", "tb"), [Passage("The quokka walks over the bridge.")])
    scope = AccessScope("tb", frozenset())
    before = library.search(["zebra", "quokka"], scope, SearchFilters(), 10)
    for n in range(15):
        commit(library, source(f"a{n}", "ta"), [Passage(f"Zebra note {n}: zebra herds.")])
    assert library.search(["zebra", "quokka"], scope, SearchFilters(), 10) == before
