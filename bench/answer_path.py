"""Benchmark: the answer path minus the generator, on one core.

Measures selection, manifest freezing, candidate validation and attribution
over 1,000 requests, each with 8 passages of 1 KiB, and prints p50/p95.
Run: `make bench` (or `.venv/bin/python bench/answer_path.py --json`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import time

from citadel.domain.answer import attribute
from citadel.domain.limits import Limits
from citadel.domain.manifest import freeze_manifest, prompt_evidence
from citadel.domain.search import Evidence
from citadel.domain.selection import select_evidence
from citadel.domain.validation import Accepted, validate_candidate

WORDS = (
    "matrix vector data frame function value factor level variable model linear regression "
    "table column row list element index array object method class attribute mode length"
).split()


def passage(rng: random.Random, size: int = 1024) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < size:
        out.append(rng.choice(WORDS))
    return " ".join(out)[: size - 1] + "."


def request_evidence(rng: random.Random, n: int) -> list[Evidence]:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    rng = random.Random(7)
    limits = Limits()
    requests = [request_evidence(rng, 8) for _ in range(args.requests)]
    for evidence in requests[:50]:  # warm-up
        one_request(evidence, limits)
    timings = []
    for evidence in requests:
        start = time.perf_counter()
        one_request(evidence, limits)
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    result = {
        "requests": args.requests,
        "passages_per_request": 8,
        "passage_bytes": 1024,
        "p50_ms": round(statistics.median(timings), 4),
        "p95_ms": round(timings[int(0.95 * len(timings)) - 1], 4),
        "max_ms": round(timings[-1], 4),
        "python": platform.python_version(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"answer path minus generator, {args.requests} requests x 8 passages x 1 KiB:"
            f" p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms (max {result['max_ms']} ms)"
        )


if __name__ == "__main__":
    main()
