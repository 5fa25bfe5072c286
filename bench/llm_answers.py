"""Benchmark: answers from a real OpenAI-compatible provider over R-intro.

Ten fixed questions about ../shared/books/pdf/R-intro.pdf go through the full
answer path (hybrid search, selection, the provider, validation, one repair)
with the settings in the environment. Reports, per question and overall, how
many answers were accepted, why the others degraded, and the latency.

Run against the development server (see `scripts/llm-dev`):
    scripts/llm-dev serve &      # once installed with `scripts/llm-dev install`
    eval "$(scripts/llm-dev env)"
    .venv/bin/python bench/llm_answers.py [--home DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from citadel.app.answer import AnswerRequest
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.answer import AnswerResult
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT.parent / "shared" / "books" / "pdf" / "R-intro.pdf"

QUESTIONS = (
    "How do I read data from a file into a data frame?",
    "What is the difference between a matrix and an array?",
    "How are missing values represented in R?",
    "How do I write my own function?",
    "What does the attach() function do?",
    "How can I fit a linear regression model?",
    "What is a factor used for?",
    "How do I create a sequence of numbers?",
    "How are lists different from vectors?",
    "How do I save a plot to a PDF file?",
)


def outcome(result: AnswerResult) -> str:
    return "accepted" if result.answer is not None else str(result.degraded.reason)  # type: ignore[union-attr]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def ask_all(settings: Settings) -> list[dict[str, object]]:
    services = build(settings)
    actor = Actor(user_id="bench", tenant=settings.tenant, role=Role.ADMIN)
    rows: list[dict[str, object]] = []
    try:
        if not services.registry.list(settings.tenant):
            services.ingest.ingest(
                services.documents.open(BOOK),
                IngestOptions(tenant=settings.tenant),
                actor=Actor(user_id="bench", tenant=settings.tenant, role=Role.ADMIN),
            )
        for question in QUESTIONS:
            started = time.perf_counter()
            result = await services.answer.answer(
                AnswerRequest(SearchRequest(query=question, limit=20)), actor
            )
            elapsed = time.perf_counter() - started
            record = result.generation
            rows.append(
                {
                    "question": question,
                    "outcome": outcome(result),
                    "detail": result.degraded.detail if result.degraded else "",
                    "attempts": record.attempts if record else 0,
                    "segments": len(result.answer.segments) if result.answer else 0,
                    "answer": " | ".join(s.text for s in result.answer.segments)[:160]
                    if result.answer
                    else "",
                    "seconds": round(elapsed, 2),
                }
            )
            print(f"{rows[-1]['outcome']:>18} {elapsed:6.1f} s  {question}", file=sys.stderr)
    finally:
        services.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", type=Path, help="a CITADEL_HOME to keep the ingested book in")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not BOOK.is_file():
        sys.exit(f"needs {BOOK.relative_to(ROOT.parent)} (the shared books)")
    env = dict(os.environ)
    if not env.get("CITADEL_LLM_BASE_URL"):
        sys.exit('set the provider first, e.g. eval "$(scripts/llm-dev env)"')
    env["CITADEL_GENERATOR"] = "openai"
    env["CITADEL_ANSWER_CACHE_SIZE"] = "0"  # every question reaches the provider
    with tempfile.TemporaryDirectory() as scratch:
        env["CITADEL_HOME"] = str(args.home or scratch)
        rows = asyncio.run(ask_all(Settings.from_env(env)))
    seconds = [float(str(r["seconds"])) for r in rows]
    accepted = sum(r["outcome"] == "accepted" for r in rows)
    summary = {
        "model": env.get("CITADEL_LLM_MODEL", ""),
        "questions": len(rows),
        "accepted": accepted,
        "acceptance_rate": accepted / len(rows),
        "repaired": sum(r["outcome"] == "accepted" and r["attempts"] == 2 for r in rows),
        "outcomes": dict(Counter(str(r["outcome"]) for r in rows)),
        "p50_s": round(statistics.median(seconds), 2),
        "p95_s": round(percentile(seconds, 0.95), 2),
        "max_s": max(seconds),
        "deadline_s": Settings.from_env(env).limits.generator_deadline_s,
        "load": os.getloadavg(),
    }
    if args.json:
        print(json.dumps({"summary": summary, "questions": rows}))
        return
    for row in rows:
        print(f"{row['outcome']:>18} {row['attempts']} {row['seconds']:>6}s  {row['question']}")
        if row["detail"] or row["answer"]:
            print(f"{'':>22}{str(row['detail'] or row['answer'])[:110]!r}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
