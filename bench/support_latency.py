"""Benchmark: the support check of one answer (8 segments, each against a real passage).

Passages are SciFact abstracts (chunk-sized: ~1.5 KiB of real scientific prose),
segments the SciFact claims about them — new text, so nothing is a quotation and
every pair goes through the features and the combiner, or the entailment model
(its pairs side by side on two cores; one after another on one thread; and cut at
``--uncut`` word pieces, 256 as trained, instead of the packaged 128):
114 answers of 8 distinct (claim, abstract) pairs (all SciFact train has). Each
answer is checked once with cold passage caches (``clear_passage_caches``: an
answer's passages are new to the checker; the per-word memos of a running process
stay warm), and the p50/p95 per answer is printed for each checker; the figure is
the median of ``--runs`` runs. The ``verbatim`` row is the extractive generator's
case: 8 whole sentences quoted from 3 abstracts, cold too. Run:
`.venv/bin/python bench/support_latency.py [--json]`.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.support import default_checker, lexical_checker
from citadel.adapters.support.entailment import EntailmentSupportChecker
from citadel.app.ports.support import SupportChecker
from citadel.domain.support_features import clear_passage_caches
from citadel.domain.text import split_sentences

SCIFACT = Path("../shared/data/scifact")
SEGMENTS = 8


def answers(count: int, seed: int = 14) -> list[list[tuple[str, str]]]:
    abstracts = {}
    for line in (SCIFACT / "corpus.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        abstracts[row["_id"]] = row["text"]
    claims = {}
    for line in (SCIFACT / "support_train.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        if row["doc_id"] in abstracts:
            claims[(row["claim"], row["doc_id"])] = abstracts[row["doc_id"]]
    pairs = list(claims.items())
    random.Random(seed).shuffle(pairs)
    flat = [(claim, passage) for (claim, _), passage in pairs]
    batch = [flat[i : i + SEGMENTS] for i in range(0, SEGMENTS * count, SEGMENTS)]
    return [answer for answer in batch if len(answer) == SEGMENTS]


def verbatim_answers(batch: list[list[tuple[str, str]]]) -> list[list[tuple[str, str]]]:
    """Per answer, 8 sentences quoted from its first 3 passages, taken in turn."""
    quoted = []
    for answer in batch:
        passages = [p for _, p in answer[:3]]
        sentences = [[p[a:b] for a, b in split_sentences(p)] for p in passages]
        pairs = [
            (sentences[k][i], passages[k])
            for i in range(max(map(len, sentences)))
            for k in range(len(passages))
            if i < len(sentences[k])
        ]
        quoted.append(pairs[:SEGMENTS])
    return quoted


def run(checker: SupportChecker, batch: list[list[tuple[str, str]]]) -> tuple[float, float]:
    timings = []
    for answer in batch:
        clear_passage_caches()
        started = time.perf_counter()
        checker.check(answer)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return timings[len(timings) // 2], timings[int(0.95 * (len(timings) - 1))]


def _cut_at(pieces: int, where: Path) -> Path:
    """The packaged entailment metadata with another run-time cut, written under ``where``."""
    document = json.loads(read_metadata_text())
    document["max_pieces"] = pieces
    path = where / "entailment.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def read_metadata_text() -> str:
    return (
        importlib.resources.files("citadel.adapters.support")
        .joinpath("model", "entailment.json")
        .read_text(encoding="utf-8")
    )


def cpu() -> dict[str, object]:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in info.splitlines() if "model name" in ln), ""
    )
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "avx512_vnni": " avx512_vnni" in info,
        "amx": " amx_int8" in info,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=int, default=114, help="at most 114")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--embedder-answers", type=int, default=40)
    parser.add_argument(
        "--uncut", type=int, default=256, help="the cut of the comparison row (as trained: 256)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    batch = answers(args.answers)
    embedder = MiniLmEmbedder()
    entailment = EntailmentSupportChecker()
    entailment.load()  # one session, as a server holds it (it keeps no pair cache)
    one_core = EntailmentSupportChecker(threads=1)  # the pairs one after another
    one_core.load()
    uncut = EntailmentSupportChecker(metadata_path=_cut_at(args.uncut, Path(tempfile.mkdtemp())))
    uncut.load()
    # A fresh checker per run: the embedder checker's vector cache starts empty.
    checkers: dict[str, tuple[Callable[[], SupportChecker], list]] = {
        "lexical": (lexical_checker, batch),
        "features (static)": (default_checker, batch),
        "entailment (default)": (lambda: entailment, batch),
        "entailment, 1 thread": (lambda: one_core, batch),
        f"entailment, {args.uncut} pieces": (lambda: uncut, batch),
        "verbatim (extractive)": (lambda: entailment, verbatim_answers(batch)),
        "embedder (MiniLM int8)": (
            lambda: default_checker(embedder),
            batch[: args.embedder_answers],
        ),
    }
    results: dict[str, object] = {
        "segments_per_answer": SEGMENTS,
        **cpu(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    for name, (make, answers_) in checkers.items():
        make().check(batch[-1])  # loads tables and models outside the timing
        runs = [run(make(), answers_) for _ in range(args.runs)]
        results[name] = {
            "answers": len(answers_),
            "p50_ms": round(statistics.median(r[0] for r in runs), 3),
            "p95_ms": round(statistics.median(r[1] for r in runs), 3),
            "runs_p95_ms": [round(r[1], 3) for r in runs],
        }
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(
        f"{results['cpu']} ({results['cores']} cores), avx512_vnni {results['avx512_vnni']}, "
        f"amx {results['amx']}; {SEGMENTS} segments per answer, median of {args.runs} runs; "
        f"load average {results['load_average_before']} -> {results['load_average_after']}"
    )
    for name in checkers:
        row = results[name]
        assert isinstance(row, dict)
        print(
            f"{name:24} {row['answers']:4} answers  p50 {row['p50_ms']:7.2f} ms  "
            f"p95 {row['p95_ms']:7.2f} ms"
        )


if __name__ == "__main__":
    main()
