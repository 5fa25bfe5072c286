"""Optional pruning of very common query terms in the SQLite lexical index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ports import LexicalHit
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


# -- Skipping the chunks that hold only the query's most common term (always on) ----


def common_term_library(tmp_path: Path) -> SqliteLibrary:
    """ "data" in every chunk, "tables" and "eigenvalues" in some, with varied lengths
    and repetitions so the bm25() scores differ."""
    lib = SqliteLibrary(tmp_path / "common.db")
    passages = []
    for i in range(60):
        words = ["data"] * (1 + i % 4) + ["filler"] * (i % 7)
        if i % 3 == 0:
            words += ["tables"] * (1 + i % 2)
        if i % 10 == 0:
            words.append("eigenvalues")
        passages.append(Passage(" ".join(words) + f" number{i}."))
    commit(lib, Source(source_id="s", tenant="acme", title="Book", origin="/b"), passages)
    return lib


def ranked_fully(lib: SqliteLibrary, terms: tuple[str, ...], limit: int) -> list[tuple[str, float]]:
    original = lib._skippable
    lib._skippable = lambda terms, limit: (None, float("inf"))  # type: ignore[method-assign]
    try:
        return [(h.chunk_id, h.score) for h in lib.search(terms, SCOPE, SearchFilters(), limit)]
    finally:
        lib._skippable = original  # type: ignore[method-assign]


def test_skipping_the_common_term_keeps_the_exact_ranking(tmp_path: Path) -> None:
    lib = common_term_library(tmp_path)
    terms = ("data", "tables")
    common, bound = lib._skippable(terms, 5)
    assert common == "data"
    assert 0 < bound < float("inf")
    pruned = [(h.chunk_id, h.score) for h in lib.search(terms, SCOPE, SearchFilters(), 5)]
    assert pruned == ranked_fully(lib, terms, 5)
    # Every hit holds "tables", and scores more than "data" alone ever could.
    assert all(score > bound for _, score in pruned)
    lib.close()


def test_when_the_check_fails_the_whole_query_is_ranked(tmp_path: Path) -> None:
    # "data" in 18 of 60 chunks, three times each; "tables" once in 12 others: the
    # best "tables" chunks score below what "data" alone can reach.
    lib = SqliteLibrary(tmp_path / "fails.db")
    passages = [
        Passage("data data data." if i % 10 < 3 else "tables." if i % 4 == 3 else "filler.")
        for i in range(60)
    ]
    commit(lib, Source(source_id="s", tenant="acme", title="Book", origin="/b"), passages)
    terms = ("data", "tables")
    common, bound = lib._skippable(terms, 12)
    assert common == "data"
    forms: list[int] = []
    ranked = lib._ranked

    def spy(expressions: Sequence[str], *args: Any) -> Sequence[LexicalHit]:
        forms.append(len(expressions))
        return ranked(expressions, *args)

    lib._ranked = spy  # type: ignore[method-assign]
    hits = lib.search(terms, SCOPE, SearchFilters(), 12)
    # The check failed (the 12th "tables" chunk does not outscore what "data" alone
    # could), so the skipping form was followed by the whole query.
    assert forms == [2, 1]
    assert min(h.score for h in hits) <= bound
    assert [(h.chunk_id, h.score) for h in hits] == ranked_fully(lib, terms, 12)
    lib.close()


def test_no_skipping_for_a_single_term_or_too_few_rarer_chunks(tmp_path: Path) -> None:
    lib = common_term_library(tmp_path)
    assert lib._skippable(("data",), 5)[0] is None
    assert lib._skippable(("data", "eigenvalues"), 10)[0] is None  # 6 chunks hold it
    assert lib._skippable(("data", "eigenvalues"), 5)[0] == "data"
    lib.close()
