"""Dense search through the HNSW index (threshold set low) against the exact search.

The graph is a candidate generator: it must find nearly what the exact search
finds, never return a row the scope or filters exclude (even the nearest one),
follow new versions and deletions, and rebuild a missing or damaged file.
Below the threshold the search is the exact one, bit for bit.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import threading
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import hnswlib  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt
import pytest

from citadel.adapters.sqlite.hnsw import HnswIndex
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ports import ChunkVectors, DenseHit
from citadel.domain.chunking import CHUNKER_VERSION, embedding_key
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source, SourceVersion
from tests.builders import Passage, make_chunks

MODEL = "test-vectors/32"
DIMENSION = 32
SOURCES = 24
PER_SOURCE = 100
THRESHOLD = 100
ACME = AccessScope("acme", frozenset())
EVERYTHING = SearchFilters()


@dataclass
class Shelf:
    path: Path
    vectors: dict[str, npt.NDArray[np.float32]]
    source_of: dict[str, str]


def unit(rng: np.random.Generator, count: int) -> npt.NDArray[np.float32]:
    matrix = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def source(index: int, source_id: str = "") -> Source:
    """Sources 0-19 in tenant acme (every fourth one restricted to group "secret"),
    20-23 in tenant other; tags and years vary."""
    return Source(
        source_id=source_id or f"s{index:02d}",
        tenant="acme" if index < 20 else "other",
        title=f"Book {index}",
        year=2000 + index % 5,
        tags=("even",) if index % 2 == 0 else ("odd",),
        acl_groups=frozenset({"secret"}) if index % 4 == 3 else frozenset(),
        origin=f"/books/{index}",
        current_version=1,
    )


def put(
    library: SqliteLibrary,
    shelf: Shelf,
    src: Source,
    version: int,
    vectors: npt.NDArray[np.float32],
) -> list[str]:
    passages = [
        Passage(f"{src.source_id} v{version} passage {i}", chapter=f"Chapter {i % 4}")
        for i in range(len(vectors))
    ]
    chunks = make_chunks(src.source_id, version, passages, tenant=src.tenant)
    src = replace(src, current_version=version)
    record = SourceVersion(
        source_id=src.source_id,
        version=version,
        content_sha256=f"{src.source_id}-{version}",
        parser="test/1",
        chunker=CHUNKER_VERSION,
        page_count=0,
        section_count=4,
        chunk_count=len(chunks),
        created_at="2026-01-01T00:00:00+00:00",
    )
    keys = tuple(embedding_key(p.text) for p in passages)
    library.commit_version(src, record, chunks, ChunkVectors(MODEL, keys, vectors))
    for chunk, vector in zip(chunks, vectors, strict=True):
        shelf.vectors[chunk.chunk_id] = vector
        shelf.source_of[chunk.chunk_id] = src.source_id
    return [c.chunk_id for c in chunks]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Shelf:
    path = tmp_path_factory.mktemp("hnsw") / "library.db"
    shelf = Shelf(path, {}, {})
    library = SqliteLibrary(path, hnsw_min_vectors=0)
    rng = np.random.default_rng(5)
    for index in range(SOURCES):
        put(library, shelf, source(index), 1, unit(rng, PER_SOURCE))
    library.close()
    return shelf


@pytest.fixture
def shelf(built: Shelf, tmp_path: Path) -> Shelf:
    """A private copy of the built library (tests change it)."""
    path = tmp_path / "library.db"
    shutil.copy(built.path, path)
    return Shelf(path, dict(built.vectors), dict(built.source_of))


@pytest.fixture
def graph_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each search the HNSW index was asked answered (True) or declined."""
    calls: list[bool] = []
    original = HnswIndex.query

    def spy(self: HnswIndex, *args: object, **kwargs: object) -> object:
        found = original(self, *args, **kwargs)  # type: ignore[arg-type]
        calls.append(found is not None)
        return found

    monkeypatch.setattr(HnswIndex, "query", spy)
    return calls


def search(
    library: SqliteLibrary,
    vector: npt.NDArray[np.float32],
    scope: AccessScope = ACME,
    filters: SearchFilters = EVERYTHING,
    limit: int = 10,
) -> list[DenseHit]:
    return list(library.search_vectors(vector, MODEL, scope, filters, limit))


def queries(count: int, seed: int = 9) -> npt.NDArray[np.float32]:
    return unit(np.random.default_rng(seed), count)


def admitted(shelf: Shelf, chunk: str, scope: AccessScope, filters: SearchFilters) -> bool:
    source_id = shelf.source_of[chunk]
    s = source(16, source_id) if source_id == "s99" else source(int(source_id[1:]))
    return scope.allows(s) and filters.admits_source(s.source_id, s.authors, s.tags, s.year)


def test_graph_finds_what_exact_search_finds(shelf: Shelf, graph_calls: list[bool]) -> None:
    exact = SqliteLibrary(shelf.path, hnsw_min_vectors=0)
    graph = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD)
    found = total = 0
    for q in queries(60):
        want = search(exact, q)
        got = search(graph, q)
        found += len({h.chunk_id for h in want} & {h.chunk_id for h in got})
        total += len(want)
        # Scores come from the stored vectors, as the exact search gives them (within
        # float32 rounding: a product over fewer rows may sum in another order).
        scores = {h.chunk_id: h.score for h in want}
        assert all(h.score == pytest.approx(float(shelf.vectors[h.chunk_id] @ q)) for h in got)
        assert all(
            scores[h.chunk_id] == pytest.approx(h.score) for h in got if h.chunk_id in scores
        )
        assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    assert found / total >= 0.95
    assert all(graph_calls) and len(graph_calls) == 60
    graph.close()
    exact.close()
    assert shelf.path.with_name("library.db.hnsw").exists()


@pytest.mark.parametrize(
    ("scope", "filters"),
    [
        (ACME, EVERYTHING),
        (AccessScope("acme", frozenset({"secret"})), EVERYTHING),
        (AccessScope("other", frozenset()), EVERYTHING),
        (ACME, SearchFilters(tags_any=frozenset({"even"}))),
        (ACME, SearchFilters(year_min=2002, year_max=2003)),
        (ACME, SearchFilters(section_prefix=("Chapter 1",))),
        (ACME, SearchFilters(source_ids=frozenset({"s01"}))),  # few rows: exact
    ],
)
def test_scope_and_filters_hold_even_for_the_nearest_row(
    shelf: Shelf, scope: AccessScope, filters: SearchFilters
) -> None:
    exact = SqliteLibrary(shelf.path, hnsw_min_vectors=0)
    graph = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD)
    # Aim straight at rows of every kind, admitted or not: the nearest is often forbidden.
    targets = list(shelf.vectors)[::97]
    found = total = 0
    for chunk in targets:
        q = shelf.vectors[chunk]
        got = search(graph, q, scope, filters)
        want = search(exact, q, scope, filters)
        for hit in got:
            assert admitted(shelf, hit.chunk_id, scope, filters), hit
        if not admitted(shelf, chunk, scope, filters):
            assert chunk not in {h.chunk_id for h in got}
        found += len({h.chunk_id for h in want} & {h.chunk_id for h in got})
        total += len(want)
        assert len(got) == len(want)
    assert found / max(total, 1) >= 0.95
    graph.close()
    exact.close()


def test_follows_new_versions_deletions_and_reused_rowids(
    shelf: Shelf, caplog: pytest.LogCaptureFixture
) -> None:
    graph = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD)
    rng = np.random.default_rng(21)
    old = [c for c, s in shelf.source_of.items() if s == "s00"]
    assert search(graph, shelf.vectors[old[0]])[0].chunk_id == old[0]  # index built
    gone = [c for c, s in shelf.source_of.items() if s == "s23"]  # the highest rowids
    gone_rowids = rowids(shelf, gone)
    graph.delete("other", "s23")
    graph.delete("acme", "s02")
    # s23's rowids are free again: the new version takes them, with other vectors.
    new = put(graph, shelf, source(0), 2, unit(rng, PER_SOURCE))
    assert rowids(shelf, new) == gone_rowids
    fresh = put(graph, shelf, source(16, "s99"), 1, unit(rng, PER_SOURCE))
    forbidden = set(old) | set(gone) | {c for c, s in shelf.source_of.items() if s == "s02"}

    def check(library: SqliteLibrary) -> None:
        everyone = AccessScope("other", frozenset())
        for chunk in old[:20] + gone[:20]:
            scope = everyone if chunk in gone else ACME
            hits = search(library, shelf.vectors[chunk], scope)
            assert not forbidden & {h.chunk_id for h in hits}
        for chunk in new[:20] + fresh[:20]:
            assert search(library, shelf.vectors[chunk])[0].chunk_id == chunk

    check(graph)
    graph.close()
    # Another process (exact search, no index) changes the library meanwhile: s99's
    # rowids go to yet other vectors.
    other = SqliteLibrary(shelf.path, hnsw_min_vectors=0)
    fresh_rowids = rowids(shelf, fresh)
    other.delete("acme", "s99")
    forbidden |= set(fresh)
    fresh = put(other, shelf, source(12, "s98"), 1, unit(rng, PER_SOURCE))
    assert rowids(shelf, fresh) == fresh_rowids
    other.close()
    # The next process loads the saved index and applies what changed since: no rebuild.
    with caplog.at_level(logging.INFO, logger="citadel.adapters.sqlite.hnsw"):
        reopened = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD)
        check(reopened)
        reopened.delete("acme", "s04")
        forbidden |= {c for c, s in shelf.source_of.items() if s == "s04"}
        check(reopened)
        reopened.close()
    assert not [r for r in caplog.records if "building" in r.getMessage()]


def rowids(shelf: Shelf, chunks: list[str]) -> list[int]:
    """The chunks' rowids, read straight from the file."""
    with closing(sqlite3.connect(shelf.path)) as conn:
        found = dict(conn.execute("SELECT chunk_id, rowid FROM chunks").fetchall())
    return sorted(found[c] for c in chunks if c in found)


@pytest.mark.parametrize("damage", ["missing", "truncated", "flipped", "sidecar", "model"])
def test_a_missing_or_damaged_index_is_rebuilt(
    shelf: Shelf, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    graph = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD)
    q = queries(1)[0]
    before = search(graph, q)
    graph.close()
    index = shelf.path.with_name("library.db.hnsw")
    sidecar = shelf.path.with_name("library.db.hnsw.json")
    data = bytearray(index.read_bytes())
    if damage == "missing":
        index.unlink()
    elif damage == "truncated":
        index.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
        data[100:164] = b"\xff" * 64
        index.write_bytes(data)
    elif damage == "sidecar":
        sidecar.write_text("{not json", encoding="utf-8")
    else:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
        sidecar.write_text(json.dumps({**meta, "model": "another/32"}), encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="citadel.adapters.sqlite.hnsw"):
        reopened = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD)
        assert search(reopened, q) == before
        reopened.close()
    assert any("building" in r.getMessage() for r in caplog.records)
    meta = json.loads(sidecar.read_text(encoding="utf-8"))
    assert meta["model"] == MODEL
    assert meta["bytes"] == index.stat().st_size


def test_below_the_threshold_results_are_the_exact_ones_bit_for_bit(
    shelf: Shelf, graph_calls: list[bool]
) -> None:
    exact = SqliteLibrary(shelf.path, hnsw_min_vectors=0)
    under = SqliteLibrary(shelf.path, hnsw_min_vectors=SOURCES * PER_SOURCE + 1)
    for q in queries(20):
        for scope, filters in [
            (ACME, EVERYTHING),
            (ACME, SearchFilters(tags_any=frozenset({"odd"}))),
        ]:
            assert search(under, q, scope, filters, 50) == search(exact, q, scope, filters, 50)
    under.close()
    exact.close()
    assert not graph_calls
    assert not shelf.path.with_name("library.db.hnsw").exists()


def test_the_index_declines_rather_than_answer_for_another_generation(tmp_path: Path) -> None:
    index = HnswIndex(tmp_path / "x.db.hnsw")
    vectors = unit(np.random.default_rng(1), 300)
    rowids = np.arange(1, 301, dtype=np.int64)
    index.sync(MODEL, 7, rowids, rowids * 13, vectors)
    assert index.query(vectors[0], 5, None, 7) is not None
    assert index.query(vectors[0], 5, None, 8) is None  # a search begun before a change
    assert index.query(vectors[0], 5, lambda label: label == 1, 7) is None  # cannot find 5
    # Rows that left are never returned, whatever the filter admits.
    index.sync(MODEL, 8, rowids[1:], rowids[1:] * 13, vectors[1:])
    found = index.query(vectors[0], 50, None, 8)
    assert found is not None
    assert 1 not in found.tolist()
    index.close()


def test_an_index_that_disagrees_with_its_rows_is_rebuilt(tmp_path: Path) -> None:
    index = HnswIndex(tmp_path / "x.db.hnsw")
    vectors = unit(np.random.default_rng(2), 200)
    rowids = np.arange(1, 201, dtype=np.int64)
    index.sync(MODEL, 1, rowids, rowids, vectors)
    index._labels = rowids[:100]  # forget rows the graph still holds live
    index._prints = rowids[:100]
    index.sync(MODEL, 2, rowids, rowids, vectors)  # reviving a live row fails: rebuild
    found = index.query(vectors[150], 1, None, 2)
    assert found is not None
    assert found.tolist() == [151]


@pytest.fixture
def gated_build(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Index builds wait for this event: a test decides when a build finishes."""
    gate = threading.Event()
    original = HnswIndex._built

    def held(self: HnswIndex, *args: Any) -> Any:
        assert gate.wait(30), "the test never released the build"
        return original(self, *args)

    monkeypatch.setattr(HnswIndex, "_built", held)
    return gate


def building(index: HnswIndex) -> bool:
    return index.building


def index_of(library: SqliteLibrary) -> HnswIndex:
    index: HnswIndex = library._dense._hnsw
    return index


def test_a_background_build_keeps_searches_exact_until_it_is_ready(
    shelf: Shelf, graph_calls: list[bool], gated_build: threading.Event
) -> None:
    served = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD, hnsw_background=True)
    exact = SqliteLibrary(shelf.path, hnsw_min_vectors=0)
    q = queries(1)[0]
    # The first search starts the build and does not wait for it.
    assert search(served, q) == search(exact, q)
    assert building(index_of(served))
    assert graph_calls == [False]
    # The library changes during the build; searches stay exact and see the change.
    new = put(served, shelf, source(5), 2, unit(np.random.default_rng(31), PER_SOURCE))
    assert search(served, shelf.vectors[new[0]]) == search(exact, shelf.vectors[new[0]])
    assert search(served, shelf.vectors[new[0]])[0].chunk_id == new[0]
    assert not any(graph_calls)
    assert not shelf.path.with_name("library.db.hnsw").exists()

    gated_build.set()
    assert index_of(served).wait_built(30)
    # Built at the older generation, then caught up by difference at the next search.
    for chunk in new[:10]:
        assert search(served, shelf.vectors[chunk])[0].chunk_id == chunk
    assert graph_calls[-10:] == [True] * 10
    assert shelf.path.with_name("library.db.hnsw").exists()
    served.close()
    exact.close()


def test_closing_during_a_background_build_installs_and_saves_nothing(
    shelf: Shelf, gated_build: threading.Event
) -> None:
    served = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD, hnsw_background=True)
    search(served, queries(1)[0])
    index = index_of(served)
    assert building(index)
    served.close()
    gated_build.set()
    assert index.wait_built(30)
    assert not building(index)
    assert not shelf.path.with_name("library.db.hnsw").exists()
    assert not shelf.path.with_name("library.db.hnsw.json").exists()


def test_a_background_build_that_fails_leaves_searches_exact(
    shelf: Shelf, graph_calls: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: HnswIndex, *args: Any) -> Any:
        raise TypeError("an unexpected failure inside the graph library")

    monkeypatch.setattr(HnswIndex, "_built", failing)
    served = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD, hnsw_background=True)
    exact = SqliteLibrary(shelf.path, hnsw_min_vectors=0)
    q = queries(1)[0]
    assert search(served, q) == search(exact, q)
    index = index_of(served)
    assert index.wait_built(30), "the build thread ended"
    assert not building(index)
    assert search(served, q) == search(exact, q)
    assert not any(graph_calls)
    served.close()
    exact.close()


def test_a_save_that_fails_oddly_still_installs_the_index(
    shelf: Shelf, graph_calls: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """hnswlib raises TypeError for a path it cannot convert; the build must not stick."""

    def odd(self: Any, path: str) -> None:
        raise TypeError("incompatible function arguments")

    monkeypatch.setattr(hnswlib.Index, "save_index", odd)
    served = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD, hnsw_background=True)
    q = queries(1)[0]
    search(served, q)
    index = index_of(served)
    assert index.wait_built(30)
    assert not building(index)
    assert search(served, q) and graph_calls[-1], "installed and searched, though not saved"
    assert not shelf.path.with_name("library.db.hnsw").exists()
    served.close()  # tries to save again: logs the failure, raises nothing


def test_close_waits_for_a_background_write_and_leaves_no_temporary_file(
    shelf: Shelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    writing, release = threading.Event(), threading.Event()
    original = HnswIndex._write

    def slow(self: HnswIndex, *args: Any) -> bool:
        writing.set()
        assert release.wait(30)
        return original(self, *args)

    monkeypatch.setattr(HnswIndex, "_write", slow)
    served = SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD, hnsw_background=True)
    search(served, queries(1)[0])
    assert writing.wait(30), "the build reached its write"
    closer = threading.Thread(target=served.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close waits for the write in flight"
    release.set()
    closer.join(30)
    assert not closer.is_alive()
    folder = shelf.path.parent
    assert not list(folder.glob("library.db.hnsw*.tmp-*"))
    assert (folder / "library.db.hnsw").exists() and (folder / "library.db.hnsw.json").exists()


def test_temporary_files_of_dead_processes_are_removed_on_open(shelf: Shelf) -> None:
    folder = shelf.path.parent
    dead = folder / "library.db.hnsw.tmp-999999999"
    dead_sidecar = folder / "library.db.hnsw.json.tmp-999999999"
    mine = folder / f"library.db.hnsw.tmp-{os.getpid()}"
    for path in (dead, dead_sidecar, mine):
        path.write_bytes(b"half a file")
    SqliteLibrary(shelf.path, hnsw_min_vectors=THRESHOLD).close()
    assert not dead.exists() and not dead_sidecar.exists()
    assert mine.exists(), "this process's own temporary name is left alone"
