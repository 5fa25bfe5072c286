"""Benchmark: what one citadel server keeps in memory over a PostgreSQL library.

Ingests HTML pages of the PostgreSQL manual (``../shared/books/html``) into a fresh
embedded PostgreSQL database until the library holds ``--chunks`` chunks, then opens
a NEW server (``build()``, as a process starting would) and measures with
``tracemalloc`` (numpy's arrays included) what stays allocated after:

1. the first lexical search (the tenant's BM25 index read into memory),
2. the first dense search (the vector matrix of every current chunk),
3. ``--answers`` distinct answered questions after a warm-up of 8 (the answer cache,
   256 entries by default, and whatever else the answer path keeps: phrase postings),

and, in a separate untraced pass, how long a new server's first lexical and dense
searches take and the same after one small write through another server (what
every server pays again whenever any server's write moves the generation). Prints
one JSON object.

Run:
  .venv/bin/python bench/postgres_memory.py --chunks 10000
  .venv/bin/python bench/postgres_memory.py --chunks 10000 --embedder minilm
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.postgres (the embedded server)

from tests import postgres  # noqa: E402

from citadel.app.answer import AnswerRequest  # noqa: E402
from citadel.app.errors import IngestError  # noqa: E402
from citadel.app.ingest import IngestOptions  # noqa: E402
from citadel.bootstrap import Services, build  # noqa: E402
from citadel.config import Settings  # noqa: E402
from citadel.domain.search import SearchMode, SearchRequest  # noqa: E402
from citadel.domain.users import Actor, Role  # noqa: E402

MANUAL = ROOT.parent / "shared" / "books" / "html" / "postgresql-15-manual"
ADMIN = Actor(user_id="local", tenant="default", role=Role.ADMIN)


def held() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def _first_searches(services: Services) -> dict[str, float]:
    out = {}
    for mode in (SearchMode.LEXICAL, SearchMode.DENSE):
        began = time.perf_counter()
        services.search.search(SearchRequest("vacuum", mode=mode), ADMIN)
        out[mode.value] = round(time.perf_counter() - began, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--answers", type=int, default=256)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--url", help="a server whose user may CREATE DATABASE")
    args = parser.parse_args()
    server = postgres.Server(args.url, None, None) if args.url else postgres.start()
    if args.url:
        server.prepare_template()
    try:
        url = server.fresh_database()
        home = Path(tempfile.mkdtemp(prefix="citadel-mem-"))
        settings = Settings(home=home, db=url, embedder=args.embedder)
        writer = build(settings)
        began = time.perf_counter()
        chunks = 0
        for page in sorted(MANUAL.glob("*.html")):
            try:
                report = writer.ingest.ingest(
                    writer.documents.open(page), IngestOptions(tenant="default"), actor=ADMIN
                )
            except IngestError:
                continue  # a table-of-contents page holds no body text
            chunks += report.chunks
            if chunks >= args.chunks:
                break
        ingest_s = time.perf_counter() - began

        # Times without tracemalloc (which slows allocation): a new server's first
        # searches, then the same after one small write through another server.
        timed = build(settings)
        times = {"first": _first_searches(timed)}
        note = home / "note.md"
        note.write_text("# A note\n\nOne small write moves the generation.\n")
        writer.ingest.ingest(
            writer.documents.open(note), IngestOptions(tenant="default"), actor=ADMIN
        )
        times["after_a_write"] = _first_searches(timed)
        timed.close()
        writer.close()

        tracemalloc.start()
        base = held()
        services = build(settings)  # a server starting: nothing read yet
        opened = held()
        began = time.perf_counter()
        services.search.search(SearchRequest("vacuum", mode=SearchMode.LEXICAL), ADMIN)
        lexical_s = time.perf_counter() - began
        after_lexical = held()
        began = time.perf_counter()
        services.search.search(SearchRequest("vacuum", mode=SearchMode.DENSE), ADMIN)
        dense_s = time.perf_counter() - began
        words = ["index", "vacuum", "replication", "trigger", "role", "backup", "lock", "wal"]
        for word in words:  # warm-up: the support checker's tables load on first use
            asyncio.run(services.answer.answer(AnswerRequest(SearchRequest(word)), ADMIN))
        after_dense = held()
        for number in range(args.answers):
            question = f"How does {words[number % len(words)]} work? ({number})"
            asyncio.run(services.answer.answer(AnswerRequest(SearchRequest(question)), ADMIN))
        after_answers = held()
        tracemalloc.stop()
        services.close()
        mib = 2**20
        print(
            json.dumps(
                {
                    "chunks": chunks,
                    "reread_s_untraced": times,
                    "embedder": args.embedder,
                    "ingest_s": round(ingest_s, 1),
                    "server_open_mib": round((opened - base) / mib, 2),
                    "lexical_index_mib": round((after_lexical - opened) / mib, 2),
                    "lexical_first_search_s": round(lexical_s, 2),
                    "dense_matrix_mib": round((after_dense - after_lexical) / mib, 2),
                    "dense_first_search_s": round(dense_s, 2),
                    "answers": args.answers,
                    "answer_cache_mib": round((after_answers - after_dense) / mib, 2),
                    "answer_cache_kib_per_entry": round(
                        (after_answers - after_dense) / 1024 / max(args.answers, 1), 1
                    ),
                },
                indent=2,
            )
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
