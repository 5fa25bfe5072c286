"""Dense search on PostgreSQL through pgvector's HNSW index against the exact search.

As ``tests/contract/test_hnsw_search.py`` asks of SQLite's hnswlib index: the graph
must find nearly what the exact search finds, with exact scores, and never return a
row the scope or filters exclude, even the nearest one; below the threshold the
search is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
import pytest

from citadel.adapters.postgres import hnsw
from citadel.adapters.postgres.hnsw import PgvectorIndex, index_name
from citadel.adapters.postgres.library import PostgresLibrary
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope
from tests.contract.test_hnsw_search import (
    ACME,
    DIMENSION,
    EVERYTHING,
    MODEL,
    Shelf,
    put,
    queries,
    source,
    unit,
)
from tests.contract.test_hnsw_search import admitted as admits
from tests.contract.test_hnsw_search import search as dense

SOURCES = 12
PER_SOURCE = 50


@pytest.fixture
def shelf(postgres_url: str) -> tuple[str, Shelf]:
    shelf = Shelf(path=None, vectors={}, source_of={})  # type: ignore[arg-type]
    library = PostgresLibrary(postgres_url, hnsw_min_vectors=0)
    rng = np.random.default_rng(5)
    for index in (*range(SOURCES - 2), 20, 21):  # 20, 21: tenant "other"
        put(library, shelf, source(index), 1, unit(rng, PER_SOURCE))  # type: ignore[arg-type]
    library.close()
    return postgres_url, shelf


@pytest.fixture
def graph_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many keys each search got from the HNSW index."""
    calls: list[int] = []
    original = PgvectorIndex.nearest_keys

    def spy(self: PgvectorIndex, *args: Any, **kwargs: Any) -> list[str]:
        found = original(self, *args, **kwargs)
        calls.append(len(found))
        return found

    monkeypatch.setattr(PgvectorIndex, "nearest_keys", spy)
    return calls


def test_the_graph_finds_what_exact_search_finds(
    shelf: tuple[str, Shelf], graph_calls: list[int]
) -> None:
    url, stored = shelf
    exact = PostgresLibrary(url, hnsw_min_vectors=0)
    graph = PostgresLibrary(url, hnsw_min_vectors=100)
    try:
        found = total = 0
        for q in queries(30):
            want = dense(exact, q)  # type: ignore[arg-type]
            got = dense(graph, q)  # type: ignore[arg-type]
            found += len({h.chunk_id for h in want} & {h.chunk_id for h in got})
            total += len(want)
            assert all(h.score == pytest.approx(float(stored.vectors[h.chunk_id] @ q)) for h in got)
            assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
        assert found / total >= 0.95
        assert len(graph_calls) == 30 and all(n >= 10 for n in graph_calls)
    finally:
        exact.close()
        graph.close()
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
            (index_name(MODEL, DIMENSION),),
        ).fetchone()
        assert row is not None and "hnsw" in row[0] and "vector_cosine_ops" in row[0]
        # Whether the index can answer this query's shape (the partial index's
        # predicate provable from the text): on 600 rows the planner may well prefer
        # a sequential scan, by statistics that autovacuum updates when it likes
        # (seen failing once in a full run), so sequential scans are priced out here.
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            f"EXPLAIN SELECT key FROM embeddings WHERE model = '{MODEL}'"
            f" ORDER BY vector::vector({DIMENSION}) <=> %s::vector({DIMENSION}) LIMIT 10",
            (str(queries(1)[0].tolist()),),
        ).fetchall()
        assert index_name(MODEL, DIMENSION) in " ".join(r[0] for r in plan)


@pytest.mark.parametrize(
    ("scope", "filters"),
    [
        (ACME, EVERYTHING),
        (AccessScope("acme", frozenset({"secret"})), EVERYTHING),
        (ACME, SearchFilters(tags_any=frozenset({"even"}))),
        (ACME, SearchFilters(year_min=2002, year_max=2003)),
        (ACME, SearchFilters(section_prefix=("Chapter 1",))),
        (AccessScope("other", frozenset()), EVERYTHING),  # few rows: exact
    ],
)
def test_scope_and_filters_hold_even_for_the_nearest_row(
    shelf: tuple[str, Shelf], scope: AccessScope, filters: SearchFilters
) -> None:
    url, stored = shelf
    exact = PostgresLibrary(url, hnsw_min_vectors=0)
    graph = PostgresLibrary(url, hnsw_min_vectors=100)
    try:
        found = total = 0
        for chunk in list(stored.vectors)[::37]:
            target = stored.vectors[chunk]
            got = dense(graph, target, scope, filters)  # type: ignore[arg-type]
            want = dense(exact, target, scope, filters)  # type: ignore[arg-type]
            assert all(admits(stored, h.chunk_id, scope, filters) for h in got)
            if not admits(stored, chunk, scope, filters):
                assert chunk not in {h.chunk_id for h in got}
            found += len({h.chunk_id for h in want} & {h.chunk_id for h in got})
            total += len(want)
            assert len(got) == len(want)
        assert found / max(total, 1) >= 0.95
    finally:
        exact.close()
        graph.close()


def test_below_the_threshold_the_search_is_exact(
    shelf: tuple[str, Shelf], graph_calls: list[int]
) -> None:
    url, _ = shelf
    exact = PostgresLibrary(url, hnsw_min_vectors=0)
    high = PostgresLibrary(url, hnsw_min_vectors=10_000)
    try:
        for q in queries(5):
            assert dense(high, q) == dense(exact, q)  # type: ignore[arg-type]
        assert graph_calls == []
    finally:
        exact.close()
        high.close()


def test_a_server_builds_the_index_in_the_background_and_searches_exactly_meanwhile(
    shelf: tuple[str, Shelf], graph_calls: list[int]
) -> None:
    """A long-running server (``hnsw_background``, as bootstrap sets when serving) does
    not hold its first search for the build (400 s at 100k here): that search is exact,
    the index is made by CREATE INDEX CONCURRENTLY in a thread, and once it is valid
    the searches go through it; a second server finds it made and builds nothing."""
    url, stored = shelf
    exact = PostgresLibrary(url, hnsw_min_vectors=0)
    server = PostgresLibrary(url, hnsw_min_vectors=100, hnsw_background=True)
    try:
        q = queries(1)[0]
        assert dense(server, q) == dense(exact, q)  # type: ignore[arg-type]
        assert graph_calls == []  # the index was not there: exact
        server._dense._graph.wait(60)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
                " WHERE c.relname = %s",
                (index_name(MODEL, DIMENSION),),
            ).fetchone()
        assert row == (True,)
        got = dense(server, q)  # type: ignore[arg-type]
        assert len(graph_calls) == 1
        assert all(h.score == pytest.approx(float(stored.vectors[h.chunk_id] @ q)) for h in got)
        other = PostgresLibrary(url, hnsw_min_vectors=100, hnsw_background=True)
        try:
            dense(other, q)  # type: ignore[arg-type]
            assert len(graph_calls) == 2 and not other._dense._graph._building
        finally:
            other.close()
    finally:
        exact.close()
        server.close()


def test_a_background_build_that_fails_is_not_retried_by_every_search(
    shelf: tuple[str, Shelf], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that cannot run (here: its connection refused) leaves the searches
    exact and is tried again only after RETRY_AFTER_S, not once per search."""
    url, _ = shelf
    attempts: list[str] = []

    def refused(*args: Any, **kwargs: Any) -> Any:
        attempts.append(str(args[0]))
        raise psycopg.OperationalError("refused")

    monkeypatch.setattr(hnsw.psycopg, "connect", refused)
    exact = PostgresLibrary(url, hnsw_min_vectors=0)
    server = PostgresLibrary(url, hnsw_min_vectors=100, hnsw_background=True)
    try:
        for q in queries(5):
            assert dense(server, q) == dense(exact, q)  # type: ignore[arg-type]
            server._dense._graph.wait(30)
        assert len(attempts) == 1
        monkeypatch.setattr(hnsw, "RETRY_AFTER_S", 0.0)
        dense(server, queries(1)[0])  # type: ignore[arg-type]
        server._dense._graph.wait(30)
        assert len(attempts) == 2
    finally:
        exact.close()
        server.close()


def test_the_graph_settings_are_the_search_connections_own(shelf: tuple[str, Shelf]) -> None:
    # A graph search is one statement on a pooled connection whose session carries
    # the graph's beam and iterative scan; without them pgvector would search with
    # ef_search 40 and stop short of the keys asked for.
    url, _ = shelf
    library = PostgresLibrary(url, hnsw_min_vectors=100, pool_size=1)
    try:
        assert library._dense._graph.ensure(MODEL, DIMENSION)
        with library._db.read() as conn:  # the session before any graph search
            assert conn.execute("SELECT current_setting('hnsw.ef_search', true)").fetchone() in (
                (None,),
                ("40",),
            )
        keys = library._dense._graph.nearest_keys(queries(1)[0], MODEL, 150)
        assert len(keys) == 150
        with library._db.read() as conn:  # the pool's one connection, as the search left it
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == (str(hnsw.EF_SEARCH),)
            assert conn.execute("SHOW hnsw.iterative_scan").fetchone() == ("relaxed_order",)
    finally:
        library.close()
