"""What a parser read past reaches the one who ingested: one line per file in the
ingest report, in ``ingest --json`` and in the upload reply — not only in a log
line. Before, the parsed document's warnings were dropped before the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citadel.entrypoints.cli import app as cli
from tests.http.conftest import Library, bearer
from tests.http.pdf_sample import write_pdf

PAGES = [
    ["Kestrel gauges rotate the intake vanes", "so the flow stays even"],
    ["Kestrel valves close after a pressure spike", "and reopen slowly"],
]


def repaired_pdf(tmp_path: Path) -> Path:
    """A real PDF whose cross-reference pointer is wrong: pypdf repairs it as it reads."""
    good = write_pdf(tmp_path / "good.pdf", PAGES)
    path = tmp_path / "repaired.pdf"
    data = good.read_bytes()
    pointer = re.search(rb"startxref\s+(\d+)", data)
    assert pointer is not None
    moved = str(int(pointer.group(1)) + 7).encode()
    path.write_bytes(data[: pointer.start(1)] + moved + data[pointer.end(1) :])
    return path


def test_the_upload_reply_carries_the_parsers_warning(
    client: TestClient, library: Library, tmp_path: Path
) -> None:
    damaged = repaired_pdf(tmp_path)
    reply = client.post(
        "/v1/sources",
        files={"file": ("repaired.pdf", damaged.read_bytes(), "application/pdf")},
        headers=bearer(library, "lib"),
    )
    assert reply.status_code == 201, reply.text
    (warning,) = reply.json()["warnings"]
    assert "damaged" in warning and "\n" not in warning
    assert "pypdf" not in warning.lower()


def test_ingest_json_carries_one_warning_line_and_a_sound_file_none(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CITADEL_HOME", str(tmp_path / "lib"))
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    damaged = repaired_pdf(tmp_path)
    sound = write_pdf(tmp_path / "sound.pdf", [["Vanes rotate", "slowly at dawn"]])
    outcome = CliRunner().invoke(
        cli, ["ingest", "--json", str(damaged), str(sound)], catch_exceptions=False
    )
    assert outcome.exit_code == 0, outcome.output
    reports = [json.loads(line) for line in outcome.stdout.splitlines() if line.startswith("{")]
    by_file = {Path(r["path"]).name: r for r in reports}
    assert len(by_file["repaired.pdf"]["warnings"]) == 1
    assert "damaged" in by_file["repaired.pdf"]["warnings"][0]
    assert by_file["sound.pdf"]["warnings"] == []
