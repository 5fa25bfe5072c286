"""Optional pruning of very common query terms in the SQLite lexical index."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import citadel.adapters.sqlite.lexical as lexical_module
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.adapters.sqlite.schema import fts_table
from citadel.app.ports import LexicalHit
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source
from tests.builders import Passage, commit

SCOPE = AccessScope("acme", frozenset())
TABLE = fts_table("acme")
"""The tenant's FTS5 table: each tenant is ranked with its own statistics."""


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
    """The whole query ranked, its terms in the order the plan gives them."""
    plan = lib._lexical._skip_plan
    lib._lexical._skip_plan = lambda table, terms, limit: (plan(table, terms, limit)[0], [])  # type: ignore[method-assign]
    try:
        return [(h.chunk_id, h.score) for h in lib.search(terms, SCOPE, SearchFilters(), limit)]
    finally:
        lib._lexical._skip_plan = plan  # type: ignore[method-assign]


def counting_forms(lib: SqliteLibrary) -> list[int]:
    """How many MATCH forms each ranking query of ``lib`` runs, in order."""
    forms: list[int] = []
    ranked = lib._lexical._ranked

    def spy(table: str, expressions: Sequence[str], *args: Any) -> Sequence[LexicalHit]:
        forms.append(len(expressions))
        return ranked(table, expressions, *args)

    lib._lexical._ranked = spy  # type: ignore[method-assign]
    return forms


def test_skipping_the_common_term_keeps_the_exact_ranking(tmp_path: Path) -> None:
    lib = common_term_library(tmp_path)
    terms = ("data", "tables")
    ordered, bounds = lib._lexical._skip_plan(TABLE, terms, 5)
    assert ordered == ["tables", "data"]
    assert len(bounds) == 1
    bound = bounds[0]
    assert 0 < bound < float("inf")
    pruned = [(h.chunk_id, h.score) for h in lib.search(terms, SCOPE, SearchFilters(), 5)]
    assert pruned == ranked_fully(lib, terms, 5)
    # Every hit holds "tables", and scores more than "data" alone ever could.
    assert all(score > bound for _, score in pruned)
    lib.close()


def test_when_the_check_fails_the_whole_query_is_ranked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical_module, "_CUT_GUESS_FACTOR", math.inf)  # always try
    # "data" in 18 of 60 chunks, three times each; "tables" once in 12 others: the
    # best "tables" chunks score below what "data" alone can reach.
    lib = SqliteLibrary(tmp_path / "fails.db")
    passages = [
        Passage("data data data." if i % 10 < 3 else "tables." if i % 4 == 3 else "filler.")
        for i in range(60)
    ]
    commit(lib, Source(source_id="s", tenant="acme", title="Book", origin="/b"), passages)
    terms = ("data", "tables")
    ordered, (bound,) = lib._lexical._skip_plan(TABLE, terms, 12)
    assert ordered == ["tables", "data"]
    forms = counting_forms(lib)
    hits = lib.search(terms, SCOPE, SearchFilters(), 12)
    # The check failed (the 12th "tables" chunk does not outscore what "data" alone
    # could), so the skipping form was followed by the whole query.
    assert forms == [2, 1]
    assert min(h.score for h in hits) <= bound
    assert [(h.chunk_id, h.score) for h in hits] == ranked_fully(lib, terms, 12)
    lib.close()


def test_no_skipping_for_a_single_term_or_too_few_rarer_chunks(tmp_path: Path) -> None:
    lib = common_term_library(tmp_path)
    assert lib._lexical._skip_plan(TABLE, ("data",), 5)[1] == []
    assert lib._lexical._skip_plan(TABLE, ("data", "eigenvalues"), 10)[1] == []  # 6 chunks hold it
    assert len(lib._lexical._skip_plan(TABLE, ("data", "eigenvalues"), 5)[1]) == 1
    lib.close()


@pytest.mark.parametrize("guess", [1.5, math.inf])
def test_skipping_is_exact_on_random_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guess: float
) -> None:
    monkeypatch.setattr(lexical_module, "_CUT_GUESS_FACTOR", guess)
    rng = random.Random(5)
    vocabulary = [f"w{rank}" for rank in range(40)]
    weights = [1 / (rank + 1) for rank in range(40)]
    lib = SqliteLibrary(tmp_path / "random.db")
    passages = [
        Passage(" ".join(rng.choices(vocabulary, weights, k=rng.randint(3, 30))) + ".")
        for _ in range(300)
    ]
    commit(lib, Source(source_id="s", tenant="acme", title="Book", origin="/b"), passages)
    forms = counting_forms(lib)
    for _ in range(150):
        terms = tuple(dict.fromkeys(rng.choices(vocabulary, k=rng.randint(2, 4))))
        limit = rng.choice([5, 10, 30])
        hits = [(h.chunk_id, h.score) for h in lib.search(terms, SCOPE, SearchFilters(), limit)]
        assert hits == ranked_fully(lib, terms, limit), terms
    assert 2 in forms  # some queries skipped terms
    lib.close()
