"""`eval answers --unanswerable`: the options refused before any library is built, and
the abstention figures as text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citadel.app.abstention_evaluation import (
    AbstentionReport,
    UnanswerableOutcome,
    abstention_report,
)
from citadel.app.answer_evaluation import QuestionOutcome
from citadel.domain.answer import Answerability
from citadel.entrypoints.cli import app
from citadel.entrypoints.cli.abstention_eval import abstention_json, abstention_text

QA = '{"id": "q1", "question": "why cap retries", "book": "md/notes.md", "section": "A"}\n'
UNANSWERABLE = '{"id": "u1", "kind": "far", "question": "What is the capital of Australia?"}\n'


@pytest.fixture
def sets(tmp_path: Path) -> tuple[Path, Path]:
    qa = tmp_path / "qa.jsonl"
    qa.write_text(QA, encoding="utf-8")
    unanswerable = tmp_path / "unanswerable.jsonl"
    unanswerable.write_text(UNANSWERABLE, encoding="utf-8")
    return qa, unanswerable


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["eval", "answers", *args])
    return result.exit_code, " ".join(result.output.split())


def test_thresholds_need_the_unanswerable_set(sets: tuple[Path, Path]) -> None:
    qa, _ = sets
    code, output = invoke("--qa", str(qa), "--thresholds", "0.5")
    assert code == 2
    assert "--thresholds needs --unanswerable" in output


def test_a_bad_threshold_is_a_usage_error(sets: tuple[Path, Path]) -> None:
    qa, unanswerable = sets
    code, output = invoke(
        "--qa", str(qa), "--unanswerable", str(unanswerable), "--thresholds", "0.2,2"
    )
    assert code == 2
    assert "threshold '2' is not in [0, 1]" in output


def test_a_bad_unanswerable_set_is_named_with_its_line(
    sets: tuple[Path, Path], tmp_path: Path
) -> None:
    qa, _ = sets
    bad = tmp_path / "bad.jsonl"
    bad.write_text(UNANSWERABLE + '{"id": "u2", "kind": "close", "question": "Why?"}\n')
    code, output = invoke("--qa", str(qa), "--unanswerable", str(bad))
    assert code == 2
    assert "bad.jsonl" in output
    assert "line 2: kind 'close' is not one of far, near" in output
    code, output = invoke("--qa", str(qa), "--unanswerable", str(tmp_path / "absent.jsonl"))
    assert code == 2
    assert "cannot read" in output


def decision(score: float) -> Answerability:
    return Answerability(score=score, threshold=0.5, scorer="table-relevance/1")


def report_with(scores: bool) -> AbstentionReport:
    def maybe(score: float) -> Answerability | None:
        return decision(score) if scores else None

    answerable = [
        (
            "pdf/a.pdf",
            QuestionOutcome("q1", "pdf/a.pdf", 1, 1, 1, None, 5.0, answerability=maybe(0.8)),
        ),
        (
            "pdf/a.pdf",
            QuestionOutcome(
                "q2", "pdf/a.pdf", 1, 0, 0, "not_in_library", 5.0, answerability=maybe(0.3)
            ),
        ),
    ]
    unanswerable = [
        UnanswerableOutcome("u1", "far", None, "not_in_library", maybe(0.1), 4.0),
        UnanswerableOutcome("u2", "near", "git-manual", None, maybe(0.6), 4.0),
        UnanswerableOutcome("u3", "near", "git-manual", "no_evidence", None, 4.0),
    ]
    return abstention_report(answerable, unanswerable, thresholds=(0.5,))


def test_the_text_shows_each_kind_each_book_and_the_threshold_rows() -> None:
    text = abstention_text(report_with(scores=True))
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert (
        "abstention (degraded not_in_library): 3 unanswerable and 2 answerable questions" in lines
    )
    assert "far 1 0.000 1.000 -" in lines
    assert "near 2 0.500 0.000 no_evidence 1" in lines
    assert "near git-manual 2 0.500 0.000 no_evidence 1" in lines
    assert "pdf/a.pdf 2 0.500 0.500 -" in lines
    assert any(
        line.startswith("answerability: 4 of 5 results scored (table-relevance/1 at 0.5);")
        and line.endswith("far 1.000, near 0.500, all 0.750")
        for line in lines
    )
    # At 0.5: one of two answerable questions goes ahead; far 0.1 stops, near 0.6 does not.
    assert "0.5 0.500 1.000 0.000 0.500" in lines


def test_the_text_says_when_no_result_carries_a_score() -> None:
    text = abstention_text(report_with(scores=False))
    assert "answerability: no result carries a score" in text
    assert "threshold" not in text


def test_the_json_carries_the_same_figures() -> None:
    shape = abstention_json(report_with(scores=True))
    json.dumps(shape)  # plain JSON values only
    assert shape["unanswerable_per_kind"]["near"] == {
        "questions": 2,
        "answered": 1,
        "answered_share": 0.5,
        "abstained": 0,
        "abstained_share": 0.0,
        "degraded": {"no_evidence": 1},
    }
    assert shape["answerable_per_book"]["pdf/a.pdf"]["abstained_share"] == 0.5
    assert shape["auroc"] == {"far": 1.0, "near": 0.5, "all": 0.75}
    assert shape["decided_by"] == [{"scorer": "table-relevance/1", "threshold": 0.5}]
    assert shape["thresholds"] == [
        {
            "threshold": 0.5,
            "answerable_answered": 0.5,
            "abstained": {"far": 1.0, "near": 0.0, "all": 0.5},
        }
    ]
    assert shape["questions"][2] == {
        "id": "u3",
        "kind": "near",
        "near_book": "git-manual",
        "degraded": "no_evidence",
        "answerability": None,
        "latency_ms": 4.0,
    }
