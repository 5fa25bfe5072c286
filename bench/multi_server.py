"""Benchmark: one, then three ``citadel serve`` processes on one PostgreSQL under load.

A loopback run of the deployment in docs/deployment.md, through the real CLI and
HTTP servers only: ``scripts/pg-dev start`` (its own port and directory), two real
books (R-intro, the PARI tutorial) ingested by ``citadel ingest``, a librarian and a reader by
``citadel users add``, then ``citadel serve`` processes sharing one CITADEL_HOME
(one audit key) and one CITADEL_DB. Concurrent clients (threads, httpx) alternate
``POST /v1/search`` and ``POST /v1/answer`` (the extractive generator), round
robin over the servers, with questions varied so the answer cache serves only
the repeated ones. Every status and latency is recorded; the run reports
throughput and p50/p95/p99 for one server and for three, and fails on any non-200.

Then a librarian revokes the book the reader's answer through server 1 cited
(``PUT /v1/sources/{id}/acl`` through server 1, the admin API); the next request
through servers 2 and 3 must neither find nor cite it, and the old citation must
resolve ``forbidden``. Last, ``citadel audit verify`` must find one intact chain of
as many records as 200 answers, their answer ids exactly.

Run:
  .venv/bin/python bench/multi_server.py --seconds 20 --clients 8 [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
CPUINFO = Path("/proc/cpuinfo").read_text().splitlines()
CITADEL = str(Path(sys.executable).parent / "citadel")
BOOKS = ROOT.parent / "shared" / "books" / "pdf"
BOOK, OTHER = "r-intro", "pari"
QUESTIONS = (
    "How do I create a vector in R?",
    "What is a data frame?",
    "How are missing values represented?",
    "How do I read data from a file?",
    "What does the apply function do?",
    "How are factors used for categorical data?",
    "How do I fit a linear model?",
    "What is the search path of attached packages?",
    "How are arrays indexed?",
    "How do I write my own function?",
    "How does lazy evaluation of arguments work?",
    "How do I plot a histogram?",
    "What are lists and how are their components named?",
    "How do I install a package?",
    "What does the matrix function do?",
    "How are graphics parameters set with par?",
)


@dataclass(frozen=True)
class Outcome:
    server: int
    path: str
    status: int
    latency_s: float
    answer_id: str = ""
    cached: bool = False
    degraded: str = ""


@dataclass
class Bench:
    env: dict[str, str]
    work: Path
    servers: list[tuple[subprocess.Popen[bytes], str]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    phase_walls: list[float] = field(default_factory=list)

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [CITADEL, *args], env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"citadel {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def start_server(self) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = (self.work / f"serve-{len(self.servers) + 1}.log").open("wb")
        process = subprocess.Popen(
            [CITADEL, "serve", "--port", str(port)], env=self.env, stdout=log, stderr=log
        )
        base = f"http://127.0.0.1:{port}"
        self.servers.append((process, base))
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"citadel serve exited {process.returncode}; see {log.name}")
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    return base
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{base}/readyz not ready within 180 s")

    def stop_servers(self) -> None:
        for process, _ in self.servers:
            process.terminate()
        for process, _ in self.servers:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def post(self, http: httpx.Client, server: int, path: str, body: dict[str, Any]) -> Any:
        began = time.perf_counter()
        reply = http.post(path, json=body)
        latency = time.perf_counter() - began
        data = reply.json()
        # Only an answer returned with a 200 is in the audit chain.
        answered = data if path == "/v1/answer" and reply.status_code == 200 else {}
        cached = bool((answered.get("generation") or {}).get("cached"))
        degraded = (answered.get("degraded") or {}).get("reason", "")
        answer_id = answered.get("answer_id", "")
        outcome = Outcome(server, path, reply.status_code, latency, answer_id, cached, degraded)
        with self.lock:
            self.outcomes.append(outcome)
        return data

    def load(self, token: str, bases: list[str], clients: int, seconds: float) -> list[Outcome]:
        start = len(self.outcomes)
        stop = threading.Event()

        def client(number: int) -> None:
            headers = {"Authorization": f"Bearer {token}"}
            https = [httpx.Client(base_url=b, timeout=120, headers=headers) for b in bases]
            try:
                for turn in itertools.count():
                    if stop.is_set():
                        return
                    server = (number + turn) % len(bases)
                    question = QUESTIONS[(number * 5 + turn) % len(QUESTIONS)]
                    if turn % 8 != 2:  # one answer in four repeats a question
                        question = f"{question} q{number}x{turn}x{len(bases)}"
                    body: dict[str, Any] = {"query": question}
                    path = "/v1/search"
                    if turn % 2 == 0:
                        path, body = "/v1/answer", {"search": body}
                    self.post(https[server], server + 1, path, body)
            finally:
                for http in https:
                    http.close()

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join(180)
        self.phase_walls.append(time.perf_counter() - began)
        return self.outcomes[start:]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def summary(outcomes: list[Outcome], wall_s: float) -> dict[str, Any]:
    answers = [o for o in outcomes if o.path == "/v1/answer" and o.status == 200]
    result: dict[str, Any] = {
        "requests": len(outcomes),
        "errors": sum(o.status != 200 for o in outcomes),
        "statuses": dict(Counter(str(o.status) for o in outcomes)),
        "wall_s": round(wall_s, 2),
        "throughput_rps": round(len(outcomes) / wall_s, 2),
        "answers_cached": sum(o.cached for o in answers),
        "answers_degraded": dict(Counter(o.degraded for o in answers if o.degraded)),
        "per_server": dict(sorted(Counter(str(o.server) for o in outcomes).items())),
    }
    for path in ("/v1/search", "/v1/answer", "all"):
        chosen = [o.latency_s * 1000 for o in outcomes if path in ("all", o.path)]
        if chosen:
            result[path] = {
                "n": len(chosen),
                "p50_ms": round(statistics.median(chosen), 1),
                "p95_ms": round(percentile(chosen, 0.95), 1),
                "p99_ms": round(percentile(chosen, 0.99), 1),
            }
    return result


def require(condition: bool, message: str) -> None:
    if not condition:
        raise RuntimeError(message)


def cited_sources(body: dict[str, Any]) -> set[str]:
    answer = body.get("answer") or {"segments": []}
    return {c["source_id"] for s in answer["segments"] for c in s["citations"]}


def check_acl(bench: Bench, token: str, librarian: str) -> dict[str, Any]:
    """Revoke the book for the reader through server 1's admin API; servers 2 and 3
    enforce it on their next request."""
    headers = {"Authorization": f"Bearer {token}"}
    https = [httpx.Client(base_url=b, timeout=120, headers=headers) for _, b in bench.servers]
    question = "How do I create a vector in R? acl check"
    before = bench.post(https[0], 1, "/v1/answer", {"search": {"query": question}})
    require(BOOK in cited_sources(before), "the reader's answer through server 1 cites no book")
    ref = next(
        c["ref"]
        for s in before["answer"]["segments"]
        for c in s["citations"]
        if c["source_id"] == BOOK
    )
    for number in (2, 3):  # fill the other servers' caches and indexes first
        seen = bench.post(https[number - 1], number, "/v1/search", {"query": question})
        require(BOOK in {r["source_id"] for r in seen["results"]}, f"server {number}: no book")
        for _turn in range(2):
            warm = bench.post(
                https[number - 1], number, "/v1/answer", {"search": {"query": question}}
            )
            require(BOOK in cited_sources(warm), f"server {number}'s answer cites no book")
        cached = bool((warm.get("generation") or {}).get("cached"))
        require(cached, f"server {number} did not cache the repeated answer")
    revoked_at = time.perf_counter()
    revoked = https[0].put(
        f"/v1/sources/{BOOK}/acl",
        json={"groups": ["staff"]},
        headers={"Authorization": f"Bearer {librarian}"},
    )
    require(revoked.status_code == 200, f"the ACL change through server 1: {revoked.status_code}")
    revoke_s = time.perf_counter() - revoked_at
    after: dict[str, Any] = {"revoke_http_s": round(revoke_s, 3)}
    for number in (2, 3):
        http = https[number - 1]
        found = bench.post(http, number, "/v1/search", {"query": question})
        answered = bench.post(http, number, "/v1/answer", {"search": {"query": question}})
        link = http.get(f"/v1/answers/{before['answer_id']}/citations/{ref}")
        state = link.json()["link"]["state"] if link.status_code == 200 else str(link.status_code)
        search_sources = sorted({r["source_id"] for r in found["results"]})
        cited = sorted(cited_sources(answered))
        cached = bool((answered.get("generation") or {}).get("cached"))
        require(BOOK not in search_sources, f"server {number} still finds the book")
        require(BOOK not in cited and not cached, f"server {number} still cites the book")
        require(state == "forbidden", f"server {number}: the old citation is {state}")
        after[f"server_{number}"] = {
            "search_sources": search_sources,
            "answer_cites": cited,
            "answer_cached": cached,
            "old_citation": state,
        }
    for http in https:
        http.close()
    return after


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    pg_env = {
        **os.environ,
        "CITADEL_PG_PORT": str(args.pg_port),
        "CITADEL_PG_DIR": str(work / "pg"),
        "PYTHON": sys.executable,
    }
    pg_dev = str(ROOT / "scripts" / "pg-dev")
    subprocess.run([pg_dev, "start"], env=pg_env, check=True, stdout=subprocess.DEVNULL)
    try:
        exported = subprocess.run(
            [pg_dev, "env"], env=pg_env, check=True, capture_output=True, text=True
        ).stdout
        url = exported.strip().removeprefix("export CITADEL_DB=")
        env = {
            **os.environ,
            "CITADEL_DB": url,
            "CITADEL_HOME": str(work / "home"),
            "CITADEL_EMBEDDER": args.embedder,
            "CITADEL_HTTP_RATE_LIMIT": "1000000",
            "CITADEL_HTTP_SESSION_SECRET": "multi-server-bench-session-secret-0123456789",
        }
        bench = Bench(env, work)
        try:
            return measure(bench, args, url)
        finally:
            bench.stop_servers()
    finally:
        subprocess.run([pg_dev, "stop"], env=pg_env, check=False, stdout=subprocess.DEVNULL)


def measure(bench: Bench, args: argparse.Namespace, url: str) -> dict[str, Any]:
    began = time.perf_counter()
    books = []
    for source_id, name in ((BOOK, "R-intro.pdf"), (OTHER, "pari-tutorial.pdf")):
        out = bench.cli("ingest", str(BOOKS / name), "--source-id", source_id, "--json")
        books.append(json.loads(out.splitlines()[-1]))
    ingest_s = time.perf_counter() - began
    librarian = json.loads(bench.cli("users", "add", "lib", "--role", "librarian", "--json"))
    token = json.loads(bench.cli("users", "add", "ada", "--role", "reader", "--json"))["token"]
    result: dict[str, Any] = {
        "cpu": next(
            (line.split(":", 1)[1].strip() for line in CPUINFO if line.startswith("model name")),
            "unknown",
        ),
        "load_average": os.getloadavg(),
        "embedder": args.embedder,
        "clients": args.clients,
        "seconds": args.seconds,
        "books": [{k: b[k] for k in ("source_id", "pages", "chunks")} for b in books],
        "ingest_s": round(ingest_s, 1),
    }
    phases: dict[str, Any] = {}
    auth = {"Authorization": f"Bearer {token}"}
    for count in (1, 3):
        while len(bench.servers) < count:
            bench.start_server()
        bases = [base for _, base in bench.servers]
        for number, base in enumerate(bases, 1):  # each server reads its indexes once
            with httpx.Client(base_url=base, timeout=120, headers=auth) as http:
                bench.post(http, number, "/v1/answer", {"search": {"query": f"warm up {count}"}})
        outcomes = bench.load(token, bases, args.clients, args.seconds)
        phases[f"servers_{count}"] = summary(outcomes, bench.phase_walls[-1])
    result["phases"] = phases
    result["load_average_after"] = os.getloadavg()
    result["acl"] = check_acl(bench, token, librarian["token"])
    bench.stop_servers()
    verified = json.loads(bench.cli("audit", "verify", "--json"))
    answered = [o.answer_id for o in bench.outcomes if o.path == "/v1/answer" and o.status == 200]
    with psycopg.connect(url) as conn:
        stored = [row[0] for row in conn.execute("SELECT answer_id FROM audit_log")]
    result["audit"] = {
        **verified,
        "answers_200": len(answered),
        "log_ids_equal_answer_ids": sorted(stored) == sorted(answered),
    }
    result["errors"] = sum(o.status != 200 for o in bench.outcomes)
    result["ok"] = (
        result["errors"] == 0
        and verified["intact"]
        and verified["records"] == len(answered)
        and result["audit"]["log_ids_equal_answer_ids"]
    )
    return result


def report(result: dict[str, Any]) -> None:
    print(f"CPU: {result['cpu']} ({os.cpu_count()} cores)")
    print(f"load average before {result['load_average']}, after {result['load_average_after']}")
    print(f"embedder {result['embedder']}, {result['clients']} clients, {result['seconds']} s")
    print(f"ingested {result['books']} in {result['ingest_s']} s")
    for name, phase in result["phases"].items():
        print(
            f"{name}: {phase['requests']} requests, {phase['errors']} errors,"
            f" {phase['throughput_rps']} req/s, per server {phase['per_server']},"
            f" cached answers {phase['answers_cached']}, degraded {phase['answers_degraded']}"
        )
        for path in ("/v1/search", "/v1/answer", "all"):
            p = phase[path]
            print(
                f"  {path:11} n={p['n']:5} p50 {p['p50_ms']} ms"
                f"  p95 {p['p95_ms']} ms  p99 {p['p99_ms']} ms"
            )
    print(f"acl: {result['acl']}")
    print(f"audit: {result['audit']}")
    print("OK" if result["ok"] else "FAILED")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="load per phase")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--pg-port", type=int, default=5477)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="citadel-multi-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # pg-dev as root runs PostgreSQL as another user
        result = run(args, work)
    report(result)
    if args.json:
        print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
