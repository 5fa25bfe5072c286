"""A docs folder (Markdown files with an mkdocs.yml nav) ingested through the real CLI is one
book: one source id, its files as chapters in the nav's order, headings as sections, and a
link to another file kept as that file's location. Before the Markdown folder parser, the
CLI refused the folder ("no parser for this kind of file")."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from citadel.entrypoints.cli import app

ENV = {"CITADEL_HOME": "", "CITADEL_DB": "", "CITADEL_EMBEDDER": "none"}


def _cli(home: Path, *args: str) -> list[dict[str, object]]:
    outcome = CliRunner().invoke(app, [*args, "--home", str(home), "--json"], env=ENV)
    assert outcome.exit_code == 0, outcome.output
    return [json.loads(line) for line in outcome.stdout.splitlines() if line.startswith("{")]


def _docs(root: Path) -> Path:
    """A small MkDocs project: the nav puts the files in an order the folder's is not."""
    docs = root / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / ".git").mkdir()
    (root / "mkdocs.yml").write_text(
        "site_name: Queue handbook\n"
        "theme:\n  name: material\n"
        "markdown_extensions:\n  - pymdownx.superfences:\n      custom_fences:\n"
        "        - name: mermaid\n          format: !!python/name:pymdownx.superfences.fence_code\n"
        "nav:\n"
        "  - Home: index.md\n"
        "  - Guide:\n"
        "      - guide/workers.md\n"
        "      - Draining: guide/draining.md\n"
        "  - Changes: https://example.org/changes\n",
        encoding="utf-8",
    )
    (docs / "index.md").write_text(
        "# Queue handbook\n\nThe queue keeps every job until a worker acknowledges it.\n",
        encoding="utf-8",
    )
    # Alphabetically "draining" comes first; the nav puts "workers" first.
    (docs / "guide" / "draining.md").write_text(
        "# Draining a node\n\nDrain a node before its kernel is upgraded, as "
        "[restarting](workers.md#restarting-workers) says.\n",
        encoding="utf-8",
    )
    (docs / "guide" / "workers.md").write_text(
        "# Workers\n\nEach worker takes one job at a time.\n\n"
        "## Restarting workers\n\nRestart the workers one at a time, so the queue never stalls.\n",
        encoding="utf-8",
    )
    (docs / ".git" / "HEAD.md").write_text("# Hidden\n\nNever read.\n", encoding="utf-8")
    (docs / "logo.svg").write_text("<svg/>", encoding="utf-8")
    return root


def test_a_docs_folder_ingested_by_the_cli_is_one_book_in_nav_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    reports = _cli(home, "ingest", str(_docs(tmp_path / "handbook")))
    assert len(reports) == 1 and reports[0]["status"] == "created", reports
    source_id = str(reports[0]["source_id"])
    listed = _cli(home, "sources", "list")
    assert [s["source_id"] for s in listed] == [source_id]
    assert listed[0]["title"] == "Queue handbook"
    chunks = _cli(home, "sources", "chunks", source_id)
    assert {c["source_id"] for c in chunks} == {source_id}
    chapters = list(dict.fromkeys(c["chapter"] for c in chunks))
    assert chapters == ["Queue handbook", "Workers", "Draining a node"]
    restarting = [c for c in chunks if c["section"] == "Restarting workers"]
    assert [c["section_path"] for c in restarting] == [["Workers", "Restarting workers"]]
    assert restarting[0]["location"] == "guide/workers.md#restarting-workers"
    # The link from draining.md names the location of the section it points to.
    (draining,) = [c for c in chunks if c["chapter"] == "Draining a node"]
    assert draining["location"] == "guide/draining.md#draining-a-node"
    assert "[restarting](guide/workers.md#restarting-workers)" in str(draining["text"])
    assert not [c for c in chunks if "Never read" in str(c["text"])]


def test_a_folder_with_no_markdown_is_refused_in_plain_words(tmp_path: Path) -> None:
    folder = tmp_path / "assets"
    folder.mkdir()
    (folder / "logo.svg").write_text("<svg/>", encoding="utf-8")
    (folder / ".notes").mkdir()
    (folder / ".notes" / "todo.md").write_text("# Todo\n\nHidden.\n", encoding="utf-8")
    outcome = CliRunner().invoke(
        app, ["ingest", str(folder), "--home", str(tmp_path / "home"), "--json"], env=ENV
    )
    assert outcome.exit_code != 0
    report = json.loads(next(line for line in outcome.stdout.splitlines() if "{" in line))
    assert report["reason"] == "unsupported"
    assert "Markdown" in str(report) and "index.html" in str(report)
