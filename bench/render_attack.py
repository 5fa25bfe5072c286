"""Benchmark: one reader's page-image attack on a hostile PDF, and everyone else's latency.

A real ``citadel serve`` on 127.0.0.1 (its own CITADEL_HOME, the hashing embedder),
holding a hostile PDF (``tests/hostile_pdf.mesh_pdf``: three pages, each a mesh
shading pdfium takes tens of seconds to draw, 3.5 KB on disk) and a normal book
(``../shared/books/pdf/R-intro.pdf``), both ingested by ``citadel ingest`` (which
keeps PDF originals), in tenant ``default``; an admin of a second tenant, ``other``.
First a quiet phase measures the probes alone; then, ``--waves`` times, one reader
fires ``--requests`` page-image requests at the hostile PDF's pages at once (or
``--readers`` readers share them, which fills the queue), while
probe threads call ``/healthz``, ``/readyz``, ``POST /v1/search`` (another reader)
and ``GET /v1/users`` (the other tenant's admin) back to back. Prints p50/p95/max
of each probe in both phases, the image replies by status, the longest render the
server's metrics saw (``citadel_page_render_longest_seconds``) against the limit,
and the peak RSS of the server and its render workers together (sampled every
50 ms from /proc).

Run:
  .venv/bin/python bench/render_attack.py [--requests 45] [--waves 2] [--json]
      [--readers 1] [--workers 2] [--timeout 10] [--triangles 30000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.hostile_pdf builds the hostile PDF

from tests.hostile_pdf import mesh_pdf  # noqa: E402

CITADEL = str(Path(sys.executable).parent / "citadel")
BOOK = ROOT.parent / "shared" / "books" / "pdf" / "R-intro.pdf"
PROBES = ("healthz", "readyz", "search", "admin")


def cpu() -> str:
    info = Path("/proc/cpuinfo").read_text()
    model = re.search(r"model name\s*:\s*(.*)", info)
    flags = re.search(r"flags\s*:\s*(.*)", info)
    have = set(flags.group(1).split()) if flags else set()
    marks = [f for f in ("avx512_vnni", "avx_vnni", "amx_int8") if f in have]
    return f"{model.group(1).strip() if model else 'unknown'} ({', '.join(marks) or 'no VNNI'})"


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([CITADEL, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"citadel {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout


def token_of(env: dict[str, str], name: str, role: str, tenant: str) -> str:
    out = cli(env, "users", "add", name, "--role", role, "--tenant", tenant, "--json")
    return str(json.loads(out)["token"])


def image_urls(env: dict[str, str], reader: str, source_id: str, pages: int) -> list[str]:
    """The hostile PDF's page-image routes under a viewer token minted for ``reader``
    (the bench shares CITADEL_HOME, so it holds the server's viewer key)."""
    from citadel.bootstrap import build
    from citadel.config import Settings

    services = build(Settings.from_env(env))
    try:
        chunk = next(c for c in services.chunks.chunks("default", source_id, 1) if c.page_start)
        href = services.viewer.href(reader, source_id, 1, chunk.chunk_id, time.time(), None)
    finally:
        services.close()
    token = parse_qs(urlsplit(href).query)["token"][0]
    return [
        f"/v1/sources/{source_id}/versions/1/pages/{page}.png?chunk={chunk.chunk_id}&token={token}"
        for page in range(1, pages + 1)
    ]


def rss_kib(pid: int) -> int:
    """RSS of ``pid`` and its descendants, in KiB."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(re.search(r"VmRSS:\s*(\d+)", status).group(1))  # type: ignore[union-attr]
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError):
            continue
    return total


class Probes:
    """Probe threads calling each probe back to back until stopped."""

    def __init__(self, base: str, search_token: str, admin_token: str) -> None:
        self.base = base
        self.headers = {
            "search": {"Authorization": f"Bearer {search_token}"},
            "admin": {"Authorization": f"Bearer {admin_token}"},
        }
        self.samples: dict[str, list[tuple[int, float]]] = {p: [] for p in PROBES}
        self.stop = threading.Event()

    def call(self, client: httpx.Client, probe: str) -> httpx.Response:
        if probe == "search":
            body = {"query": "how do I create a vector", "limit": 5}
            return client.post("/v1/search", json=body, headers=self.headers["search"])
        if probe == "admin":
            return client.get("/v1/users", headers=self.headers["admin"])
        return client.get(f"/{probe}")

    def run(self, probe: str) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as client:
            while not self.stop.is_set():
                began = time.perf_counter()
                status = self.call(client, probe).status_code
                self.samples[probe].append((status, time.perf_counter() - began))
                time.sleep(0.02)

    def during(self, work: Any) -> dict[str, list[tuple[int, float]]]:
        self.samples = {p: [] for p in PROBES}
        self.stop.clear()
        threads = [threading.Thread(target=self.run, args=(p,)) for p in PROBES]
        for thread in threads:
            thread.start()
        try:
            work()
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(60)
        return self.samples


def summary(samples: list[tuple[int, float]]) -> dict[str, Any]:
    times = sorted(t * 1000 for _, t in samples)
    if not times:
        return {"n": 0}
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return {
        "n": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(times[-1], 1),
        "statuses": dict(Counter(s for s, _ in samples)),
    }


def attack(
    base: str, readers: list[tuple[str, list[str]]], requests: int
) -> list[tuple[int, float]]:
    results: list[tuple[int, float]] = []
    lock = threading.Lock()
    go = threading.Barrier(requests)

    def one(number: int) -> None:
        with httpx.Client(base_url=base, timeout=300) as client:
            go.wait()
            token, urls = readers[number % len(readers)]
            began = time.perf_counter()
            status = client.get(
                urls[number % len(urls)],
                headers={"Authorization": f"Bearer {token}"},
            ).status_code
            with lock:
                results.append((status, time.perf_counter() - began))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    return results


def metric(base: str, name: str) -> dict[str, float]:
    text = httpx.get(f"{base}/metrics", timeout=30).text
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name):
            key, _, value = line.rpartition(" ")
            found[key] = float(value)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=45)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument(
        "--readers", type=int, default=1, help="readers the requests are spread over"
    )
    parser.add_argument("--quiet-s", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--triangles", type=int, default=30_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="citadel-render-attack-"))
    env = {
        **os.environ,
        "CITADEL_HOME": str(work / "home"),
        "CITADEL_DB": "",
        "CITADEL_EMBEDDER": "hashing",
        "HF_HUB_OFFLINE": "1",
        # The probes call back to back; only the image limits are under test.
        "CITADEL_HTTP_RATE_LIMIT": "1000000",
    }
    if args.workers is not None:
        env["CITADEL_RENDER_WORKERS"] = str(args.workers)
    if args.timeout is not None:
        env["CITADEL_RENDER_TIMEOUT_S"] = str(args.timeout)
    hostile = mesh_pdf(work / "hostile.pdf", pages=3, triangles=args.triangles)
    reports = [
        json.loads(line)
        for line in cli(env, "ingest", "--json", str(hostile), str(BOOK)).splitlines()
        if line.startswith("{")
    ]
    hostile_id = next(r["source_id"] for r in reports if "hostile" in r["path"])
    names = ["mallory"] + [f"mallory{n}" for n in range(2, args.readers + 1)]
    attackers = [token_of(env, name, "reader", "default") for name in names]
    searcher = token_of(env, "alice", "reader", "default")
    admin = token_of(env, "bob", "admin", "other")
    readers = [
        (token, image_urls(env, name, hostile_id, 3))
        for name, token in zip(names, attackers, strict=True)
    ]

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    log = (work / "serve.log").open("wb")
    server = subprocess.Popen(
        [CITADEL, "serve", "--port", str(port)], env=env, stdout=log, stderr=log
    )
    peak = [0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peak[0] = max(peak[0], rss_kib(server.pid))
            time.sleep(0.05)

    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"the server did not start; see {log.name}")
            time.sleep(0.2)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        probes = Probes(base, searcher, admin)
        quiet = probes.during(lambda: time.sleep(args.quiet_s))
        images: list[tuple[int, float]] = []
        walls = []

        def waves() -> None:
            for _ in range(args.waves):
                began = time.perf_counter()
                images.extend(attack(base, readers, args.requests))
                walls.append(time.perf_counter() - began)

        loaded = probes.during(waves)
        sampling.set()
        sampler.join(5)
        longest = metric(base, "citadel_page_render_longest_seconds")
        outcomes = metric(base, "citadel_page_render_duration_seconds_count")
        limit = float(env.get("CITADEL_RENDER_TIMEOUT_S", "10"))
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    result = {
        "cpu": cpu(),
        "requests_per_wave": args.requests,
        "readers": args.readers,
        "waves": args.waves,
        "wave_wall_s": [round(w, 2) for w in walls],
        "quiet": {p: summary(quiet[p]) for p in PROBES},
        "attack": {p: summary(loaded[p]) for p in PROBES},
        "images": {
            "statuses": dict(Counter(s for s, _ in images)),
            "slowest_reply_s": round(max(t for _, t in images), 2),
        },
        "render_limit_s": limit,
        "longest_render_s": round(next(iter(longest.values()), 0.0), 2),
        "render_outcomes": {
            re.sub(r".*outcome=\"(\w+)\".*", r"\1", k): int(v) for k, v in outcomes.items()
        },
        "peak_rss_mib": round(peak[0] / 1024, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"CPU: {result['cpu']}")
    print(
        f"{args.waves} wave(s) of {args.requests} image requests from {args.readers}"
        f" reader(s), walls {result['wave_wall_s']} s"
    )
    for phase in ("quiet", "attack"):
        for probe in PROBES:
            s = result[phase][probe]
            print(
                f"  {phase:6} {probe:8} n={s['n']:4} p50={s.get('p50_ms')} ms"
                f" p95={s.get('p95_ms')} ms max={s.get('max_ms')} ms {s.get('statuses')}"
            )
    print(f"image replies by status: {result['images']['statuses']}")
    print(f"slowest image reply: {result['images']['slowest_reply_s']} s")
    print(f"longest render: {result['longest_render_s']} s (limit {limit:g} s)")
    print(f"render outcomes: {result['render_outcomes']}")
    print(f"peak RSS, server + workers: {result['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
