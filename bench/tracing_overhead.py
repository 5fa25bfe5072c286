"""Benchmark: what tracing costs on the whole answer path (AnswerService.answer).

A scratch SQLite library (hashing embedder, extractive generator, answer cache off,
audit on) answers the same questions once per mode, the modes interleaved question by
question (the order flipped each time) so load drifts hit them alike:

- ``none``: the services built without a ``tracer`` (the default: ``NullTracer``).
  This mode runs on a tree without tracing too, for a before/after comparison:
  ``PYTHONPATH=OLD_TREE/src .venv/bin/python bench/tracing_overhead.py --modes none``.
- ``otel``: an OpenTelemetry SDK provider recording every span to an in-memory
  exporter through a SimpleSpanProcessor (each span exported as it ends, on the
  request's thread: the most a span can cost in process);
- ``batch``: the same through a BatchSpanProcessor, as ``CITADEL_OTEL_ENDPOINT`` wires
  the OTLP exporter (spans handed to the processor's own thread).

Prints per-answer wall and process-CPU p50/p95 per mode, the CPU model, and (on a
tree with tracing) what one span of the no-op tracer costs, measured alone: a
``with tracer.span(name, attr=...) as span: span.set(attr=...)`` block, a million times.
Run: ``.venv/bin/python bench/tracing_overhead.py [--answers 200] [--rounds 3] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from citadel.app.answer import AnswerRequest
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.config import Settings
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role

WORDS = (
    "matrix vector data frame function value factor level variable model linear regression "
    "table column row list element index array object method class attribute mode length"
).split()
TENANT = "bench"


def book(rng: random.Random, chapters: int = 40) -> str:
    parts = ["# A Synthetic Manual\n"]
    for c in range(chapters):
        parts.append(f"\n## {c + 1} Chapter {c + 1}\n")
        for _ in range(4):
            words = [rng.choice(WORDS) for _ in range(rng.randint(40, 80))]
            parts.append("\n" + " ".join(words).capitalize() + ".\n")
    return "".join(parts)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def services_for(home: Path, mode: str) -> tuple[Services, Any]:
    """The services for ``mode``, and (provider, exporter) when it records spans."""
    settings = Settings(home=home, embedder="hashing", answer_cache_size=0)
    if mode == "none":
        return build(settings), None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from citadel.adapters.tracing.otel import OtelTracer

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    processor = SimpleSpanProcessor if mode == "otel" else BatchSpanProcessor
    provider.add_span_processor(processor(exporter))
    return build(settings, tracer=OtelTracer(provider)), (provider, exporter)


def null_span_ns(repeats: int = 5, n: int = 1_000_000) -> float | None:
    """Nanoseconds per no-op span block, the best of ``repeats``; None without tracing."""
    try:
        from citadel.app.ports.tracing import NullTracer
    except ImportError:  # a tree from before tracing
        return None
    tracer = NullTracer()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for i in range(n):
            with tracer.span("stage", mode="hybrid") as span:
                span.set(results=i)
        best = min(best, (time.perf_counter() - started) / n * 1e9)
    return round(best, 1)


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[max(0, int(0.95 * len(ordered)) - 1)], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="none,otel,batch")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rng = random.Random(11)
    questions = [" ".join(rng.choice(WORDS) for _ in range(6)) + "?" for _ in range(args.answers)]
    actor = Actor("bench", TENANT, Role.ADMIN)
    wall: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    spans: dict[str, int] = dict.fromkeys(modes, 0)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        text = root / "manual.md"
        text.write_text(book(rng), encoding="utf-8")
        opened: dict[str, tuple[Services, Any]] = {}
        for mode in modes:
            services, recording = services_for(root / mode, mode)
            services.ingest.ingest(
                services.documents.open(text),
                IngestOptions(tenant=TENANT),
                actor=Actor("local", TENANT, Role.ADMIN),
            )
            opened[mode] = (services, recording)
        loop = asyncio.new_event_loop()
        try:
            for mode in modes:  # warm-up: caches of units and vectors, first connections
                services, _ = opened[mode]
                for question in questions[:20]:
                    loop.run_until_complete(
                        services.answer.answer(AnswerRequest(SearchRequest(question)), actor)
                    )
            for _ in range(args.rounds):
                for _, recording in opened.values():
                    if recording is not None:
                        recording[0].force_flush()  # the warm-up's spans out of the queue
                        recording[1].clear()
                for index, question in enumerate(questions):
                    # Each question in every mode, the order flipped from one to the next.
                    for mode in modes if index % 2 == 0 else modes[::-1]:
                        services, _ = opened[mode]
                        request = AnswerRequest(SearchRequest(question))
                        started, started_cpu = time.perf_counter(), time.process_time()
                        loop.run_until_complete(services.answer.answer(request, actor))
                        wall[mode].append((time.perf_counter() - started) * 1000)
                        cpu[mode].append((time.process_time() - started_cpu) * 1000)
                for mode, (_, recording) in opened.items():
                    if recording is not None:
                        recording[0].force_flush()
                        spans[mode] = len(recording[1].get_finished_spans()) // len(questions)
        finally:
            loop.close()
            for services, _ in opened.values():
                services.close()
    result: dict[str, Any] = {
        "cpu_model": cpu_model(),
        "answers_per_round": args.answers,
        "rounds": args.rounds,
        "python": platform.python_version(),
        "null_span_ns": null_span_ns(),
        "modes": {
            m: {**percentiles(wall[m]), "cpu": percentiles(cpu[m]), "spans_per_answer": spans[m]}
            for m in modes
        },
    }
    for mode in modes:
        if mode != "none" and "none" in modes:
            result[f"{mode}_over_none_p50"] = {
                "wall": round(statistics.median(wall[mode]) / statistics.median(wall["none"]), 3),
                "cpu": round(statistics.median(cpu[mode]) / statistics.median(cpu["none"]), 3),
            }
    if args.json:
        print(json.dumps(result))
        return
    print(f"tracing overhead, {args.answers} answers x {args.rounds} rounds, {result['cpu_model']}")
    if result["null_span_ns"] is not None:
        print(f"  one no-op span block: {result['null_span_ns']} ns")
    for mode, figures in result["modes"].items():
        print(
            f"  {mode:5s} wall p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms;"
            f" CPU p50 {figures['cpu']['p50_ms']} ms, p95 {figures['cpu']['p95_ms']} ms;"
            f" spans/answer {figures['spans_per_answer']}"
        )
    for mode in modes:
        ratio = result.get(f"{mode}_over_none_p50")
        if ratio is not None:
            print(f"  {mode}/none p50: wall {ratio['wall']}x, CPU {ratio['cpu']}x")


if __name__ == "__main__":
    main()
