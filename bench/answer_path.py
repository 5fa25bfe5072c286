"""Benchmark: the answer path minus the generator, on one core.

Measures selection, manifest freezing, candidate validation and attribution
over 1,000 requests, each with 8 passages of 1 KiB, and prints p50/p95.
Run: `make bench` (or `.venv/bin/python bench/answer_path.py --json`).

With ``--extractive`` the path includes the built-in extractive generator and the
support check of its segments (the default answer as `ask` makes it). The embedder's
own calls are excluded: the hashing embedder stands in for MiniLM (whose cost is
measured by bench/embedding_throughput.py), every one of its ``embed`` calls is timed
(wall clock and process CPU) and that time is subtracted from its request's. Two
passes: *cold*, every request with 8 passages never seen before (so no cache of
quotable units or vectors helps: the figure the budget is held to), each carrying the
quotable units ingest stores beside a chunk (``Chunk.units``; cut before the timing,
as ingest cuts them); *cold, cut*, as many requests of passages of their own without
stored units (a library stored before schema 7: the generator cuts them); then
*warm*, the last ``--warm`` requests again (their vectors cached, and their stored
units read again, as when search returns passages it returned before). Besides
wall-clock p50/p95 it prints the process CPU time per request (the worker thread that
writes the answer included), steadier than wall time when other jobs share the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import random
import statistics
import time

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.extractive.stored import stored_units
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.adapters.support import default_checker
from citadel.app.ports import Embedder
from citadel.app.support import SupportStep, manifest_passages
from citadel.domain.answer import GenerationRequest, attribute
from citadel.domain.limits import Limits
from citadel.domain.manifest import freeze_manifest, prompt_evidence
from citadel.domain.search import Evidence
from citadel.domain.selection import select_evidence
from citadel.domain.support import SupportPolicy
from citadel.domain.validation import Accepted, validate_candidate

WORDS = (
    "matrix vector data frame function value factor level variable model linear regression "
    "table column row list element index array object method class attribute mode length"
).split()


def passage(rng: random.Random, size: int = 1024) -> str:
    """About ``size`` bytes of sentences of 6 to 20 words."""
    sentences: list[str] = []
    while sum(len(x) + 1 for x in sentences) < size - 120:
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 20))]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


class TimedEmbedder:
    """An embedder that keeps the time spent inside it, to subtract from the path."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.calls = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        cpu = time.process_time()
        try:
            return self._inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.cpu_seconds += time.process_time() - cpu
            self.calls += 1


def request_evidence(rng: random.Random, n: int, *, units: bool = False) -> list[Evidence]:
    """``n`` passages; with ``units``, each carries the quotable units ingest stores."""
    result = []
    for i in range(n):
        text = passage(rng)
        result.append(
            Evidence(
                evidence_id=f"c{rng.getrandbits(124):031x}",
                source_id=f"s{i % 3}",
                version=1,
                chunk_id=f"c{i}",
                title="An Introduction to R",
                author="R Core Team",
                chapter=f"{i % 4} Chapter",
                section=f"{i}.1 Section",
                section_path=(f"{i % 4} Chapter", f"{i}.1 Section"),
                page_start=10 + i,
                page_end=11 + i,
                page_label_start=str(i + 1),
                page_label_end=str(i + 2),
                score=1.0 - i / 10,
                passage=text,
                content_sha256=hashlib.sha256(text.encode()).hexdigest(),
                units=stored_units(text) if units else None,
            )
        )
    return result


def one_request(evidence: list[Evidence], limits: Limits) -> None:
    context = select_evidence(evidence, limits, 0.0)
    manifest = freeze_manifest(context)
    refs = [p.ref for p in prompt_evidence(manifest)]
    candidate = {
        "segments": [
            {"text": f"Sentence {i} of the answer, grounded in the evidence.", "evidence_ids": [r]}
            for i, r in enumerate(refs)
        ]
    }
    verdict = validate_candidate(candidate, manifest, limits)
    assert isinstance(verdict, Accepted)
    attribute(verdict.segments, manifest)


class ExtractivePath:
    """Selection, freezing, the extractive generator, validation, support, attribution."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.embedder = TimedEmbedder(HashingEmbedder())
        self.generator = ExtractiveGenerator(limits, embedder=self.embedder)
        self.support = SupportStep(default_checker(), SupportPolicy.LABEL, CountingMetrics())
        self.loop = asyncio.new_event_loop()
        self.labels: dict[str, int] = {}

    def __call__(self, evidence: list[Evidence], question: str) -> tuple[float, float]:
        """One request; returns the wall and CPU seconds spent inside the embedder."""
        before = self.embedder.seconds
        before_cpu = self.embedder.cpu_seconds
        context = select_evidence(evidence, self.limits, 0.0)
        manifest = freeze_manifest(context)
        request = GenerationRequest(
            question=question,
            evidence=prompt_evidence(manifest),
            max_output_tokens=self.limits.max_output_tokens,
        )
        candidate = self.loop.run_until_complete(self.generator.generate(request))
        verdict = validate_candidate(candidate.payload, manifest, self.limits)
        assert isinstance(verdict, Accepted), verdict
        found = self.support.check(verdict.segments, manifest_passages(manifest))
        for supports in found.supports:
            for support in supports:
                self.labels[support.label.value] = self.labels.get(support.label.value, 0) + 1
        attribute(verdict.segments, manifest, found.supports)
        return self.embedder.seconds - before, self.embedder.cpu_seconds - before_cpu


def percentiles(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "p50_ms": round(statistics.median(ordered), 4),
        "p95_ms": round(ordered[int(0.95 * len(ordered)) - 1], 4),
        "max_ms": round(ordered[-1], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--extractive",
        action="store_true",
        help="include the extractive generator and the support check (embedder excluded)",
    )
    parser.add_argument(
        "--warm",
        type=int,
        default=200,
        help="with --extractive: how many of the last requests to repeat warm (0: none)",
    )
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    rng = random.Random(7)
    limits = Limits()
    requests = [request_evidence(rng, 8, units=args.extractive) for _ in range(args.requests)]
    questions = [" ".join(rng.choice(WORDS) for _ in range(6)) + "?" for _ in requests]
    path = ExtractivePath(limits) if args.extractive else None
    # Passages of their own, never seen either, without stored units (a library stored
    # before units were: the generator cuts them on the answer path).
    cut = [request_evidence(rng, 8) for _ in range(args.requests)] if path else []

    def run(index: int, batch: list[list[Evidence]]) -> tuple[float, float]:
        if path is None:
            one_request(batch[index], limits)
            return 0.0, 0.0
        return path(batch[index], questions[index])

    def timed(
        indices: range, batch: list[list[Evidence]] = requests
    ) -> tuple[list[float], list[float]]:
        wall: list[float] = []
        cpu: list[float] = []
        for index in indices:
            start = time.perf_counter()
            start_cpu = time.process_time()
            inside, inside_cpu = run(index, batch)
            wall.append((time.perf_counter() - start - inside) * 1000)
            cpu.append((time.process_time() - start_cpu - inside_cpu) * 1000)
        return wall, cpu

    warm_up = [request_evidence(rng, 8) for _ in range(50)]  # passages of their own
    for evidence in warm_up:
        if path is None:
            one_request(evidence, limits)
        else:
            path(evidence, "matrix vector data frame function value?")
    wall, cpu = timed(range(len(requests)))
    result: dict[str, object] = {
        "requests": args.requests,
        "passages_per_request": 8,
        "passage_bytes": 1024,
        **percentiles(wall),
        "cpu": percentiles(cpu),
        "python": platform.python_version(),
        "path": "extractive generator + support check" if path else "minus generator",
    }
    if path is not None:
        result["embedder_excluded"] = (
            f"{path.embedder.calls} embed calls, timed and subtracted per request"
            f" ({path.embedder.seconds:.3f} s wall in all)"
        )
        cut_wall, cut_cpu = timed(range(len(cut)), cut)
        result["cut"] = {"requests": len(cut), **percentiles(cut_wall), "cpu": percentiles(cut_cpu)}
        if args.warm:
            repeat = range(max(0, len(requests) - args.warm), len(requests))
            warm_wall, warm_cpu = timed(repeat)
            result["warm"] = {
                "requests": len(repeat),
                **percentiles(warm_wall),
                "cpu": percentiles(warm_cpu),
            }
        result["support_labels"] = path.labels
    if args.json:
        print(json.dumps(result))
        return
    cpu_figures = result["cpu"]
    assert isinstance(cpu_figures, dict)
    print(
        f"answer path ({result['path']}), {args.requests} requests x 8 passages x 1 KiB:"
        f" p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms (max {result['max_ms']} ms);"
        f" CPU p50 {cpu_figures['p50_ms']} ms, p95 {cpu_figures['p95_ms']} ms"
    )
    fallback = result.get("cut")
    if isinstance(fallback, dict):
        print(_pass_line("cold, units cut on the answer path (no stored units)", fallback))
    warm = result.get("warm")
    if isinstance(warm, dict):
        label = f"warm (the last {warm['requests']} requests again, their vectors cached)"
        print(_pass_line(label, warm))
    if path is not None:
        print(f"  embedder excluded: {result['embedder_excluded']}")


def _pass_line(label: str, figures: dict[str, object]) -> str:
    cpu = figures["cpu"]
    assert isinstance(cpu, dict)
    return (
        f"  {label}: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms;"
        f" CPU p50 {cpu['p50_ms']} ms, p95 {cpu['p95_ms']} ms"
    )


if __name__ == "__main__":
    main()
