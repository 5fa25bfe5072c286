"""Benchmark: search alone over a QA set (no answers), hit@1, hit@5, MRR@10 and latency.

Each question of a QA set (``data/qa/books.jsonl``: id, question, gold book and
section) is searched as ``citadel eval answers`` searches (limit 20), once per
``--decays`` value of ``FusionPolicy.section_decay`` (1 is no section diversity),
the decays alternating per question so their latencies share the machine's load.
A result is on the gold section as ``answer_evaluation.on_section`` says. Reports
the figures overall, for the halves of odd and even question numbers, per book,
the questions whose gold section is not in the top 5, and search p50 / p95 (warm:
every query vector is embedded, in each policy's cache, before timing).

The library is an existing ``citadel eval answers --home DIR`` library (copy it
first: the lexical index is read into memory, nothing is written); its sources
are matched to the set's books by their origin's ending.

Run:
  cp -a /tmp/qa-home /tmp/qa-copy
  HF_HUB_OFFLINE=1 .venv/bin/python bench/qa_search.py --home /tmp/qa-copy \
      --qa data/qa/books.jsonl --decays 1.0,0.5
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from citadel.app.answer_evaluation import SEARCH_LIMIT, on_section
from citadel.app.search import SearchService
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role


def figures(ranks: Sequence[int | None]) -> str:
    n = len(ranks) or 1
    hit1 = sum(1 for r in ranks if r == 1) / n
    hit5 = sum(1 for r in ranks if r is not None and r <= 5) / n
    mrr = sum(1 / r for r in ranks if r is not None and r <= 10) / n
    return f"hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  MRR@10 {mrr:.3f}  ({len(ranks)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--qa", type=Path, default=Path("data/qa/books.jsonl"))
    parser.add_argument("--decays", default="1.0,0.5")
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.qa.read_text().splitlines() if line.strip()]
    settings = Settings.from_env(os.environ)
    services = build(replace(settings, home=args.home, db=""))
    actor = Actor(user_id="local", tenant=settings.tenant, role=Role.ADMIN)
    sources = services.library.list(actor)
    book_source = {
        q["book"]: next(s.source_id for s in sources if s.origin.endswith(q["book"]))
        for q in questions
    }
    base = services.search
    decays = [float(d) for d in args.decays.split(",")]
    # One search per decay over the same library and embedder (the built search's parts).
    searches = {
        d: SearchService(
            base._lexical,
            base._chunks,
            settings.limits,
            vectors=base._vectors,
            embedder=base._embedder,
            fusion=replace(settings.fusion, section_decay=d),
            candidates=settings.search_candidates,
        )
        for d in decays
    }
    ranks: dict[float, dict[str, int | None]] = {d: {} for d in decays}
    times: dict[float, list[float]] = {d: [] for d in decays}
    for index, q in enumerate(questions):
        request = SearchRequest(query=q["question"], limit=SEARCH_LIMIT)
        for search in searches.values():  # each caches its query vectors: embed, untimed
            search.search(request, actor)
        order = decays if index % 2 == 0 else decays[::-1]
        for d in order:
            started = time.perf_counter()
            result = searches[d].search(request, actor)
            times[d].append(time.perf_counter() - started)
            ranks[d][q["id"]] = next(
                (
                    rank
                    for rank, e in enumerate(result.results, start=1)
                    if e.source_id == book_source[q["book"]]
                    and on_section(e.section_path, q["section"])
                ),
                None,
            )
    for search in searches.values():
        search.close()
    services.close()

    def number(qid: str) -> int:
        return int(re.sub(r"\D", "", qid) or 0)

    for d in decays:
        got = ranks[d]
        print(f"section_decay {d}")
        print("  all  ", figures(list(got.values())))
        print("  odd  ", figures([r for i, r in got.items() if number(i) % 2]))
        print("  even ", figures([r for i, r in got.items() if not number(i) % 2]))
        for book in dict.fromkeys(q["book"] for q in questions):
            print(f"  {book}: ", figures([got[q["id"]] for q in questions if q["book"] == book]))
        missed = [f"{i}:{r}" for i, r in got.items() if r is None or r > 5]
        print("  not in the top 5 (id:rank):", " ".join(missed))
        spent = sorted(times[d])
        p50 = spent[len(spent) // 2] * 1000
        p95 = spent[int(0.95 * (len(spent) - 1))] * 1000
        print(f"  search ms p50 {p50:.2f} p95 {p95:.2f}")


if __name__ == "__main__":
    main()
