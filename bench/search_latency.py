"""Benchmark: hybrid search latency on synthetic libraries of 10k and 100k chunks.

Each query runs the full hybrid path — query embedding with the real MiniLM
model (distinct queries, so the query-vector cache never hits), FTS5 BM25,
exact dense search over every chunk vector, re-scoring and fusion, and
reading the passages back — against a SQLite library filled with synthetic
chunks. Chunk text has the statistics of English prose (function words plus
Zipf-distributed content words), so BM25 sees realistic posting lists; queries
ask for content words of middling frequency; chunk vectors are random unit vectors, since the
cost of exact search does not depend on their content. Reports p50/p95 and
the process's peak RSS, and the same queries through each part alone: the
lexical index (BM25 from memory, ``lexical_memory.py``, with the scope) and the
dense side (query embedding plus exact search). ``--lexical-fts5`` also runs
hybrid and lexical with FTS5 ranking (before the in-memory index), alternating.

Run: `.venv/bin/python bench/search_latency.py [--sizes 10000 100000] [--queries 300] [--json]`

Filling the 100k library takes minutes; `--keep DIR` builds each library once
into DIR (library-<size>.db) and reuses it on later runs. The library and the
questions come from fixed seeds, so a kept library answers the same questions
as a fresh one.

`--hnsw-min N` also searches through the HNSW index (CITADEL_HNSW_MIN_VECTORS=N)
in the same run, each question alternately exact and HNSW, and reports the index's
build time (timed at its first search), its file size, the RSS it added, and its
recall@10 against the exact dense top 10 on the same questions. Random vectors
have no neighbourhoods (every row is about as near as any other), the worst case
for a graph index; `--vectors clustered` fills a library (library-<size>-clustered.db)
whose vectors have topic and section structure, as text embeddings do, and also
reports recall for questions drawn from that structure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.search import SearchService
from citadel.domain.limits import Limits
from citadel.domain.search import SearchFilters, SearchRequest
from citadel.domain.source import AccessScope
from citadel.domain.text import STOPWORDS, words
from citadel.domain.users import Actor, Role
from synthetic_library import EMBEDDER, normalised, open_library, question, unit


def percentiles(timings: list[float]) -> tuple[float, float]:
    ordered = sorted(timings)
    return (
        round(statistics.median(ordered), 2),
        round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    )


def rss_mib() -> float:
    """This process's resident memory now (Linux), else its peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def near_rows(library: SqliteLibrary, count: int) -> npt.NDArray[np.float32]:
    """Questions drawn from the library's own structure: a stored vector plus as much
    noise again (a question about a passage, not the passage)."""
    rng = np.random.default_rng(99)
    (rows,) = library.database.reader.execute("SELECT count(*) FROM chunks").fetchone()
    picked = sorted({int(r) + 1 for r in rng.integers(0, rows, count)})
    marks = ", ".join("?" * len(picked))
    blobs = library.database.reader.execute(
        "SELECT e.vector FROM chunks c JOIN embeddings e ON e.key = c.embed_key"
        f" WHERE c.rowid IN ({marks})",
        picked,
    ).fetchall()
    matrix = np.frombuffer(b"".join(b[0] for b in blobs), dtype="<f4").reshape(len(blobs), -1)
    return normalised(matrix + unit(rng, len(blobs), matrix.shape[1]))


def recall_at_10(
    exact: SqliteLibrary, graph: SqliteLibrary, vectors: list[npt.NDArray[np.float32]]
) -> float:
    scope = AccessScope("bench", frozenset())
    found = 0
    for vector in vectors:
        want = exact.search_vectors(vector, EMBEDDER.name, scope, SearchFilters(), 100)[:10]
        got = graph.search_vectors(vector, EMBEDDER.name, scope, SearchFilters(), 100)[:10]
        found += len({h.chunk_id for h in want} & {h.chunk_id for h in got})
    return round(found / (10 * len(vectors)), 4)


def lexical_ready(library: SqliteLibrary, tenant: str = "bench") -> None:
    """Until ``library``'s in-memory lexical index for ``tenant`` is current."""
    live = library._ranking.live(tenant)
    while live.current(library.database.generation()) is None:
        live.wait(120)


def run(
    size: int,
    queries: int,
    keep: Path | None,
    hnsw_min: int = 0,
    vectors: str = "random",
    fts5: bool = False,
) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as scratch:
        library, fill_s = open_library(keep or Path(scratch), size, vectors)
        libraries = {"exact": library}
        load = [round(x, 2) for x in os.getloadavg()]
        actor = Actor(user_id="bench", tenant="bench", role=Role.READER)
        scope = AccessScope.of(actor)
        rng = random.Random(11)
        questions = [question(rng) for _ in range(queries)]
        services = {
            "exact": SearchService(library, library, Limits(), vectors=library, embedder=EMBEDDER)
        }
        EMBEDDER.embed(["warm"])
        before, began = rss_mib(), time.perf_counter()
        index = library._ranking.live("bench").current(library.database.generation())
        lexical_index = {
            "lexical_index_build_s": round(time.perf_counter() - began, 2),
            "lexical_index_mib": round(index.nbytes / 2**20, 1) if index else None,
            "lexical_index_rss_added_mib": round(rss_mib() - before, 1),
        }
        if fts5:
            other = SqliteLibrary(library.database.path, hnsw_min_vectors=0, lexical_memory="off")
            libraries["fts5"] = other
            services["fts5"] = SearchService(
                other, other, Limits(), vectors=other, embedder=EMBEDDER
            )
            for q in questions[:5]:
                services["fts5"].search(SearchRequest(q + " warm"), actor)
        before = rss_mib()
        for q in questions[:5]:  # warm-up: model load, matrix load, page cache
            services["exact"].search(SearchRequest(q + " warm"), actor)
        memory = {"exact_rss_added_mib": round(rss_mib() - before, 1)}
        index: dict[str, object] = {}
        if hnsw_min:
            graph = SqliteLibrary(library.database.path, hnsw_min_vectors=hnsw_min)
            libraries["hnsw"] = graph
            services["hnsw"] = SearchService(
                graph, graph, Limits(), vectors=graph, embedder=EMBEDDER
            )
            before = rss_mib()
            path = library.database.path.with_name(library.database.path.name + ".hnsw")
            existed = path.exists()
            began = time.perf_counter()
            graph.search_vectors(
                EMBEDDER.embed(["warm"])[0], EMBEDDER.name, scope, SearchFilters(), 10
            )
            index = {
                "index": "loaded" if existed else "built",
                "index_first_search_s": round(time.perf_counter() - began, 1),
                "index_mib": round(path.stat().st_size / 2**20, 1),
                # The second library's own matrix, plus the index.
                "hnsw_rss_added_mib": round(rss_mib() - before, 1),
            }
            for q in questions[:5]:
                services["hnsw"].search(SearchRequest(q + " warm"), actor)
        # Time searches only once each library ranks lexically from memory: until its
        # in-memory index is built (in the background, ~8 s at 100k) FTS5 answers, and
        # the build competes for the CPU with the searches being timed.
        for name, each in libraries.items():
            if name != "fts5":
                lexical_ready(each)
        names = list(services)
        timings: dict[str, list[float]] = {name: [] for name in names}
        empty = 0
        for i, q in enumerate(questions):
            # Alternate which one goes first, so neither always follows the other.
            for name in names[i % 2 :] + names[: i % 2]:
                began = time.perf_counter()
                result = services[name].search(SearchRequest(q, limit=10), actor)
                timings[name].append((time.perf_counter() - began) * 1000)
                empty += not result.results
        # The same questions through each part alone, for the breakdown; " alone"
        # makes every text new to the embedder's callers (nothing here caches).
        lexical_timings, embed_timings, fts5_timings = [], [], []
        dense_timings: dict[str, list[float]] = {name: [] for name in names}
        query_vectors = []
        for i, q in enumerate(questions):
            tokens = words(q)
            terms = tuple(dict.fromkeys(t for t in tokens if t not in STOPWORDS))
            began = time.perf_counter()
            library.search(terms, scope, SearchFilters(), 100)
            lexical_timings.append((time.perf_counter() - began) * 1000)
            if fts5:
                began = time.perf_counter()
                libraries["fts5"].search(terms, scope, SearchFilters(), 100)
                fts5_timings.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            vector = EMBEDDER.embed([q + " alone"])[0]
            embed_ms = (time.perf_counter() - began) * 1000
            embed_timings.append(embed_ms)
            query_vectors.append(vector)
            for name in names[i % 2 :] + names[: i % 2]:
                began = time.perf_counter()
                libraries[name].search_vectors(vector, EMBEDDER.name, scope, SearchFilters(), 100)
                dense_timings[name].append(embed_ms + (time.perf_counter() - began) * 1000)
        if hnsw_min:
            index["recall_at_10"] = recall_at_10(library, libraries["hnsw"], query_vectors)
            if vectors == "clustered":
                near = list(near_rows(library, queries))
                index["recall_at_10_near_rows"] = recall_at_10(library, libraries["hnsw"], near)
        load += [round(x, 2) for x in os.getloadavg()]
        for service in services.values():
            service.close()
        for each in libraries.values():
            each.close()
    row: dict[str, object] = {
        "chunks": size,
        "vectors": vectors,
        "queries": queries,
        "fill_s": round(fill_s, 1),
    }
    for name in names:
        p50, p95 = percentiles(timings[name])
        dense_p50, dense_p95 = percentiles(dense_timings[name])
        row |= {
            f"{name}_p50_ms": p50,
            f"{name}_p95_ms": p95,
            f"{name}_dense_p50_ms": dense_p50,
            f"{name}_dense_p95_ms": dense_p95,
        }
    lexical_p50, lexical_p95 = percentiles(lexical_timings)
    if fts5:
        row["lexical_fts5_p50_ms"], row["lexical_fts5_p95_ms"] = percentiles(fts5_timings)
    embed_p50, embed_p95 = percentiles(embed_timings)
    return (
        row
        | memory
        | lexical_index
        | index
        | {
            "lexical_p50_ms": lexical_p50,
            "lexical_p95_ms": lexical_p95,
            "embed_p50_ms": embed_p50,
            "embed_p95_ms": embed_p95,
            "queries_without_results": empty,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "load_1_5_15_before_after": load,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--keep", type=Path, help="build each library once in this directory and reuse it"
    )
    parser.add_argument(
        "--hnsw-min",
        type=int,
        default=0,
        help="also search through the HNSW index with this threshold (0: exact only)",
    )
    parser.add_argument("--vectors", choices=["random", "clustered"], default="random")
    parser.add_argument("--lexical-fts5", action="store_true", help="also rank with FTS5")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    rows = [
        run(size, args.queries, args.keep, args.hnsw_min, args.vectors, args.lexical_fts5)
        for size in args.sizes
    ]
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(f"{r['chunks']:>7} chunks ({r['vectors']} vectors):")
        for name in ("exact", "hnsw", "fts5"):
            if f"{name}_p50_ms" in r:
                print(
                    f"  {name}: hybrid p50 {r[f'{name}_p50_ms']} ms, p95 {r[f'{name}_p95_ms']} ms;"
                    f" dense alone {r[f'{name}_dense_p50_ms']} / {r[f'{name}_dense_p95_ms']} ms"
                )
        rest = {k: v for k, v in r.items() if not k.startswith(("exact_", "hnsw_"))}
        print("  " + "; ".join(f"{k} {v}" for k, v in rest.items()))


if __name__ == "__main__":
    main()
