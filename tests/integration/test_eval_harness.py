"""`citadel eval retrieval` on a tiny BEIR data set made here, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citadel.entrypoints.cli import app

DOCS = [
    ("d1", "Retry budgets", "A retry policy caps attempts so transient failures stay bounded."),
    ("d2", "Circuit breakers", "A breaker opens after repeated failures and sheds load."),
    ("d3", "Caching", "A cache keeps recent answers close to the reader."),
    ("d4", "Backoff", "Exponential backoff spaces retries further apart each time."),
    ("d5", "Queues", "A queue decouples producers from consumers."),
]
QUERIES = [
    ("q1", "why cap retry attempts", {"d1": 1, "d4": 1}),
    ("q2", "what does a circuit breaker do after failures", {"d2": 1}),
    ("q3", "decouple producers and consumers", {"d5": 1}),
    ("q4", "unjudged query", {}),
]


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": d, "title": t, "text": x}) for d, t, x in DOCS)
    )
    (root / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": text}) for q, text, _ in QUERIES)
    )
    rows = ["query-id\tcorpus-id\tscore"] + [
        f"{q}\t{d}\t{g}" for q, _, rel in QUERIES for d, g in rel.items()
    ]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


def test_reports_every_metric_for_every_mode_in_one_run(
    beir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    home = tmp_path / "eval-home"
    args = [
        "eval",
        "retrieval",
        "--beir",
        str(beir),
        "--split",
        "test",
        "--json",
        "--home",
        str(home),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert (report["documents"], report["queries"], report["ingested"]) == (5, 3, 5)
    assert set(report["modes"]) == {"lexical", "dense", "hybrid"}
    for metrics in report["modes"].values():
        assert set(metrics) >= {"ndcg@10", "recall@10", "recall@100", "mrr@10"}
        assert all(0.0 <= metrics[k] <= 1.0 for k in ("ndcg@10", "recall@10", "mrr@10"))
    # Every relevant document shares words with its query: lexical finds them all.
    assert report["modes"]["lexical"]["recall@10"] == 1.0
    assert report["modes"]["hybrid"]["recall@10"] == 1.0
    # A re-run reuses the library: nothing is ingested again.
    again = json.loads(CliRunner().invoke(app, args).stdout.strip().splitlines()[-1])
    assert again["ingested"] == 0
    assert again["modes"]["lexical"]["ndcg@10"] == report["modes"]["lexical"]["ndcg@10"]


@pytest.mark.parametrize("broken", ["missing-qrels", "bad-json", "bad-qrels"])
def test_a_broken_data_set_is_a_clear_error(beir: Path, broken: str) -> None:
    if broken == "missing-qrels":
        (beir / "qrels" / "test.tsv").unlink()
    elif broken == "bad-json":
        (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": \n')
    else:
        (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\tmany\n")
    result = CliRunner().invoke(app, ["eval", "retrieval", "--beir", str(beir), "--split", "test"])
    assert result.exit_code == 2
    assert "error" in result.output.lower()
