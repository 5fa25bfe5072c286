"""The figures of `eval answers`, computed from hand-made answer results."""

from __future__ import annotations

from dataclasses import replace

import pytest

from citadel.app.answer_evaluation import (
    QaQuestion,
    QuestionOutcome,
    figures,
    on_section,
    parse_qa_lines,
    report_of,
    score_answer,
)
from citadel.app.errors import InvalidRequest
from citadel.domain.answer import (
    AnswerResult,
    AnswerSegment,
    Degraded,
    DegradedReason,
    GroundedAnswer,
    attribute,
)
from citadel.domain.manifest import ContextEvidence, freeze_manifest
from citadel.domain.search import Evidence, SearchResult
from tests.builders import make_evidence

GOLD = "Failure Handling / Retry Budgets"


def evidence(evidence_id: str, *path: str, source_id: str = "book") -> Evidence:
    return replace(
        make_evidence(evidence_id, source_id=source_id, chapter=path[0], section=path[-1]),
        section_path=path,
    )


def answered(results: list[Evidence], cited: list[list[int]]) -> AnswerResult:
    """An answer whose segments cite results by index (the first len(results) form E1..)."""
    manifest = freeze_manifest([ContextEvidence(e) for e in results])
    segments = [
        AnswerSegment(f"segment {i}", tuple(f"E{j + 1}" for j in refs))
        for i, refs in enumerate(cited)
    ]
    return AnswerResult(
        answer_id="a",
        request_id="r",
        search=SearchResult("q", tuple(results)),
        answer=GroundedAnswer("extractive", attribute(segments, manifest)),
        degraded=None,
        manifest=manifest,
    )


def question(book: str = "pdf/book.pdf", qid: str = "q") -> QaQuestion:
    return QaQuestion(id=qid, question="why cap retries?", book=book, section=GOLD)


def test_a_section_matches_itself_and_what_lies_under_it_only() -> None:
    assert on_section(("Failure Handling", "Retry Budgets"), GOLD)
    assert on_section(("Failure Handling", "Retry Budgets", "Jitter"), GOLD)
    assert not on_section(("Failure Handling", "Retry Budgets extended"), GOLD)
    assert not on_section(("Failure Handling",), GOLD)
    assert not on_section(("Other", "Failure Handling", "Retry Budgets"), GOLD)


def test_one_answer_is_scored_by_rank_and_by_its_citations() -> None:
    results = [
        evidence("e1", "Failure Handling", "Timeouts"),
        evidence("e2", "Failure Handling", "Retry Budgets", source_id="another-book"),
        evidence("e3", "Failure Handling", "Retry Budgets", "Jitter"),
        evidence("e4", "Failure Handling", "Retry Budgets"),
    ]
    # Three segments: E3 (gold), E1 and E3 (one of two), E2 (same section, other book).
    result = answered(results, [[2], [0, 2], [1]])
    outcome = score_answer(question(), "book", result, latency_ms=12.5)
    assert outcome == QuestionOutcome(
        id="q",
        book="pdf/book.pdf",
        first_hit=3,
        citations=4,
        on_gold=2,
        degraded=None,
        latency_ms=12.5,
    )


def test_a_degraded_answer_cites_nothing_but_its_search_still_counts() -> None:
    results = (evidence("e1", "Failure Handling", "Retry Budgets"),)
    result = AnswerResult(
        answer_id="a",
        request_id="r",
        search=SearchResult("q", results),
        answer=None,
        degraded=Degraded(DegradedReason.INVALID_OUTPUT, "no"),
    )
    outcome = score_answer(question(), "book", result, latency_ms=3.0)
    assert (outcome.first_hit, outcome.citations, outcome.on_gold, outcome.degraded) == (
        1,
        0,
        0,
        "invalid_output",
    )


def outcome(
    qid: str,
    first_hit: int | None,
    citations: int,
    on_gold: int,
    latency_ms: float,
    *,
    book: str = "a",
    degraded: str | None = None,
) -> QuestionOutcome:
    return QuestionOutcome(qid, book, first_hit, citations, on_gold, degraded, latency_ms)


def test_the_figures_over_hand_made_outcomes() -> None:
    outcomes = [
        outcome("1", 1, 3, 3, 10.0),
        outcome("2", 2, 3, 1, 20.0),
        outcome("3", 5, 2, 0, 30.0, book="b"),
        outcome("4", 11, 3, 0, 40.0, book="b"),
        outcome("5", None, 0, 0, 50.0, book="b", degraded="no_evidence"),
    ]
    f = figures(outcomes)
    assert (f.questions, f.answered, f.citations) == (5, 4, 11)
    assert f.hit_at_1 == pytest.approx(1 / 5)
    assert f.hit_at_5 == pytest.approx(3 / 5)
    # Rank 11 is past MRR@10's depth.
    assert f.mrr_at_10 == pytest.approx((1 + 1 / 2 + 1 / 5) / 5)
    assert f.answers_citing_gold == pytest.approx(2 / 5)
    assert f.citations_on_gold == pytest.approx(4 / 11)
    assert f.degraded == {"no_evidence": 1}
    assert f.support == {}
    assert (f.latency_ms_p50, f.latency_ms_p95) == (30.0, 40.0)

    report = report_of(outcomes, books=2, ingested=1, ingest_seconds=1.5)
    assert list(report.per_book) == ["a", "b"]
    assert report.per_book["a"].hit_at_1 == pytest.approx(1 / 2)
    assert report.per_book["a"].citations_on_gold == pytest.approx(4 / 6)
    assert report.per_book["b"].answers_citing_gold == 0.0
    assert report.per_book["b"].degraded == {"no_evidence": 1}
    assert report.overall == f


def test_support_labels_are_counted_when_outcomes_carry_them() -> None:
    labelled = replace(outcome("1", 1, 2, 2, 1.0), support=("verbatim", "partial"))
    assert figures([labelled, outcome("2", 1, 1, 1, 1.0)]).support == {
        "partial": 1,
        "verbatim": 1,
    }


def test_no_outcomes_give_zero_figures() -> None:
    f = figures([])
    assert (f.questions, f.hit_at_5, f.mrr_at_10, f.citations_on_gold, f.latency_ms_p95) == (
        0,
        0.0,
        0.0,
        0.0,
        0.0,
    )


def test_the_qa_set_is_parsed_and_a_bad_line_is_named() -> None:
    good = '{"id": "q1", "question": "Why?", "book": "a.md", "section": "A / B"}'
    assert parse_qa_lines([good, ""]) == (QaQuestion("q1", "Why?", "a.md", "A / B"),)
    with pytest.raises(InvalidRequest, match="line 2: not JSON"):
        parse_qa_lines([good, "{"])
    with pytest.raises(InvalidRequest, match="line 1: needs non-empty strings"):
        parse_qa_lines(['{"id": "q1", "question": "Why?", "book": "a.md"}'])
    with pytest.raises(InvalidRequest, match="line 2: id 'q1' is repeated"):
        parse_qa_lines([good, good])
    with pytest.raises(InvalidRequest, match="no questions"):
        parse_qa_lines([])
