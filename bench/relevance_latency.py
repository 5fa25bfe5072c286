"""Benchmark: the packaged relevance cross-encoder on one answer's passages and sentences.

Two shapes: (question, 16 sentences) — the answerability decision's work for one
answer (``app.answerability.SENTENCES``) — and (question, 8 passages of ~200 words),
the most a caller scoring whole passages would ask. Questions and text are the project's
own (``data/answerability/answerable-*.jsonl``: each passage is a book's answer strings
joined to ~200 words, the sentences their sentences). Every repetition asks another
question with the cache off, so each pair runs the model; the ``cached`` row asks
again with the cache on. Prints the CPU and whether it has the integer dot-product
flags (without avx512_vnni, avx_vnni or amx_int8 the session runs onnxruntime's exact,
slower uint8 x uint8 kernels). Run:
``PYTHONPATH=src .venv/bin/python bench/relevance_latency.py [--repetitions N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from citadel.adapters.embedding.cpu_kernels import exact_int8_products
from citadel.adapters.relevance import CrossEncoderRelevance
from citadel.app import answerability
from citadel.domain.text import split_sentences

DATA = Path(__file__).resolve().parents[1] / "data" / "answerability"
PASSAGES = 8
PASSAGE_WORDS = 200
SENTENCES = answerability.SENTENCES
FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "avx2")


def rows() -> list[dict[str, object]]:
    return [
        json.loads(line)
        for path in sorted(DATA.glob("answerable-*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]


def material() -> tuple[list[str], list[str], list[str]]:
    """Questions, ~200-word passages and sentences, all from the answerability data."""
    items = rows()
    questions = [str(r["question"]) for r in items]
    answers = [" ".join(str(a).split()) for r in items for a in r["answer"]]  # type: ignore[attr-defined]
    passages, words = [], []
    for answer in answers:
        words.extend(answer.split())
        if len(words) >= PASSAGE_WORDS:
            passages.append(" ".join(words[:PASSAGE_WORDS]))
            words = []
    sentences = [a[s:e] for a in answers for s, e in split_sentences(a) if e - s > 20]
    return questions, passages, sentences


def cpu() -> dict[str, object]:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in info.splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or platform.machine(),
    )
    flags = next(
        (line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")),
        [],
    )
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "flags": {flag: flag in flags for flag in FLAGS},
        "exact_int8_products": exact_int8_products(),
    }


def timed(repetitions: int, call: Callable[[int], object]) -> dict[str, float]:
    timings = []
    for i in range(repetitions):
        started = time.perf_counter()
        call(i)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {
        "p50_ms": round(statistics.median(timings), 2),
        "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None, help="the scorer's default: 2")
    parser.add_argument("--metadata", type=Path, help="another relevance.json (same graph)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions, passages, sentences = material()
    cold = CrossEncoderRelevance(threads=args.threads, cache_size=0, metadata_path=args.metadata)
    started = time.perf_counter()
    cold.load()
    load_ms = (time.perf_counter() - started) * 1000
    cold.score(questions[0], passages[:1])  # the first run's allocations

    def batch(texts: list[str], size: int, i: int) -> list[str]:
        start = (i * size) % max(1, len(texts) - size)
        return texts[start : start + size]

    report: dict[str, object] = {
        **cpu(),
        "model": cold.name,
        "max_pieces": cold.info.max_pieces,
        "repetitions": args.repetitions,
        "load_ms": round(load_ms, 1),
        "passages": timed(
            args.repetitions,
            lambda i: cold.score(questions[i + 1], batch(passages, PASSAGES, i)),
        ),
        "sentences": timed(
            args.repetitions,
            lambda i: cold.score(questions[i + 1], batch(sentences, SENTENCES, i)),
        ),
    }
    warm = CrossEncoderRelevance(threads=args.threads, metadata_path=args.metadata)
    warm.score(questions[1], batch(passages, PASSAGES, 0))
    report["passages_cached"] = timed(
        args.repetitions, lambda _: warm.score(questions[1], batch(passages, PASSAGES, 0))
    )
    if args.json:
        print(json.dumps(report))
        return
    flags = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in report["flags"].items())  # type: ignore[attr-defined]
    print(f"CPU: {report['cpu']} ({report['cores']} cores); {flags}")
    print(
        f"model {report['model']} (max_pieces {report['max_pieces']}):"
        f" session built in {report['load_ms']} ms"
    )
    for shape, label in (
        ("passages", f"question x {PASSAGES} passages of ~{PASSAGE_WORDS} words"),
        ("sentences", f"question x {SENTENCES} sentences"),
        ("passages_cached", f"question x {PASSAGES} passages, cached"),
    ):
        figures = report[shape]
        print(f"{label}: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms")  # type: ignore[index]


if __name__ == "__main__":
    main()
