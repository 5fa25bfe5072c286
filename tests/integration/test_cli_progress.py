"""What ``citadel ingest`` shows on a terminal while it works: a bar for the pages
parsed and, once embedding starts (the long part of a large book), one for the
chunks embedded. Both go to stderr, so ``--json`` output stays clean."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from citadel.entrypoints.cli import commands as cli

NOTE = "# Runbook\n\n" + "".join(
    f"## Step {i}\n\nRestart worker {i} after the deploy, then check its queue depth.\n\n"
    for i in range(40)
)


def run_ingest(home: Path, note: Path, embedder: str) -> tuple[str, str]:
    """Ingest ``note`` on a pretend terminal; (what the terminal showed, stdout)."""
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120, stderr=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "err", terminal)
        env = {"CITADEL_EMBEDDER": embedder, "CITADEL_HOME": None, "CITADEL_DB": None}
        result = CliRunner().invoke(
            cli.app, ["ingest", str(note), "--json", "--home", str(home)], env=env
        )
    assert result.exit_code == 0, result.output
    return screen.getvalue(), result.stdout


def test_ingest_shows_the_chunks_being_embedded(tmp_path: Path) -> None:
    note = tmp_path / "runbook.md"
    note.write_text(NOTE, encoding="utf-8")
    shown, stdout = run_ingest(tmp_path / "home", note, "hashing")
    assert "runbook.md: embedding chunks" in shown
    report = json.loads(stdout)
    assert report["status"] == "created"
    assert f"{report['chunks']}/{report['chunks']}" in shown, "the bar reaches every chunk"


def test_filling_in_missing_vectors_on_an_unchanged_file_shows_it_too(tmp_path: Path) -> None:
    note = tmp_path / "runbook.md"
    note.write_text(NOTE, encoding="utf-8")
    home = tmp_path / "home"
    shown, _ = run_ingest(home, note, "none")
    assert "embedding chunks" not in shown, "no embedder, nothing to embed"
    shown, stdout = run_ingest(home, note, "hashing")
    assert json.loads(stdout)["status"] == "unchanged"
    assert "runbook.md: embedding chunks" in shown
