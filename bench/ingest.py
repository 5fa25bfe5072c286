"""Benchmark: ingestion speed and memory on the real books.

For each book: parse + chunk time (pages/s), and the whole ingest through the
CLI path (parse, chunk, embed, commit) in a fresh process, with its peak RSS.
Run: `.venv/bin/python bench/ingest.py [--json] [--no-embed] [BOOK ...]`
(default books: derivations.pdf, R-intro.pdf and the PostgreSQL manual from
../shared/books).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOKS = ROOT.parent / "shared" / "books"
DEFAULT = ("pdf/derivations.pdf", "pdf/R-intro.pdf", "html/postgresql-15-manual")

_CHILD = """
import json, resource, sys, time
from pathlib import Path
from citadel.bootstrap import default_parsers
from citadel.config import Settings
from citadel.domain.chunking import chunk_blocks
path = Path(sys.argv[1])
settings = Settings()
parser = next(p for p in default_parsers(settings) if p.accepts(path))
start = time.perf_counter()
document = parser.parse(path)
parsed = time.perf_counter()
_, chunks = chunk_blocks(document.blocks, "bench", 1, tenant="bench")
done = time.perf_counter()
print(json.dumps({"pages": document.page_count, "chunks": len(chunks),
    "parse_s": parsed - start, "chunk_s": done - parsed,
    "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


# The CLI in this process, reporting its own peak RSS on exit (PDF text
# extraction workers, when used, are separate processes and not counted).
_INGEST_CHILD = """
import atexit, resource, sys
atexit.register(lambda: print("peak_rss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                              file=sys.stderr))
from citadel.entrypoints.cli import main
sys.argv = ["citadel", "ingest", sys.argv[1], "--json"]
main()
"""


def parse_and_chunk(book: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(book)], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def full_ingest(book: Path, embed: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, CITADEL_HOME=home)
        if not embed:
            env["CITADEL_EMBEDDER"] = "none"
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", _INGEST_CHILD, str(book)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=ROOT,
        )
        elapsed = time.perf_counter() - start
        report = json.loads(out.stdout.strip().splitlines()[-1])
        rss_kib = int(out.stderr.strip().splitlines()[-1].split()[-1])
    return {"seconds": elapsed, "chunks": report["chunks"], "peak_rss_mib": rss_kib / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("books", nargs="*", default=list(DEFAULT))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-embed", action="store_true", help="skip the embedding step")
    args = parser.parse_args()
    rows = []
    for name in args.books:
        book = Path(name) if Path(name).exists() else BOOKS / name
        parsed = parse_and_chunk(book)
        whole = full_ingest(book, embed=not args.no_embed)
        pages = parsed["pages"]
        seconds = parsed["parse_s"] + parsed["chunk_s"]
        rows.append(
            {
                "book": name,
                "pages": pages,
                "chunks": parsed["chunks"],
                "parse_chunk_s": round(seconds, 2),
                "parse_chunk_pages_per_s": round(pages / seconds, 1) if seconds else 0.0,
                "parse_rss_mib": round(parsed["rss_mib"], 1),
                "ingest_s": round(whole["seconds"], 2),
                "ingest_pages_per_s": round(pages / whole["seconds"], 1),
                "ingest_peak_rss_mib": round(whole["peak_rss_mib"], 1),
            }
        )
    if args.json:
        print(json.dumps(rows))
        return
    print(
        f"{'book':34} {'pages':>6} {'chunks':>7} {'parse+chunk':>12} {'p/s':>7}"
        f" {'ingest':>8} {'p/s':>7} {'peak RSS':>9}"
    )
    for r in rows:
        print(
            f"{r['book']:34} {r['pages']:>6} {r['chunks']:>7} {r['parse_chunk_s']:>11}s"
            f" {r['parse_chunk_pages_per_s']:>7} {r['ingest_s']:>7}s {r['ingest_pages_per_s']:>7}"
            f" {r['ingest_peak_rss_mib']:>7}MiB"
        )


if __name__ == "__main__":
    main()
