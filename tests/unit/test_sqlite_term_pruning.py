"""Optional pruning of very common query terms in the SQLite lexical index."""

from __future__ import annotations

from pathlib import Path

from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.domain.model import SearchFilters
from citadel.domain.source import AccessScope, Source
from tests.builders import Passage, commit

SCOPE = AccessScope("acme", frozenset())


def library(tmp_path: Path, share: float) -> SqliteLibrary:
    lib = SqliteLibrary(tmp_path / f"lib-{share}.db", max_term_share=share)
    passages = [Passage(f"Data point {i} about tables.") for i in range(9)]
    passages.append(Passage("Data about eigenvalues, once."))
    commit(lib, Source(source_id="s", tenant="acme", title="Book", origin="/b"), passages)
    return lib


def test_without_pruning_every_term_counts(tmp_path: Path) -> None:
    lib = library(tmp_path, 1.0)
    hits = lib.search(("tables", "eigenvalues"), SCOPE, SearchFilters(), 20)
    assert len(hits) == 10
    lib.close()


def test_a_term_in_most_chunks_is_dropped_when_a_rarer_one_is_left(tmp_path: Path) -> None:
    lib = library(tmp_path, 0.5)  # "tables" is in 9 of 10 chunks
    hits = lib.search(("tables", "eigenvalues"), SCOPE, SearchFilters(), 20)
    assert len(hits) == 1
    # ... but a query made only of common terms keeps them.
    assert len(lib.search(("tables",), SCOPE, SearchFilters(), 20)) == 9
    lib.close()
