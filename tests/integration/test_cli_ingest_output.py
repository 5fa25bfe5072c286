"""The ingest summary is the command's result: stdout, one whole line per file.

Before, it went to stderr through rich, which wrapped it at the console width: a
pipe (``citadel ingest … | cat``) read nothing, and a long title broke in two.
Failures stay on stderr, also unwrapped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LONG_TITLE = "A Very Long Title For A Small Book About Handling Missing Values In Data Frames"
BOOK = f"""# {LONG_TITLE}

## Missing data

In R a missing value is written NA. The function is.na(x) tests each element.
"""


def ingest(tmp_path: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CITADEL_HOME": str(tmp_path / "lib"),
        "CITADEL_EMBEDDER": "hashing",
        "COLUMNS": "40",
    }
    command = [sys.executable, "-m", "citadel", "ingest", *map(str, paths)]
    return subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=120
    )


def test_the_summary_is_one_unwrapped_line_on_stdout(tmp_path: Path) -> None:
    book = tmp_path / "missing.md"
    book.write_text(BOOK, encoding="utf-8")
    outcome = ingest(tmp_path, book)
    assert outcome.returncode == 0, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert len(lines) == 1, outcome.stdout
    assert lines[0].startswith("created ")
    assert LONG_TITLE in lines[0]
    assert "sections" in lines[0] and "chunks" in lines[0]
    assert LONG_TITLE not in outcome.stderr


def test_a_failure_is_one_unwrapped_line_on_stderr(tmp_path: Path) -> None:
    refused = tmp_path / ("a-file-whose-name-is-much-longer-than-forty-columns" + ".xyz")
    refused.write_text("nothing a parser reads", encoding="utf-8")
    outcome = ingest(tmp_path, refused)
    assert outcome.returncode == 1
    assert outcome.stdout == ""
    failed = [line for line in outcome.stderr.splitlines() if line.startswith("failed")]
    assert len(failed) == 1, outcome.stderr
    assert refused.name in failed[0]
