"""docs/shadow.md's worked example is what ``citadel shadow`` prints on it.

The library is made with the commands the page lists (notes of any text); the
answers are the page's JSON lines, and the report must equal the page's, line for line.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from citadel.entrypoints.cli import app
from tests.conftest import ROOT
from tests.integration.test_cli import CLEAN_ENV

DOC = (ROOT / "docs" / "shadow.md").read_text(encoding="utf-8")
EXAMPLE = DOC.split("## Worked example", 1)[1].split("## The input", 1)[0]
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", EXAMPLE, re.S)


def block(kind: str) -> str:
    return str(next(text for language, text in BLOCKS if language == kind))


def test_the_worked_example_is_what_the_command_prints(tmp_path: Path) -> None:
    setup = block("sh").splitlines()
    host = setup[0].split("=", 1)[1]
    env = {**CLEAN_ENV, "CITADEL_EMBEDDER": "none", "CITADEL_LINK_ALLOWED_HOSTS": host}
    home = str(tmp_path / "home")

    def cli(*args: str) -> Result:
        return CliRunner().invoke(app, [*args, "--home", home], env=env, catch_exceptions=False)

    for n, command in enumerate(setup[1:]):
        argv = shlex.split(command, comments=True)[1:]
        if argv[0] == "ingest":  # a note of its own text at the path the page names
            note = tmp_path / argv[-1]
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(f"# {note.stem}\n\nEdition {n} of {note.stem}.\n", encoding="utf-8")
            argv[-1] = str(note)
        outcome = cli(*argv)
        assert outcome.exit_code == 0, (command, outcome.stderr)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(shown_after_now(block("json")), encoding="utf-8")
    outcome = cli("shadow", str(answers))
    assert outcome.exit_code == 0, outcome.stderr
    assert outcome.stdout.splitlines() == block("text").splitlines()


def shown_after_now(lines: str) -> str:
    """The page's answers with their timestamps moved, keeping their spacing, to just
    after the ingests above: an answer shown before the registry's history began is
    reported as such, so the page's dates would make the test fail once they passed."""
    answers = [json.loads(line) for line in lines.splitlines() if line.strip()]
    stamps = [dt.datetime.fromisoformat(a["timestamp"]) for a in answers if "timestamp" in a]
    shift = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1) - min(stamps)
    for answer in answers:
        if "timestamp" in answer:
            moved = dt.datetime.fromisoformat(answer["timestamp"]) + shift
            answer["timestamp"] = moved.isoformat().replace("+00:00", "Z")
    return "".join(json.dumps(answer) + "\n" for answer in answers)
