"""``citadel reindex`` through the real CLI: a library built without this model's vectors
makes search and ask warn on stderr (stdout stays clean JSON) until reindex fills them in.

The hashing embedder keeps it fast; a library ingested with ``CITADEL_EMBEDDER=none``
has no vectors at all, as one built under another model has none under this one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.entrypoints.cli import app

NOTE = """# Runbook

## Restarts

Restart the flux capacitor workers one at a time after a deploy.

## Queues

The flux capacitor workers keep their state in one durable queue.
"""
HASHING_MODEL = "hashing-words-trigrams-v1-384"
CITADEL_VARIABLES = (
    "CITADEL_HOME",
    "CITADEL_DB",
    "CITADEL_GENERATOR",
    "CITADEL_TENANT",
    "CITADEL_MAX_FILE_BYTES",
)


def cli(embedder: str, *args: str) -> Result:
    env: dict[str, str | None] = dict.fromkeys(CITADEL_VARIABLES)
    env["CITADEL_EMBEDDER"] = embedder
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.stderr
    return result


def warnings(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning:")]


@pytest.fixture
def lexical_library(tmp_path: Path) -> tuple[Path, Path, int]:
    """A note ingested with no embedder: (home, note, its chunk count)."""
    home, note = tmp_path / "home", tmp_path / "runbook.md"
    note.write_text(NOTE, encoding="utf-8")
    report = json.loads(ok(cli("none", "ingest", "--home", str(home), "--json", str(note))).stdout)
    assert report["status"] == "created" and report["chunks"] >= 2
    return home, note, int(report["chunks"])


def test_search_and_ask_warn_until_reindex_fills_in_the_vectors(
    lexical_library: tuple[Path, Path, int],
) -> None:
    home, _, chunks = lexical_library
    expected = (
        f"warning: {chunks} of {chunks} chunks have no vector for {HASHING_MODEL};"
        " dense search skips them (run: citadel reindex)"
    )
    searched = ok(cli("hashing", "search", "--home", str(home), "--json", "flux capacitor"))
    assert warnings(searched) == [expected]
    assert json.loads(searched.stdout)["results"], "lexical search still answers"
    asked = ok(cli("hashing", "ask", "--home", str(home), "--json", "How are workers restarted?"))
    assert warnings(asked) == [expected]
    assert len(asked.stdout.splitlines()) == 1
    json.loads(asked.stdout)

    report: dict[str, Any] = json.loads(
        ok(cli("hashing", "reindex", "--home", str(home), "--json")).stdout
    )

    assert report["model"] == HASHING_MODEL
    assert (report["chunks"], report["had_vectors"]) == (chunks, 0)
    assert (report["embedded"], report["reused"]) == (chunks, 0)
    assert report["seconds"] >= 0
    searched = ok(cli("hashing", "search", "--home", str(home), "--json", "flux capacitor"))
    assert warnings(searched) == []
    assert json.loads(searched.stdout)["results"]
    # A rerun has nothing to do and says so on one line.
    again = ok(cli("hashing", "reindex", "--home", str(home)))
    assert re.fullmatch(
        rf"{HASHING_MODEL}: {chunks} chunks; 0 embedded, 0 reused from stored vectors,"
        rf" {chunks} already had one \(\d+\.\d s\)\n",
        again.stdout,
    ), again.stdout


def test_reingesting_the_unchanged_file_also_fills_in_the_vectors(
    lexical_library: tuple[Path, Path, int],
) -> None:
    home, note, _ = lexical_library
    again = ok(cli("hashing", "ingest", "--home", str(home), "--json", str(note)))
    assert json.loads(again.stdout)["status"] == "unchanged"
    searched = ok(cli("hashing", "search", "--home", str(home), "--json", "flux capacitor"))
    assert warnings(searched) == []


def test_without_an_embedder_there_is_no_warning_and_reindex_is_a_usage_error(
    lexical_library: tuple[Path, Path, int],
) -> None:
    home, _, _ = lexical_library
    assert warnings(ok(cli("none", "search", "--home", str(home), "flux capacitor"))) == []
    refused = cli("none", "reindex", "--home", str(home))
    assert refused.exit_code == 2
    assert "CITADEL_EMBEDDER" in refused.stderr and refused.stdout == ""


def test_an_embedder_that_cannot_load_fails_each_file_cleanly(
    lexical_library: tuple[Path, Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New files and unchanged ones that need vectors: reported per path, no traceback."""
    from citadel.adapters.embedding import minilm

    def broken(self: minilm.MiniLmEmbedder) -> None:
        raise minilm.EmbedderUnavailable("the model package is damaged")

    monkeypatch.setattr(minilm.MiniLmEmbedder, "_load", broken)
    home, note, _ = lexical_library
    other = tmp_path / "other.md"
    other.write_text("# Other\n\nA second note about the flux capacitor.\n", encoding="utf-8")
    result = cli("minilm", "ingest", "--home", str(home), "--json", str(note), str(other))
    assert result.exit_code == 1
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["path"], r["status"], r["reason"]) for r in reports] == [
        (str(note), "failed", "embedder_unavailable"),
        (str(other), "failed", "embedder_unavailable"),
    ]
    assert "the model package is damaged" in result.stderr
    assert "Traceback" not in result.stderr
