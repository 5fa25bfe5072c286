"""Benchmark: lexical search from memory against FTS5's bm25(), same library, same run.

Every question is ranked twice, alternately first: by FTS5 (``lexical.py``, the
reference) and from the in-memory index (``lexical_memory.py``). Reports p50 /
p95 of each per round and the median over rounds, the index's build time and
memory (its arrays, and the RSS the build added), and how many questions' top
``--limit`` differ between the two (ids, order, or a score by more than a
relative 1e-6), with the first few differences spelt out.

Libraries: a BEIR data set's evaluation library (the one ``citadel eval retrieval
--home DIR`` keeps; questions from its queries.jsonl and qrels/SPLIT.tsv), or
the synthetic libraries of ``search_latency.py`` (``--sizes``, kept in ``--keep``).
``--hybrid`` also times the whole hybrid search on the BEIR library (query
embedding included, limit 10), BM25 from memory against FTS5, alternating.

Run:
  .venv/bin/python bench/lexical_latency.py --home /tmp/scifact-i \
      --beir ../shared/data/scifact --split train --rounds 3 --hybrid
  .venv/bin/python bench/lexical_latency.py --sizes 100000 --keep /tmp/citadel-bench
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from citadel.adapters.beir import load_beir
from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.evaluation import EVAL_TENANT
from citadel.app.ports import LexicalHit
from citadel.app.search import SearchService
from citadel.domain.limits import Limits
from citadel.domain.search import SearchFilters, SearchRequest
from citadel.domain.source import AccessScope
from citadel.domain.text import STOPWORDS, words
from citadel.domain.users import Actor, Role
from search_latency import percentiles, rss_mib
from synthetic_library import open_library, question


def terms_of(text: str) -> tuple[str, ...]:
    """The query terms exactly as the search use case makes them (app/search.py)."""
    tokens = words(text)
    return tuple(dict.fromkeys([t for t in tokens if t not in STOPWORDS] or tokens))


def differs(want: Sequence[LexicalHit], got: Sequence[LexicalHit]) -> str:
    """'' when equal; else what differs first."""
    if [h.chunk_id for h in want] != [h.chunk_id for h in got]:
        same = {h.chunk_id for h in want} == {h.chunk_id for h in got}
        return f"{'order' if same else 'ids'} differ (FTS5 {len(want)} hits, memory {len(got)})"
    for rank, (a, b) in enumerate(zip(want, got, strict=True)):
        if abs(a.score - b.score) > 1e-6 * abs(a.score):
            return f"score at rank {rank + 1}: {a.score!r} against {b.score!r}"
    return ""


def measure(
    library: SqliteLibrary, scope: AccessScope, questions: list[tuple[str, ...]], args: object
) -> dict[str, object]:
    limit, rounds = getattr(args, "limit"), getattr(args, "rounds")  # noqa: B009
    ranking = library._ranking
    filters = SearchFilters()
    before = rss_mib()
    began = time.perf_counter()
    live = ranking.live(scope.tenant)
    index = live.current(library.database.generation())
    build_s = time.perf_counter() - began
    assert index is not None
    added = rss_mib() - before
    # What the allocator keeps of the build's transient buffers, handed back.
    ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    kept = rss_mib() - before
    for terms in questions[:5]:  # warm-up: token cache, page cache
        ranking.from_fts5(terms, scope, filters, limit)
        ranking.from_memory(terms, scope, filters, limit)
    per_round: list[dict[str, float]] = []
    fallbacks, different, examples = 0, 0, []
    for round_ in range(rounds):
        fts5, memory = [], []
        for i, terms in enumerate(questions):
            for which in (0, 1) if i % 2 else (1, 0):
                began = time.perf_counter()
                if which == 0:
                    want = ranking.from_fts5(terms, scope, filters, limit)
                    fts5.append((time.perf_counter() - began) * 1000)
                else:
                    found = ranking.from_memory(terms, scope, filters, limit)
                    memory.append((time.perf_counter() - began) * 1000)
            if round_ == 0:
                if found is None:
                    fallbacks += 1
                    continue
                why = differs(want, found)
                if why:
                    different += 1
                    if len(examples) < 5:
                        examples.append(f"{' '.join(terms)!r}: {why}")
        fts5_p50, fts5_p95 = percentiles(fts5)
        memory_p50, memory_p95 = percentiles(memory)
        per_round.append(
            {
                "fts5_p50": fts5_p50,
                "fts5_p95": fts5_p95,
                "mem_p50": memory_p50,
                "mem_p95": memory_p95,
            }
        )
    medians = {
        f"{key}_ms": round(statistics.median(r[key] for r in per_round), 2) for key in per_round[0]
    }
    return {
        "chunks": index.rows,
        "questions": len(questions),
        "limit": limit,
        "index_build_s": round(build_s, 2),
        "index_mib": round(index.nbytes / 2**20, 1),
        "index_rss_added_mib": round(added, 1),
        "index_rss_added_after_malloc_trim_mib": round(kept, 1),
        "median_of_rounds": medians,
        "rounds": per_round,
        "questions_not_from_memory": fallbacks,
        "questions_whose_top_differs": different,
        "examples": examples,
    }


def hybrid(path: Path, texts: list[str], rounds: int) -> dict[str, object]:
    """The whole hybrid search (query embedding included, limit 10) with BM25 from
    memory and from FTS5, alternating, as the evaluation's actor; fresh services
    each round, so the query-vector cache never hits."""
    embedder = MiniLmEmbedder()
    actor = Actor(user_id="evaluation", tenant=EVAL_TENANT, role=Role.ADMIN)
    libraries = {
        "memory": SqliteLibrary(path, hnsw_min_vectors=0, lexical_memory="sync"),
        "fts5": SqliteLibrary(path, hnsw_min_vectors=0, lexical_memory="off"),
    }
    per_round = []
    for _ in range(rounds):
        services = {
            name: SearchService(lib, lib, Limits(), vectors=lib, embedder=embedder)
            for name, lib in libraries.items()
        }
        for service in services.values():
            service.search(SearchRequest(texts[0] + " warm"), actor)
        timings: dict[str, list[float]] = {name: [] for name in services}
        for i, text in enumerate(texts):
            for name in ("memory", "fts5") if i % 2 else ("fts5", "memory"):
                began = time.perf_counter()
                services[name].search(SearchRequest(text, limit=10), actor)
                timings[name].append((time.perf_counter() - began) * 1000)
        row = {}
        for name, values in timings.items():
            row[f"hybrid_{name}_p50"], row[f"hybrid_{name}_p95"] = percentiles(values)
        per_round.append(row)
        for service in services.values():
            service.close()
    for lib in libraries.values():
        lib.close()
    medians = {
        f"{key}_ms": round(statistics.median(r[key] for r in per_round), 2) for key in per_round[0]
    }
    return {"median_of_rounds": medians, "rounds": per_round}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", type=Path, help="a `citadel eval retrieval --home` directory")
    parser.add_argument("--beir", type=Path, help="its BEIR data set (questions)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--sizes", type=int, nargs="*", default=[])
    parser.add_argument("--keep", type=Path, help="search_latency.py's library directory")
    parser.add_argument("--queries", type=int, default=300, help="synthetic questions")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--hybrid", action="store_true", help="also time hybrid search on the --home library"
    )
    args = parser.parse_args()
    load = [round(x, 2) for x in os.getloadavg()]
    rows = []
    if args.home is not None:
        dataset = load_beir(args.beir, args.split)
        questions = [terms_of(text) for text in dataset.queries.values()]
        library = SqliteLibrary(args.home / "citadel.db", hnsw_min_vectors=0, lexical_memory="sync")
        scope = AccessScope(EVAL_TENANT, frozenset(), unrestricted=True)
        rows.append({"library": str(args.beir.name)} | measure(library, scope, questions, args))
        library.close()
        if args.hybrid:
            texts = list(dataset.queries.values())
            rows.append(
                {"library": f"{args.beir.name} hybrid"}
                | hybrid(library.database.path, texts, args.rounds)
            )
    for size in args.sizes:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
        library, _ = open_library(args.keep or Path(f"/tmp/lexical-bench-{size}"), size)
        library.close()
        library = SqliteLibrary(library.database.path, hnsw_min_vectors=0, lexical_memory="sync")
        rng = random.Random(11)
        questions = [terms_of(question(rng)) for _ in range(args.queries)]
        scope = AccessScope("bench", frozenset())
        rows.append({"library": f"synthetic {size}"} | measure(library, scope, questions, args))
        library.close()
    load += [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({"load_1_5_15_before_after": load, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
