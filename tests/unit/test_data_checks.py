"""The written-data checks (``scripts/check_*_data.py``) against a fresh ingest's chunks.

Chunk ids hash the source id, which each ingest draws anew, so the ids the writers
recorded are not the ids a new home holds: the checks match the text instead, and
still refuse a passage or an answer no chunk holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Use git fetch to download objects. Then git merge joins the fetched branch into yours."


def chunks_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "chunks"
    directory.mkdir(exist_ok=True)
    chunk = {
        "chunk_id": "new-ingest-id",
        "ordinal": 0,
        "chapter": "Sharing",
        "section_path": ["Sharing"],
        "text": TEXT,
    }
    (directory / "git-manual.jsonl").write_text(json.dumps(chunk) + "\n", "utf-8")
    return directory


def run(script: str, rows: list[dict], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / script),
            str(data),
            "--chunks",
            str(chunks_dir(tmp_path)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def support_row(passage: str) -> dict[str, str]:
    return {
        "id": "git-manual-f00001",
        "book": "git-manual",
        "chunk_id": "the-writers-id",
        "passage": passage,
        "sentence": "Fetching downloads the objects, and merging then joins the branch.",
        "label": "SUPPORT",
        "kind": "paraphrase",
        "origin": "written",
    }


def test_a_support_passage_is_found_by_its_text_under_another_chunk_id(tmp_path: Path) -> None:
    assert run("check_support_data.py", [support_row(TEXT[:60])], tmp_path).returncode == 0
    missing = "git pull is fetch and merge, in one command, for the current branch."
    refused = run("check_support_data.py", [support_row(missing)], tmp_path)
    assert refused.returncode == 1 and "in no chunk of git-manual" in refused.stderr
    # Too short to name its chunk: any typo'd id would match some chunk's "s".
    refused = run("check_support_data.py", [support_row("git fetch")], tmp_path)
    assert refused.returncode == 1 and "too short to match" in refused.stderr


def answerable(answer: str) -> dict[str, object]:
    return {
        "id": "git-manual-001",
        "book": "git-manual",
        "chunk_id": "the-writers-id",
        "section_path": ["Sharing"],
        "kind": "how-to",
        "question": "How do I get someone else's commits into my branch?",
        "answer": [answer],
        "partial": False,
    }


def test_an_answerable_item_is_found_by_its_answer_under_another_chunk_id(
    tmp_path: Path,
) -> None:
    found = run("check_answerability_data.py", [answerable("Use git fetch")], tmp_path)
    assert found.returncode == 0, found.stdout + found.stderr
    refused = run("check_answerability_data.py", [answerable("git pull")], tmp_path)
    assert (
        refused.returncode == 1 and "holds every answer string" in refused.stdout + refused.stderr
    )


def test_an_answer_found_in_two_sections_resolves_to_the_items_own() -> None:
    # Found attacking the change: training took the first chunk of the right chapter,
    # so pg_restore's question trained on pg_dump's options, which share the sentence.
    sys.path.insert(0, str(ROOT / "scripts"))
    from check_answerability_data import gold_chunk

    sentence = "-c drops database objects before recreating them."
    dump = ("dump", "Reference", 1, sentence, ["Reference", "pg_dump"])
    restore = ("restore", "Reference", 2, sentence, ["Reference", "pg_restore"])
    assert gold_chunk([sentence], ["Reference", "pg_restore"], [dump, restore]) == "restore"
    assert gold_chunk([sentence], ["Reference", "elsewhere"], [restore, dump]) == "dump"
    assert gold_chunk(["not there"], ["Reference"], [dump, restore]) is None
