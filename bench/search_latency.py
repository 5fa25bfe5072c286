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
lexical index (FTS5 BM25 with the scope) and the dense side (query embedding
plus exact search).

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
import itertools
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

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ports import ChunkVectors
from citadel.app.search import SearchService
from citadel.domain.chunking import CHUNKER_VERSION, chunk_id, embedding_key
from citadel.domain.document import Chunk
from citadel.domain.limits import Limits
from citadel.domain.search import SearchFilters, SearchRequest
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.text import STOPWORDS, words
from citadel.domain.users import Actor, Role

# Text with the statistics of English prose: about 45% function words (which
# the query side drops as stop words) and content words drawn from a Zipf
# distribution (exponent 1.07) over a 50,000-word vocabulary.
STOP = sorted(STOPWORDS)
CONTENT = [
    "".join(random.Random(rank).choices("abcdefghijklmnopqrstuvwxyz", k=4 + rank % 7)) + f"{rank}"
    for rank in range(50_000)
]
ZIPF = list(itertools.accumulate(1 / (rank + 1) ** 1.07 for rank in range(len(CONTENT))))
QUERY_RANKS = slice(30, 20_000)


def prose(rng: random.Random, length: int) -> str:
    function_words = rng.choices(STOP, k=int(length * 0.45))
    content = rng.choices(CONTENT, cum_weights=ZIPF, k=length - len(function_words))
    tokens = function_words + content
    rng.shuffle(tokens)
    return " ".join(tokens) + "."


def question(rng: random.Random) -> str:
    # What readers ask about: content words of middling frequency, with a few
    # function words around them.
    ranks = CONTENT[QUERY_RANKS]
    cumulative = [w - ZIPF[QUERY_RANKS.start - 1] for w in ZIPF[QUERY_RANKS]]
    content = rng.choices(ranks, cum_weights=cumulative, k=rng.randint(2, 5))
    return " ".join(rng.choices(STOP, k=3) + content)


CHUNKS_PER_SOURCE = 500


def clustered(
    rng: np.random.Generator, count: int, dimension: int, topic: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """One source's vectors: its topic (shared by four sources), plus a direction per
    50-chunk section, plus noise: cosine about 0.70 within a section, 0.47 within a
    topic, 0 otherwise."""
    sections = unit(rng, (count + 49) // 50, dimension)[np.arange(count) // 50]
    return normalised(topic + 0.7 * sections + 0.8 * unit(rng, count, dimension))


def normalised(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.asarray(matrix / np.linalg.norm(matrix, axis=1, keepdims=True), dtype=np.float32)


def unit(rng: np.random.Generator, count: int, dimension: int) -> npt.NDArray[np.float32]:
    return normalised(rng.standard_normal((count, dimension)).astype(np.float32))


def fill(
    library: SqliteLibrary, size: int, dimension: int, rng: random.Random, vectors: str = "random"
) -> None:
    vectors_rng = np.random.default_rng(7)
    topics = unit(np.random.default_rng(8), max(1, size // CHUNKS_PER_SOURCE // 4), dimension)
    for first in range(0, size, CHUNKS_PER_SOURCE):
        count = min(CHUNKS_PER_SOURCE, size - first)
        source_id = f"bench-{first // CHUNKS_PER_SOURCE:05d}"
        chunks = []
        for ordinal in range(count):
            text = prose(rng, 180)
            sha = f"{rng.getrandbits(256):064x}"
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(source_id, 1, ordinal, sha, tenant="bench"),
                    source_id=source_id,
                    version=1,
                    ordinal=ordinal,
                    text=text,
                    sha256=sha,
                    section_path=(f"Chapter {ordinal // 50 + 1}",),
                    chapter=f"Chapter {ordinal // 50 + 1}",
                    section="",
                    page_start=ordinal + 1,
                    page_end=ordinal + 1,
                    page_label_start=str(ordinal + 1),
                    page_label_end=str(ordinal + 1),
                    char_start=ordinal * 2000,
                    char_end=ordinal * 2000 + len(text),
                )
            )
        if vectors == "clustered":
            topic = topics[(first // CHUNKS_PER_SOURCE) % len(topics)]
            matrix = clustered(vectors_rng, count, dimension, topic)
        else:
            matrix = vectors_rng.standard_normal((count, dimension)).astype(np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        source = Source(
            source_id=source_id,
            tenant="bench",
            title=f"Synthetic book {source_id}",
            origin=source_id,
            current_version=1,
        )
        version = SourceVersion(
            source_id=source_id,
            version=1,
            content_sha256=source_id,
            parser="bench",
            chunker=CHUNKER_VERSION,
            page_count=count,
            section_count=10,
            chunk_count=count,
            created_at="2026-01-01",
        )
        keys = tuple(embedding_key(c.text + c.chunk_id) for c in chunks)
        library.commit_version(
            source, version, chunks, ChunkVectors(model=EMBEDDER.name, keys=keys, matrix=matrix)
        )


EMBEDDER = MiniLmEmbedder()


def open_library(home: Path, size: int, vectors: str = "random") -> tuple[SqliteLibrary, float]:
    """The synthetic library of ``size`` chunks in ``home``, filled unless a complete
    one is already there; returns it (exact dense search) with the seconds spent
    filling (0 if reused). The vectors are stored under the embedder's name, so a
    library filled for another model is filled again."""
    name = f"library-{size}" + ("" if vectors == "random" else f"-{vectors}")
    path = home / f"{name}.db"
    done = home / f"{name}.done"
    marker = f"{size} {EMBEDDER.name}\n"
    if path.exists() and done.exists() and done.read_text() == marker:
        return SqliteLibrary(path, hnsw_min_vectors=0), 0.0
    for stale in (
        done,
        path,
        path.with_name(path.name + "-wal"),
        path.with_name(path.name + "-shm"),
    ):
        stale.unlink(missing_ok=True)
    library = SqliteLibrary(path, hnsw_min_vectors=0)
    started = time.perf_counter()
    fill(library, size, EMBEDDER.dimension, random.Random(size), vectors)
    fill_s = time.perf_counter() - started
    done.write_text(marker)
    return library, fill_s


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


def run(
    size: int, queries: int, keep: Path | None, hnsw_min: int = 0, vectors: str = "random"
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
        lexical_timings, embed_timings = [], []
        dense_timings: dict[str, list[float]] = {name: [] for name in names}
        query_vectors = []
        for i, q in enumerate(questions):
            tokens = words(q)
            terms = tuple(dict.fromkeys(t for t in tokens if t not in STOPWORDS))
            began = time.perf_counter()
            library.search(terms, scope, SearchFilters(), 100)
            lexical_timings.append((time.perf_counter() - began) * 1000)
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
    embed_p50, embed_p95 = percentiles(embed_timings)
    return (
        row
        | memory
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
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    rows = [run(size, args.queries, args.keep, args.hnsw_min, args.vectors) for size in args.sizes]
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(f"{r['chunks']:>7} chunks ({r['vectors']} vectors):")
        for name in ("exact", "hnsw"):
            if f"{name}_p50_ms" in r:
                print(
                    f"  {name}: hybrid p50 {r[f'{name}_p50_ms']} ms, p95 {r[f'{name}_p95_ms']} ms;"
                    f" dense alone {r[f'{name}_dense_p50_ms']} / {r[f'{name}_dense_p95_ms']} ms"
                )
        rest = {k: v for k, v in r.items() if not k.startswith(("exact_", "hnsw_"))}
        print("  " + "; ".join(f"{k} {v}" for k, v in rest.items()))


if __name__ == "__main__":
    main()
