"""Kept originals in PostgreSQL: keep, first find on another server, cached find, forget.

Two "servers" are two ``PostgresOriginals`` on one database, each with its own
connection pool and its own cache folder (as two ``citadel serve`` homes). A
synthetic PDF of ``--mib`` MiB (a PDF header, then random bytes: as incompressible
as a PDF's compressed streams) is kept through the first, found through the second
(its cache filled from the database, verified), found again (cached), then forgotten
through the first and swept from the second's cache. Each step's wall time, and the
Python heap's peak during it (tracemalloc: what the step holds, never the whole
file), and the process's peak RSS at the end. The file copy FileOriginals makes on
one server is timed for comparison, as is the space PostgreSQL uses for the parts.

  .venv/bin/python bench/originals.py --mib 512
  .venv/bin/python bench/originals.py --mib 256 --url postgresql://…   # an external server
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.postgres (the embedded server)

from tests import postgres  # noqa: E402

from citadel.adapters.pages import FileOriginals  # noqa: E402
from citadel.adapters.pages.original_cache import OriginalCache  # noqa: E402
from citadel.adapters.postgres.database import Database  # noqa: E402
from citadel.adapters.postgres.originals import PostgresOriginals  # noqa: E402

T = TypeVar("T")
MiB = 1 << 20


def cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def timed(step: Callable[[], T]) -> tuple[T, float, float]:
    """``step()``, its wall seconds and the Python heap's peak above the start, in MiB."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = step()
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, seconds, peak / MiB


def synthetic_pdf(path: Path, mib: int) -> Path:
    with path.open("wb") as out:
        out.write(b"%PDF-1.7\n")
        for _ in range(mib):
            out.write(os.urandom(MiB))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="size of the synthetic PDF")
    parser.add_argument("--url", help="an external PostgreSQL (else the embedded one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = postgres.Server(args.url, None, None) if args.url else postgres.start()
    try:
        if args.url:
            server.prepare_template()
        url = server.fresh_database()
        with tempfile.TemporaryDirectory(prefix="citadel-originals-") as work:
            figures = run(Path(work), url, args.mib)
    finally:
        server.stop()
    figures["cpu"] = cpu()
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{figures['mib']} MiB synthetic PDF, CPU {figures['cpu']}")
    for name, (seconds, peak) in figures["steps"].items():
        rate = f"{figures['mib'] / seconds:6.0f} MiB/s" if seconds > 0.05 else " " * 11
        print(f"  {name:<34} {seconds * 1000:9.1f} ms  {rate}  heap peak {peak:6.1f} MiB")
    print(f"  PostgreSQL space for the parts: {figures['table_mib']:.0f} MiB")
    print(
        f"  process peak RSS: {figures['max_rss_mib']:.0f} MiB"
        f" (before the steps: {figures['rss_before_mib']:.0f} MiB)"
    )


def run(work: Path, url: str, mib: int) -> dict[str, object]:
    pdf = synthetic_pdf(work / "big.pdf", mib)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    first_db, second_db = Database(url), Database(url)
    # The sweep is timed as a step below: the stores' own periodic sweep is kept out of it.
    first = PostgresOriginals(first_db, OriginalCache(work / "a-cache", 4 << 30), sweep_s=3600)
    second = PostgresOriginals(second_db, OriginalCache(work / "b-cache", 4 << 30), sweep_s=3600)
    steps: dict[str, tuple[float, float]] = {}
    try:
        _, s, peak = timed(lambda: FileOriginals(work / "files").keep("t", "big", 1, pdf, [1]))
        steps["file copy (FileOriginals.keep)"] = (s, peak)
        _, s, peak = timed(lambda: first.keep("t", "big", 1, pdf, [1]))
        steps["keep (server A)"] = (s, peak)
        found, s, peak = timed(lambda: second.find("t", "big", 1))
        assert found is not None and found.stat().st_size == pdf.stat().st_size
        steps["first find (server B, cache fill)"] = (s, peak)
        again, s, peak = timed(lambda: second.find("t", "big", 1))
        assert again == found
        steps["cached find (server B)"] = (s, peak)
        with first_db.read() as conn:
            row = conn.execute("SELECT pg_total_relation_size('original_parts')").fetchone()
        table_mib = int(row[0]) / MiB if row else 0.0
        _, s, peak = timed(lambda: first.forget("t", "big"))
        steps["forget (server A)"] = (s, peak)
        dropped, s, peak = timed(second.sweep_deleted)
        assert dropped == 1 and second.find("t", "big", 1) is None
        steps["sweep of B's cache"] = (s, peak)
    finally:
        first.close()
        second.close()
        first_db.close()
        second_db.close()
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "mib": mib,
        "steps": steps,
        "table_mib": table_mib,
        "rss_before_mib": rss_before,
        "max_rss_mib": max_rss,
    }


if __name__ == "__main__":
    main()
