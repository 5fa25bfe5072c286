"""`citadel eval answers` on a tiny QA set over a Markdown book written here, through the
real CLI, the ingest and answer use cases and the extractive generator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from citadel.entrypoints.cli import app

BOOK = """\
# Field Notes

## Retries

A retry policy caps attempts so transient failures stay bounded.
Exponential backoff spaces retries further apart each time.

## Circuit breakers

A circuit breaker opens after repeated failures and sheds load.
It closes again after a cooldown when a probe succeeds.

### Half open

In the half open state one probe request is let through.

## Queues

A queue decouples producers from consumers.
"""

QUESTIONS = [
    ("q1", "why cap retry attempts", "Field Notes / Retries"),
    (
        "q2",
        "what does a circuit breaker do after repeated failures",
        "Field Notes / Circuit breakers",
    ),
    ("q3", "how are producers decoupled from consumers", "Field Notes / Queues"),
    # The gold section is a parent: a passage under it counts.
    ("q4", "what is let through in the half open state", "Field Notes / Circuit breakers"),
    # Nothing in the book shares a word with it: no evidence, the generator is not called.
    ("q5", "zebra giraffe xylophone", "Field Notes / Queues"),
]


@pytest.fixture
def qa(tmp_path: Path) -> Path:
    books = tmp_path / "books" / "md"
    books.mkdir(parents=True)
    (books / "notes.md").write_text(BOOK, encoding="utf-8")
    path = tmp_path / "qa.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"id": q, "question": text, "book": "md/notes.md", "section": section})
            for q, text, section in QUESTIONS
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def evaluate(qa: Path, home: Path) -> dict[str, Any]:
    args = ["eval", "answers", "--qa", str(qa), "--books", str(qa.parent / "books")]
    result = CliRunner().invoke(app, [*args, "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


def rows(report: dict[str, Any]) -> list[tuple[object, ...]]:
    """Each question's outcome without its latency."""
    return [
        (q["id"], q["first_hit"], q["citations"], q["on_gold"], q["degraded"])
        for q in report["questions"]
    ]


def test_reports_the_figures_overall_and_per_book(
    qa: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    # The harness's arithmetic, without the answerability decision (whose figures on
    # real books are docs/answers.md's; on this four-paragraph book its coverage
    # factor refuses a question whose verb the book never uses).
    monkeypatch.setenv("CITADEL_RELEVANCE", "off")
    home = tmp_path / "eval-home"
    report = evaluate(qa, home)
    assert (report["books"], report["ingested"]) == (1, 1)
    overall = report["overall"]
    latency = (overall.pop("latency_ms_p50"), overall.pop("latency_ms_p95"))
    assert 0 < latency[0] <= latency[1]
    # The extractive generator quotes: every citation it shows is verbatim.
    assert overall.pop("support") == {"verbatim": overall["citations"]}
    assert overall == {
        "questions": 5,
        "hit@1": 0.8,
        "hit@5": 0.8,
        "mrr@10": 0.8,
        "answered": 4,
        "answers_citing_gold": 0.8,
        "citations": 4,
        "citations_on_gold": 1.0,
        "degraded": {"no_evidence": 1},
    }
    per_book = report["per_book"]
    assert list(per_book) == ["md/notes.md"]
    assert per_book["md/notes.md"]["hit@5"] == 0.8
    # One segment each: the best passage answers, and no weaker section is added to fill.
    assert rows(report) == [
        ("q1", 1, 1, 1, None),
        ("q2", 1, 1, 1, None),
        ("q3", 1, 1, 1, None),
        ("q4", 1, 1, 1, None),
        ("q5", None, 0, 0, "no_evidence"),
    ]
    # A re-run with the same library ingests nothing and measures the same.
    again = evaluate(qa, home)
    assert again["ingested"] == 0
    assert rows(again) == rows(report)


def test_the_text_report_has_a_row_per_book(
    qa: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    args = ["eval", "answers", "--qa", str(qa), "--books", str(tmp_path / "books")]
    result = CliRunner().invoke(app, [*args, "--home", str(tmp_path / "home")])
    assert result.exit_code == 0, result.output
    assert "1 books (1 ingested" in result.stdout
    assert "md/notes.md" in result.stdout
    assert "degraded: no_evidence 1" in result.stdout


def test_a_missing_book_fails_and_a_bad_qa_set_is_a_usage_error(
    qa: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    missing = CliRunner().invoke(
        app, ["eval", "answers", "--qa", str(qa), "--books", str(tmp_path / "nowhere")]
    )
    assert missing.exit_code == 1
    assert "no such file or directory" in missing.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "why"}\n', encoding="utf-8")
    refused = CliRunner().invoke(app, ["eval", "answers", "--qa", str(bad)])
    assert refused.exit_code == 2
    assert "line 1: needs non-empty strings" in refused.output


def test_unanswerable_questions_are_answered_too_and_reported_by_kind(
    qa: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    monkeypatch.setenv("CITADEL_RELEVANCE", "off")
    unanswerable = tmp_path / "unanswerable.jsonl"
    rows = [
        {"id": "u1", "kind": "far", "topic": "zoo", "near_book": None, "question": "okapi quokka"},
        {"id": "u2", "kind": "near", "topic": "q", "near_book": "notes", "question": "queue retry"},
    ]
    unanswerable.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["eval", "answers", "--qa", str(qa), "--books", str(qa.parent / "books")]
    args += ["--home", str(tmp_path / "home"), "--unanswerable", str(unanswerable)]
    result = CliRunner().invoke(app, [*args, "--json", "--thresholds", "0.5"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    abstention = report["abstention"]
    # No relevance scorer is configured: nothing abstains and nothing carries a score.
    assert [(q["id"], q["degraded"], q["answerability"]) for q in abstention["questions"]] == [
        ("u1", "no_evidence", None),
        ("u2", None, None),
    ]
    assert abstention["unanswerable_per_kind"]["far"]["degraded"] == {"no_evidence": 1}
    assert abstention["unanswerable_per_kind"]["near"]["answered_share"] == 1.0
    assert abstention["answerable_per_book"]["md/notes.md"]["answered"] == 4
    assert (abstention["thresholds"], abstention["auroc"]["all"]) == ([], None)
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "2 unanswerable and 5 answerable questions" in text.stdout
    assert "answerability: no result carries a score" in text.stdout


def test_with_the_packaged_scorer_every_answered_result_carries_its_score(
    qa: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    unanswerable = tmp_path / "unanswerable.jsonl"
    row = {"id": "u1", "kind": "near", "near_book": "notes", "question": "queue retry in Kafka"}
    unanswerable.write_text(json.dumps(row) + "\n", encoding="utf-8")
    args = ["eval", "answers", "--qa", str(qa), "--books", str(qa.parent / "books")]
    args += ["--home", str(tmp_path / "home"), "--unanswerable", str(unanswerable)]
    result = CliRunner().invoke(app, [*args, "--json", "--thresholds", "0.15"])
    assert result.exit_code == 0, result.output
    abstention = json.loads(result.stdout.strip().splitlines()[-1])["abstention"]
    scorers = [d["scorer"] for d in abstention["decided_by"]]
    assert scorers == ["relevance-minilm-l3/1+relevance-lexical/1"]
    (question,) = abstention["questions"]
    # "kafka" is in no passage of the book: coverage 2/3, so at most (2/3)^4 of the best.
    assert question["answerability"] is not None and question["answerability"] < 0.2
    assert question["degraded"] == "not_in_library"
