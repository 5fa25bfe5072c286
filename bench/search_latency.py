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
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ports import ChunkVectors
from citadel.app.search import SearchService
from citadel.domain.chunking import CHUNKER_VERSION, chunk_id, embedding_key
from citadel.domain.document import Chunk
from citadel.domain.model import Actor, Limits, Role, SearchFilters, SearchRequest
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.text import STOPWORDS, words

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


def fill(library: SqliteLibrary, size: int, dimension: int, rng: random.Random) -> None:
    vectors_rng = np.random.default_rng(7)
    for first in range(0, size, CHUNKS_PER_SOURCE):
        count = min(CHUNKS_PER_SOURCE, size - first)
        source_id = f"bench-{first // CHUNKS_PER_SOURCE:05d}"
        chunks = []
        for ordinal in range(count):
            text = prose(rng, 180)
            sha = f"{rng.getrandbits(256):064x}"
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(source_id, 1, ordinal, sha),
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


def open_library(home: Path, size: int) -> tuple[SqliteLibrary, float]:
    """The synthetic library of ``size`` chunks in ``home``, filled unless a complete
    one is already there; returns it with the seconds spent filling (0 if reused)."""
    path = home / f"library-{size}.db"
    done = home / f"library-{size}.done"
    if path.exists() and done.exists():
        return SqliteLibrary(path), 0.0
    for stale in (
        done,
        path,
        path.with_name(path.name + "-wal"),
        path.with_name(path.name + "-shm"),
    ):
        stale.unlink(missing_ok=True)
    library = SqliteLibrary(path)
    started = time.perf_counter()
    fill(library, size, EMBEDDER.dimension, random.Random(size))
    fill_s = time.perf_counter() - started
    done.write_text(f"{size}\n")
    return library, fill_s


def percentiles(timings: list[float]) -> tuple[float, float]:
    ordered = sorted(timings)
    return (
        round(statistics.median(ordered), 2),
        round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    )


def run(size: int, queries: int, keep: Path | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        library, fill_s = open_library(keep or Path(scratch), size)
        search = SearchService(library, library, Limits(), vectors=library, embedder=EMBEDDER)
        actor = Actor(user_id="bench", tenant="bench", role=Role.READER)
        rng = random.Random(11)
        questions = [question(rng) for _ in range(queries)]
        for q in questions[:5]:  # warm-up: model load, matrix load, page cache
            search.search(SearchRequest(q + " warm"), actor)
        timings = []
        empty = 0
        for q in questions:
            began = time.perf_counter()
            result = search.search(SearchRequest(q, limit=10), actor)
            timings.append((time.perf_counter() - began) * 1000)
            empty += not result.results
        # The same questions through each part alone, for the breakdown; " alone"
        # makes every text new to the embedder's callers (nothing here caches).
        scope = AccessScope.of(actor)
        lexical_timings, dense_timings, embed_timings = [], [], []
        for q in questions:
            tokens = words(q)
            terms = tuple(dict.fromkeys(t for t in tokens if t not in STOPWORDS))
            began = time.perf_counter()
            library.search(terms, scope, SearchFilters(), 100)
            lexical_timings.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            vector = EMBEDDER.embed([q + " alone"])[0]
            embedded = time.perf_counter()
            library.search_vectors(vector, EMBEDDER.name, scope, SearchFilters(), 100)
            dense_timings.append((time.perf_counter() - began) * 1000)
            embed_timings.append((embedded - began) * 1000)
        search.close()
        library.close()
    p50, p95 = percentiles(timings)
    lexical_p50, lexical_p95 = percentiles(lexical_timings)
    dense_p50, dense_p95 = percentiles(dense_timings)
    embed_p50, embed_p95 = percentiles(embed_timings)
    return {
        "chunks": size,
        "queries": queries,
        "fill_s": round(fill_s, 1),
        "p50_ms": p50,
        "p95_ms": p95,
        "lexical_p50_ms": lexical_p50,
        "lexical_p95_ms": lexical_p95,
        "dense_p50_ms": dense_p50,
        "dense_p95_ms": dense_p95,
        "embed_p50_ms": embed_p50,
        "embed_p95_ms": embed_p95,
        "queries_without_results": empty,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--keep", type=Path, help="build each library once in this directory and reuse it"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    rows = [run(size, args.queries, args.keep) for size in args.sizes]
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(
            f"{r['chunks']:>7} chunks: hybrid p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms;"
            f" lexical alone {r['lexical_p50_ms']} / {r['lexical_p95_ms']} ms;"
            f" dense alone {r['dense_p50_ms']} / {r['dense_p95_ms']} ms"
            f" (query embedding {r['embed_p50_ms']} / {r['embed_p95_ms']} ms);"
            f" peak RSS {r['peak_rss_mib']} MiB; filled in {r['fill_s']} s"
        )


if __name__ == "__main__":
    main()
