"""Benchmark: what the HTTP request metrics cost per request, and what a scrape costs.

The real app (``create_app`` over a real SQLite library, hashing embedder) is
called directly as an ASGI app, without a network or a test client, for
``GET /healthz`` (the cheapest route: the middleware's share is largest there)
and ``GET /nope/<random>`` (an unmatched 404), with the HttpMetrics middleware
and, in the same run and interleaved, with it removed. Then the registry is
filled as a busy server's would be (every route template in /openapi.json x 3
statuses) and ``/metrics``' exposition is timed. Last, the middleware alone: around
an ASGI app that answers 200 at once, against that app bare (the added cost
without the app's own noise). Reports medians and p95 in microseconds.

Run: `.venv/bin/python bench/http_metrics.py [--requests 20000] [--json]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.http.conftest

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send
from tests.http.conftest import SECRET, make_library

from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.http_metrics import HttpMetrics


def _without_metrics(app: FastAPI) -> FastAPI:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not HttpMetrics]
    app.middleware_stack = None
    return app


async def _call(app: FastAPI, path: str) -> int:
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"bench")],
        "client": ("127.0.0.1", 5000),
        "server": ("bench", 80),
        "state": {},
    }
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def _time(apps: dict[str, FastAPI], paths: dict[str, str], n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {f"{a}:{p}": [] for a in apps for p in paths}
    for i in range(n + 500):
        for a, app in apps.items():
            for p, path in paths.items():
                target = path.replace("{random}", uuid.uuid4().hex)
                started = time.perf_counter()
                await _call(app, target)
                if i >= 500:  # warm-up
                    times[f"{a}:{p}"].append((time.perf_counter() - started) * 1e6)
    return times


async def _noop(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _time_bare(app: Any, n: int) -> list[float]:
    scope = {"type": "http", "method": "GET", "path": "/v1/search", "root_path": ""}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        return None

    times = []
    for i in range(n + 500):
        started = time.perf_counter()
        await app(dict(scope), receive, send)
        if i >= 500:
            times.append((time.perf_counter() - started) * 1e6)
    return times


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[18]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        library = make_library(Path(home))
        apps = {
            "with": create_app(library.services, session_secret=SECRET),
            "without": _without_metrics(create_app(library.services, session_secret=SECRET)),
        }
        paths = {"healthz": "/healthz", "unmatched": "/nope/{random}"}
        for path in paths.values():
            assert asyncio.run(_call(apps["with"], path.replace("{random}", "x"))) in (200, 404)
        times = asyncio.run(_time(apps, paths, args.requests))
        report: dict[str, Any] = {}
        for p in paths:
            with_, without = times[f"with:{p}"], times[f"without:{p}"]
            report[p] = {
                "with_median_us": round(statistics.median(with_), 1),
                "without_median_us": round(statistics.median(without), 1),
                "added_median_us": round(statistics.median(with_) - statistics.median(without), 1),
                "with_p95_us": round(_p95(with_), 1),
                "without_p95_us": round(_p95(without), 1),
            }
        metrics = library.services.metrics
        templates = list(apps["with"].openapi()["paths"])
        for template in templates:
            for status in (200, 404, 500):
                metrics.http_started()
                metrics.http_finished(template, "GET", status, 0.01)
        scrapes = []
        for _ in range(200):
            started = time.perf_counter()
            body = metrics.exposition()
            scrapes.append((time.perf_counter() - started) * 1e6)
        report["scrape"] = {
            "route_templates": len(templates),
            "bytes": len(body),
            "lines": body.count(b"\n"),
            "median_us": round(statistics.median(scrapes), 1),
            "p95_us": round(_p95(scrapes), 1),
        }
        wrapped = HttpMetrics(_noop, metrics)
        alone: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(5):  # interleaved rounds
            alone["with"] += asyncio.run(_time_bare(wrapped, args.requests // 5))
            alone["without"] += asyncio.run(_time_bare(_noop, args.requests // 5))
        report["middleware_alone"] = {
            "with_median_us": round(statistics.median(alone["with"]), 2),
            "without_median_us": round(statistics.median(alone["without"]), 2),
            "with_p95_us": round(_p95(alone["with"]), 2),
        }
        library.services.close()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for p in paths:
        r = report[p]
        print(
            f"{p:10} with {r['with_median_us']:7.1f} us (p95 {r['with_p95_us']:7.1f})"
            f"  without {r['without_median_us']:7.1f} us (p95 {r['without_p95_us']:7.1f})"
            f"  added {r['added_median_us']:5.1f} us"
        )
    a = report["middleware_alone"]
    print(
        f"middleware alone: {a['with_median_us']} us (p95 {a['with_p95_us']})"
        f" against {a['without_median_us']} us bare"
    )
    s = report["scrape"]
    print(
        f"scrape: {s['route_templates']} templates x 3 statuses, {s['bytes']} bytes,"
        f" {s['lines']} lines, median {s['median_us']} us, p95 {s['p95_us']} us"
    )


if __name__ == "__main__":
    main()
