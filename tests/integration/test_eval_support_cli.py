"""`citadel eval support` through the real CLI and the shipped checker: the figures a
labelled pair file gives, and a clear refusal of a file it cannot use."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from citadel.entrypoints.cli import app

PASSAGE = (
    "In R, missing values are represented by the symbol NA. "
    "The function is.na(x) gives a logical vector marking them."
)
PAIRS = [
    # A quotation, a paraphrase, and two claims the passage does not make.
    {"claim": "The function is.na(x) gives a logical vector marking them.", "label": "SUPPORT"},
    {"claim": "Missing values in R are represented by the symbol NA.", "label": "SUPPORT"},
    {"claim": "Sorting a data frame needs the order function and a key.", "label": "NEI"},
    {"claim": "Python lists are mutable sequences of arbitrary objects.", "label": "NEI"},
]


def write_pairs(path: Path) -> Path:
    path.write_text(
        "\n".join(json.dumps({**p, "evidence": PASSAGE}) for p in PAIRS) + "\n", encoding="utf-8"
    )
    return path


def test_the_figures_of_a_pair_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["eval", "support", "--pairs", str(write_pairs(tmp_path / "p.jsonl")), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["checker"].startswith("support/")
    assert report["pairs"] == 4 and report["supported"] == 2
    assert report["labels"].get("verbatim") == 1, "the quotation is found as one"
    # These pairs are easy: the claims about other things score below both supported ones.
    assert report["auroc"] == 1.0
    assert 0.0 <= report["ms_per_pair_p50"] <= report["ms_per_pair_p95"]
    assert set(report) >= {"balanced_accuracy", "precision", "recall"}


def test_a_malformed_pair_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"claim": "x", "evidence": "y"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "support", "--pairs", str(bad)])
    assert result.exit_code == 2
    assert "line 1" in result.output and "label" in result.output
    missing = CliRunner().invoke(app, ["eval", "support", "--pairs", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "cannot read" in missing.output


def test_the_projects_written_pairs_report_per_label_kind_and_confusion(tmp_path: Path) -> None:
    rows = [
        ("Missing values in R are represented by the symbol NA.", "SUPPORT", "paraphrase"),
        ("Missing values in R are never represented by the symbol NA.", "CONTRADICT", "negation"),
        ("Sorting a data frame needs the order function and a key.", "NEI", "off_target"),
    ]
    first, second = tmp_path / "written-a.jsonl", tmp_path / "written-b.jsonl"
    lines = [
        json.dumps(
            {
                "id": f"r-intro-s{i:05d}",
                "book": "r-intro",
                "chunk_id": "c1",
                "passage": PASSAGE,
                "sentence": sentence,
                "label": label,
                "kind": kind,
                "origin": "written",
            }
        )
        for i, (sentence, label, kind) in enumerate(rows, start=1)
    ]
    first.write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    second.write_text(lines[2] + "\n", encoding="utf-8")
    args = ["eval", "support", "--pairs", str(first), "--pairs", str(second)]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["pairs"] == 3
    assert set(report["confusion"]) == {"SUPPORT", "CONTRADICT", "NEI"}
    assert sum(sum(row.values()) for row in report["confusion"].values()) == 3
    assert set(report["confusion"]["NEI"]) == {
        "verbatim",
        "supported",
        "partial",
        "unsupported",
        "contradicted",
    }
    assert set(report["by_kind"]) == {"paraphrase", "negation", "off_target"}
    assert report["by_gold"]["CONTRADICT"]["pairs"] == 1
    assert 0.0 <= report["three_way_balanced_accuracy"] <= 1.0
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "by gold label" in text.stdout and "by kind" in text.stdout
    assert "CONTRADICT" in text.stdout and "off_target" in text.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0].replace('"SUPPORT"', '"SUPPORTED"') + "\n", encoding="utf-8")
    refused = CliRunner().invoke(app, ["eval", "support", "--pairs", str(bad)])
    assert refused.exit_code == 2
    assert "line 1 (r-intro-s00001)" in refused.output and "label must be" in refused.output
