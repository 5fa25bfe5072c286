"""Benchmark: the resolver's overhead per displayed answer (8 citations, cache warm).

A real SQLite library with eight sources (four with an allowlisted canonical
URL, four without, so both canonical and signed viewer links are made); an
answer citing one chunk of each; `CitationResolver.resolve_answer` timed over
many displays after a warm-up. Reports p50/p95/p99 in milliseconds.

Run: `.venv/bin/python bench/resolver.py [--displays 5000] [--json]`
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.builders

from tests.builders import Passage, commit

from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.resolver import CitationResolver
from citadel.domain.answer import AnswerResult, Citation, CitedSegment, GroundedAnswer
from citadel.domain.links import Link, LinkPolicy
from citadel.domain.search import SearchResult
from citadel.domain.source import Source
from citadel.domain.users import Actor
from citadel.domain.viewer import ViewerSigner

CITATIONS = 8


def build(home: Path) -> tuple[SqliteLibrary, AnswerResult]:
    library = SqliteLibrary(home / "citadel.db")
    citations = []
    for n in range(CITATIONS):
        source = Source(
            source_id=f"src-{n}",
            tenant="acme",
            title=f"Book {n}",
            acl_groups=frozenset({"staff"}),
            canonical_url=f"https://docs.example.org/book-{n}.html" if n % 2 else None,
        )
        _, _, chunks = commit(library, source, [Passage(f"Passage {n} about retries.")])
        citations.append(
            Citation(
                ref=f"E{n + 1}",
                evidence_id=f"ev-{n}",
                source_id=source.source_id,
                version=1,
                chunk_id=chunks[0].chunk_id,
                title=source.title,
                author="",
                chapter="1 Intro",
                section="1.1 Retries",
                pages="3",
            )
        )
    segments = tuple(CitedSegment(f"Claim {i}.", (c,)) for i, c in enumerate(citations))
    result = AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("q"),
        answer=GroundedAnswer("bench", segments),
        degraded=None,
    )
    return library, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--displays", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    policy = LinkPolicy.parse("docs.example.org")

    def safe_href(url: str) -> str | None:
        verdict = policy.evaluate(url)
        return verdict.url if isinstance(verdict, Link) else None

    with tempfile.TemporaryDirectory() as scratch:
        library, result = build(Path(scratch))
        resolver = CitationResolver(library, safe_href, ViewerSigner(os.urandom(32)))
        reader = Actor(user_id="ann", tenant="acme", groups=frozenset({"staff"}))
        for _ in range(200):  # warm the page cache and the code paths
            resolver.resolve_answer(result, reader)
        samples = []
        for _ in range(args.displays):
            started = time.perf_counter()
            shown = resolver.resolve_answer(result, reader)
            samples.append((time.perf_counter() - started) * 1000)
        library.close()
    assert shown.answer is not None
    states = sorted({c.link_state.value for s in shown.answer.segments for c in s.citations})
    samples.sort()
    report = {
        "citations": CITATIONS,
        "displays": args.displays,
        "states": states,
        "p50_ms": round(statistics.median(samples), 4),
        "p95_ms": round(samples[int(0.95 * len(samples))], 4),
        "p99_ms": round(samples[int(0.99 * len(samples))], 4),
        "load": os.getloadavg(),
    }
    print(json.dumps(report) if args.json else "\n".join(f"{k}: {v}" for k, v in report.items()))


if __name__ == "__main__":
    main()
