"""Benchmark: HTTP search under load, alone and while every generation slot is busy.

Starts `citadel serve` on loopback over a library (default: R-intro and the
PostgreSQL manual, ingested once into --home), a user, and a slow
OpenAI-compatible fake provider (each answer takes --answer-delay seconds).
Then, for --seconds each:

1. search alone: --clients concurrent clients POST /v1/search back to back;
2. the same while --answer-clients clients keep every generation slot busy
   with slow POST /v1/answer requests.

Reports requests per second, p50 and p99 of search in both phases, and the
p99 ratio (the target: search p99 rises by at most 20% — the bulkhead keeps
generation from taking search's resources). All traffic stays on 127.0.0.1.

Run: `.venv/bin/python bench/http_load.py [--home DIR] [--seconds 20] [--json]`
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for the fake provider in tests/fakes

from tests.fakes.openai_server import FakeOpenAIServer, answer  # noqa: E402

BOOKS = ROOT.parent / "shared" / "books"
DEFAULT_BOOKS = ("pdf/R-intro.pdf", "html/postgresql-15-manual")
CITADEL = str(ROOT / ".venv" / "bin" / "citadel")
QUERIES = (
    "How do I read data from a file into a data frame?",
    "vacuum and autovacuum tuning",
    "create an index concurrently",
    "fit a linear regression model",
    "transaction isolation levels",
    "missing values NA",
    "write ahead log checkpoints",
    "plot a histogram",
    "foreign key constraints",
    "apply a function over a list",
    "streaming replication standby",
    "factor levels",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [CITADEL, *args], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout


async def client(
    http: httpx.AsyncClient, path: str, body: dict[str, object], until: float, rng: random.Random
) -> list[float]:
    latencies: list[float] = []
    while time.perf_counter() < until:
        started = time.perf_counter()
        reply = await http.post(path, json=body | {"query": rng.choice(QUERIES)})
        if reply.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {reply.status_code}: {reply.text[:200]}")
        latencies.append(time.perf_counter() - started)
    return latencies


async def slow_answers(http: httpx.AsyncClient, until: float, rng: random.Random) -> int:
    done = 0
    while time.perf_counter() < until:
        body = {"search": {"query": rng.choice(QUERIES), "limit": 10}}
        reply = await http.post("/v1/answer", json=body)
        if reply.status_code != 200:
            raise RuntimeError(f"/v1/answer: HTTP {reply.status_code}")
        done += 1
    return done


async def phase(base: str, token: str, clients: int, answer_clients: int, seconds: float) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=clients + answer_clients + 2)
    async with httpx.AsyncClient(
        base_url=base, headers=headers, limits=limits, timeout=120, trust_env=False
    ) as http:
        # Warm up: the query embedder and the dense matrix load on first use.
        for query in QUERIES:
            await http.post("/v1/search", json={"query": query, "limit": 10})
        until = time.perf_counter() + seconds
        background = [
            asyncio.create_task(slow_answers(http, until, random.Random(100 + i)))
            for i in range(answer_clients)
        ]
        if answer_clients:
            await asyncio.sleep(1.0)  # let the slow answers take their slots first
        started = time.perf_counter()
        runs = await asyncio.gather(
            *(
                client(http, "/v1/search", {"limit": 10}, until, random.Random(i))
                for i in range(clients)
            )
        )
        elapsed = time.perf_counter() - started
        answers = sum(await asyncio.gather(*background))
    samples = sorted(x for run in runs for x in run)
    return {
        "requests": len(samples),
        "rps": round(len(samples) / elapsed, 1),
        "p50_ms": round(statistics.median(samples) * 1000, 1),
        "p99_ms": round(samples[int(0.99 * (len(samples) - 1))] * 1000, 1),
        "answers_completed": answers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--home",
        type=Path,
        default=Path(tempfile.gettempdir()) / "citadel-load",
        help="the library to serve; ingested there once when missing",
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--answer-clients", type=int, default=4)
    parser.add_argument("--answer-delay", type=float, default=5.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    provider = FakeOpenAIServer()
    provider.start()
    slow = answer({"segments": [{"text": "The passages answer this.", "evidence_ids": ["E1"]}]})
    provider.script(dataclasses.replace(slow, delay_s=args.answer_delay))
    port = free_port()
    env = dict(
        os.environ,
        CITADEL_HOME=str(args.home),
        CITADEL_GENERATOR="openai",
        CITADEL_LLM_BASE_URL=provider.base_url,
        CITADEL_LLM_MODEL="slow-fake",
        CITADEL_HTTP_RATE_LIMIT="1000000",
        CITADEL_ANSWER_CACHE_SIZE="0",
        HF_HUB_OFFLINE="1",
    )
    if not (args.home / "citadel.db").exists():
        books = [str(BOOKS / b) for b in DEFAULT_BOOKS]
        print("ingesting", ", ".join(DEFAULT_BOOKS), "(once) …", file=sys.stderr)
        cli(env, "ingest", *books)
    # A library kept from before a change of embedding model has no vectors under
    # the current one: fill them in, or the search measured would be lexical only.
    cli(env, "reindex")
    name = f"bench-{os.getpid()}"
    token = json.loads(cli(env, "users", "add", name, "--json"))["token"]
    server = subprocess.Popen(
        [CITADEL, "serve", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/readyz", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        alone = asyncio.run(phase(base, token, args.clients, 0, args.seconds))
        busy = asyncio.run(phase(base, token, args.clients, args.answer_clients, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=30)
        provider.stop()
    report = {
        "clients": args.clients,
        "answer_clients": args.answer_clients,
        "answer_delay_s": args.answer_delay,
        "seconds": args.seconds,
        "search_alone": alone,
        "search_with_generator_saturated": busy,
        "p99_ratio": round(busy["p99_ms"] / alone["p99_ms"], 3),
        "load": os.getloadavg(),
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
