"""Benchmark: what storing each chunk's quotable units costs and saves, on a real library.

Reads the chunks of a library file (read-only) and reports: the text's size and the
stored forms' (``extractive/stored.py``), as ingest would write them; the time to cut a
chunk into units against the time to read its stored form back (per chunk, median and
p95 over all chunks, best of ``--rounds``); and whether reading gives exactly what
cutting does, for every chunk. Run: `.venv/bin/python bench/stored_units.py --home
/tmp/qa-home [--json]` (a library made by `citadel eval answers` or `citadel ingest`).
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import time
from pathlib import Path

from citadel.adapters.generators.extractive.stored import read_units, stored_units
from citadel.adapters.generators.extractive.units import quotable_units


def per_chunk(work: list[tuple[str, str]], reading: bool, rounds: int) -> list[float]:
    """Microseconds per chunk, the best of ``rounds`` for each."""
    best = [float("inf")] * len(work)
    for _ in range(rounds):
        for index, (text, form) in enumerate(work):
            started = time.perf_counter()
            if reading:
                read_units(form, text)
            else:
                quotable_units(text)
            best[index] = min(best[index], (time.perf_counter() - started) * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", type=Path, required=True, help="the library's home")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    db = args.home / "citadel.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    texts = [str(text) for (text,) in conn.execute("SELECT text FROM chunks ORDER BY rowid")]
    conn.close()
    if not texts:
        raise SystemExit(f"{db} holds no chunks")
    work = [(text, stored_units(text)) for text in texts]
    mismatches = sum(read_units(form, text) != tuple(quotable_units(text)) for text, form in work)
    cut = sorted(per_chunk(work, False, args.rounds))
    read = sorted(per_chunk(work, True, args.rounds))
    text_bytes = sum(len(text.encode()) for text in texts)
    form_bytes = sum(len(form.encode()) for _, form in work)
    result = {
        "chunks": len(texts),
        "mismatches": mismatches,
        "text_mb": round(text_bytes / 1e6, 2),
        "stored_mb": round(form_bytes / 1e6, 2),
        "stored_per_text": round(form_bytes / text_bytes, 2),
        "cut_us": {
            "p50": round(statistics.median(cut), 1),
            "p95": round(cut[int(0.95 * len(cut))], 1),
        },
        "read_us": {
            "p50": round(statistics.median(read), 1),
            "p95": round(read[int(0.95 * len(read))], 1),
        },
        "python": platform.python_version(),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{result['chunks']:,} chunks, {mismatches} read differently from cutting;"
        f" text {result['text_mb']} MB, stored units {result['stored_mb']} MB"
        f" ({result['stored_per_text']}x); per chunk: cut p50 {result['cut_us']['p50']} us"
        f" p95 {result['cut_us']['p95']} us, read p50 {result['read_us']['p50']} us"
        f" p95 {result['read_us']['p95']} us"
    )


if __name__ == "__main__":
    main()
