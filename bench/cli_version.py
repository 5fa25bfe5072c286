"""Wall time of ``citadel --version``, and of ``citadel --help`` for comparison.

Each command runs ``--runs`` times as a fresh process (``python -m citadel``, with
this tree's ``src`` first on the path); the median and the spread are printed as
one JSON object. The target for ``--version`` is under 0.3 s; the full command
table (``--help``) loads the services, numpy, httpx and the parsers. To see where
an import's time goes: ``python -X importtime -m citadel --help 2>&1 | sort -t'|' -k2 -n``.

  .venv/bin/python bench/cli_version.py --runs 15
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def timed(args: list[str], runs: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    seconds: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "citadel", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            check=True,
        )
        seconds.append(time.perf_counter() - start)
    return {
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    runs = parser.parse_args().runs
    timed(["--version"], 1)  # warm the file cache and the bytecode
    report = {
        "python": platform.python_version(),
        "runs": runs,
        "version": timed(["--version"], runs),
        "help": timed(["--help"], runs),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
