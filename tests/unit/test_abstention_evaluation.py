"""The abstention figures of `eval answers --unanswerable`: the loader, the arithmetic
over hand-made outcomes, and a run whose answers a fake relevance decides."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.app.abstention_evaluation import (
    DEFAULT_THRESHOLDS,
    UnanswerableOutcome,
    UnanswerableQuestion,
    abstention_report,
    decisions,
    parse_thresholds,
    parse_unanswerable_lines,
    threshold_rows,
)
from citadel.app.answer import AnswerRequest
from citadel.app.answer_evaluation import (
    AnswerEvaluation,
    AnswerEvaluationReport,
    QaQuestion,
    QuestionOutcome,
)
from citadel.app.errors import InvalidRequest
from citadel.app.ingest import IngestService
from citadel.domain.answer import (
    Answerability,
    AnswerResult,
    Degraded,
    DegradedReason,
    GroundedAnswer,
)
from citadel.domain.search import SearchResult
from citadel.domain.users import Actor
from tests.builders import operator
from tests.fakes.relevance import TableRelevance

ROOT = Path(__file__).resolve().parents[2]
SCORER = "table-relevance/1"
FAR = '{"id": "u1", "kind": "far", "topic": "geo", "near_book": null, "question": "Capital?"}'
NEAR = (
    '{"id": "u2", "kind": "near", "topic": "pandas", "near_book": "r-intro",'
    ' "question": "pandas merge?", "checked": []}'
)


def test_the_unanswerable_set_is_parsed_blank_lines_skipped() -> None:
    assert parse_unanswerable_lines([FAR, "  ", NEAR]) == (
        UnanswerableQuestion("u1", "far", "Capital?", "geo", None),
        UnanswerableQuestion("u2", "near", "pandas merge?", "pandas", "r-intro"),
    )
    # Only id, kind and question are needed.
    assert parse_unanswerable_lines(['{"id": "u3", "kind": "far", "question": "Why?"}']) == (
        UnanswerableQuestion("u3", "far", "Why?"),
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "line 2: not JSON"),
        ("[1]", "line 2: not a JSON object"),
        ('{"id": "u3", "question": "Why?"}', "line 2: missing kind"),
        ('{"kind": "far"}', "line 2: missing id, question"),
        ('{"id": "u3", "kind": "middling", "question": "Why?"}', "line 2: kind 'middling'"),
        ('{"id": "", "kind": "far", "question": "Why?"}', "line 2: id must be a non-empty"),
        ('{"id": "u3", "kind": "far", "question": 7}', "line 2: question must be a non-empty"),
        ('{"id": "u3", "kind": "far", "question": "Why?", "topic": 1}', "line 2: topic"),
        ('{"id": "u3", "kind": "near", "question": "Why?", "near_book": 2}', "line 2: near_book"),
        (FAR, "line 2: id 'u1' is repeated"),
    ],
)
def test_a_bad_line_of_the_unanswerable_set_is_named(line: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        parse_unanswerable_lines([FAR, line])


def test_an_empty_unanswerable_set_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="no questions"):
        parse_unanswerable_lines(["", " "])


def test_the_shipped_unanswerable_set_loads_with_both_kinds() -> None:
    path = ROOT / "data" / "answerability" / "unanswerable.jsonl"
    questions = parse_unanswerable_lines(path.read_text(encoding="utf-8").splitlines())
    kinds = [q.kind for q in questions]
    assert (kinds.count("far"), kinds.count("near")) == (216, 461)
    assert all(q.near_book for q in questions if q.kind == "near")


def test_thresholds_are_parsed_sorted_once_each_and_checked() -> None:
    assert parse_thresholds("0.5, 0.2,0.5,,1") == (0.2, 0.5, 1.0)
    assert DEFAULT_THRESHOLDS == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    for bad, message in [("0.2,x", "'x' is not a number"), ("1.5", "not in"), ("nan", "not in")]:
        with pytest.raises(InvalidRequest, match=message):
            parse_thresholds(bad)
    with pytest.raises(InvalidRequest, match="no thresholds"):
        parse_thresholds(" , ")


def scored(score: float) -> Answerability:
    return Answerability(score=score, threshold=0.5, scorer=SCORER)


def answerable(
    qid: str, book: str, degraded: str | None, score: float | None
) -> tuple[str, QuestionOutcome]:
    outcome = QuestionOutcome(
        qid,
        book,
        None,
        0,
        0,
        degraded,
        1.0,
        answerability=scored(score) if score is not None else None,
    )
    return book, outcome


def unanswerable(
    qid: str, kind: str, degraded: str | None, score: float | None, near: str | None = None
) -> UnanswerableOutcome:
    return UnanswerableOutcome(
        qid, kind, near, degraded, scored(score) if score is not None else None, 2.0
    )


ANSWERABLE = [
    answerable("a1", "book-a", None, 0.9),
    answerable("a2", "book-a", None, 0.6),
    answerable("b1", "book-b", "not_in_library", 0.4),
    answerable("b2", "book-b", "no_evidence", None),
]
UNANSWERABLE = [
    unanswerable("u1", "far", "not_in_library", 0.1),
    unanswerable("u2", "far", None, 0.5),
    unanswerable("u3", "far", "no_evidence", None),
    unanswerable("u4", "near", None, 0.7, "r-intro"),
    unanswerable("u5", "near", "not_in_library", 0.2, "git-manual"),
    unanswerable("u6", "near", "generator_error", 0.8, "r-intro"),
]


def test_decisions_count_answered_abstained_and_other_degraded_apart() -> None:
    d = decisions([o for o in UNANSWERABLE if o.kind == "near"])
    assert (d.questions, d.answered, d.abstained, dict(d.degraded)) == (
        3,
        1,
        1,
        {"generator_error": 1},
    )
    assert d.answered_share == pytest.approx(1 / 3)
    assert d.abstained_share == pytest.approx(1 / 3)
    empty = decisions([])
    assert (empty.questions, empty.answered_share, empty.abstained_share) == (0, 0.0, 0.0)


def test_the_report_over_hand_made_outcomes() -> None:
    report = abstention_report(ANSWERABLE, UNANSWERABLE, thresholds=(0.5, 0.95))
    assert list(report.answerable_per_book) == ["book-a", "book-b"]
    book_b = report.answerable_per_book["book-b"]
    assert (book_b.answered, book_b.abstained, dict(book_b.degraded)) == (
        0,
        1,
        {"no_evidence": 1},
    )
    assert report.answerable_per_book["book-a"].answered_share == 1.0
    assert report.answerable.answered_share == 0.5
    assert report.answerable.abstained_share == 0.25
    far = report.unanswerable_per_kind["far"]
    assert (far.questions, far.abstained, far.answered, dict(far.degraded)) == (
        3,
        1,
        1,
        {"no_evidence": 1},
    )
    assert report.unanswerable.abstained_share == pytest.approx(2 / 6)
    assert list(report.unanswerable_per_near_book) == ["r-intro", "git-manual"]
    assert report.unanswerable_per_near_book["git-manual"].abstained == 1
    assert report.scored == {"answerable": 3, "far": 2, "near": 3}
    assert report.decided_by == ((SCORER, 0.5),)
    # Answerable 0.9, 0.6, 0.4 against far 0.1, 0.5 (5 of 6 pairs ordered), near 0.7,
    # 0.2, 0.8 (5 of 9), all of them (10 of 15).
    assert report.auroc == {
        "far": pytest.approx(5 / 6),
        "near": pytest.approx(5 / 9),
        "all": pytest.approx(10 / 15),
    }
    at_half, at_top = report.thresholds
    assert at_half.threshold == 0.5
    assert at_half.answerable_answered == pytest.approx(2 / 3)
    # A score equal to the threshold goes ahead (0.5 is not abstained).
    assert at_half.abstained == {
        "far": 0.5,
        "near": pytest.approx(1 / 3),
        "all": pytest.approx(2 / 5),
    }
    assert (at_top.answerable_answered, at_top.abstained["all"]) == (0.0, 1.0)
    assert [o.id for o in report.outcomes] == [o.id for o in UNANSWERABLE]


def test_without_scores_there_is_no_auroc_and_no_threshold_row() -> None:
    report = abstention_report(
        [answerable("a1", "book-a", None, None)], [unanswerable("u1", "far", None, None)]
    )
    assert report.auroc == {"far": None, "near": None, "all": None}
    assert report.thresholds == ()
    assert report.decided_by == ()
    assert report.unanswerable.answered == 1


def test_threshold_rows_give_zero_for_an_empty_group() -> None:
    (row,) = threshold_rows([0.3], {"far": [], "all": [0.2]}, [0.25])
    assert (row.answerable_answered, row.abstained) == (1.0, {"far": 0.0, "all": 1.0})


# -- a run through the use case, answers decided by a fake relevance -------------------

BOOK = "# Field Notes\n\n## Retries\n\nA retry policy caps attempts.\n"
PASSAGE = "A retry policy caps attempts so transient failures stay bounded."


class RelevanceAnswering:
    """Answers when the fake relevance scores the one passage at the threshold or above,
    else abstains with ``not_in_library``, as the answer use case's decision does."""

    def __init__(self, relevance: TableRelevance, threshold: float = 0.5) -> None:
        self._relevance = relevance
        self._threshold = threshold

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> AnswerResult:
        question = request.search.query
        (score,) = self._relevance.score(question, [PASSAGE])
        decision = Answerability(score, self._threshold, self._relevance.name)
        go_ahead = decision.answerable
        return AnswerResult(
            answer_id=f"a-{question}",
            request_id="r",
            search=SearchResult(question, ()),
            answer=GroundedAnswer("fake", ()) if go_ahead else None,
            degraded=None
            if go_ahead
            else Degraded(DegradedReason.NOT_IN_LIBRARY, "no passage answers"),
            answerability=decision,
        )


def evaluate(
    tmp_path: Path, unanswerable: tuple[UnanswerableQuestion, ...]
) -> AnswerEvaluationReport:
    book = tmp_path / "notes.md"
    book.write_text(BOOK, encoding="utf-8")
    files = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20)
    questions = (
        QaQuestion("q1", "why cap retry attempts", "notes.md", "Field Notes / Retries"),
        QaQuestion("q2", "what is a retry policy", "notes.md", "Field Notes / Retries"),
    )
    evaluation = AnswerEvaluation(
        IngestService(InMemoryLibrary(), FixedClock()), RelevanceAnswering(TableRelevance())
    )
    return asyncio.run(
        evaluation.run(
            questions,
            {"notes.md": files.open(book)},
            operator(),
            unanswerable=unanswerable,
            thresholds=(0.3, 0.9),
        )
    )


# The fake scores the passage by the share of the question's terms it holds.
UNANSWERED = (
    UnanswerableQuestion("u1", "far", "What is the capital of Australia?"),  # 0
    UnanswerableQuestion("u2", "near", "set a retry policy in pandas read_csv", "", "r"),  # 1/3
    UnanswerableQuestion("u3", "near", "what retry policy caps pandas attempts", "", "r"),  # 4/5
)


def test_a_run_answers_the_unanswerable_questions_too_and_reports_abstention(
    tmp_path: Path,
) -> None:
    report = evaluate(tmp_path, UNANSWERED)
    assert report.abstention is not None
    abstention = report.abstention
    assert report.overall.answered == 2
    assert abstention.answerable_per_book["notes.md"].answered_share == 1.0
    assert [(o.id, o.degraded) for o in abstention.outcomes] == [
        ("u1", "not_in_library"),
        ("u2", "not_in_library"),
        ("u3", None),
    ]
    assert abstention.unanswerable_per_kind["far"].abstained_share == 1.0
    assert abstention.unanswerable_per_kind["near"].abstained_share == 0.5
    assert abstention.unanswerable_per_near_book["r"].answered == 1
    assert abstention.scored == {"answerable": 2, "far": 1, "near": 2}
    assert abstention.decided_by == ((SCORER, 0.5),)
    assert abstention.auroc == {"far": 1.0, "near": 1.0, "all": 1.0}
    low, high = abstention.thresholds
    assert (low.answerable_answered, low.abstained) == (
        1.0,
        {"far": 1.0, "near": 0.0, "all": pytest.approx(1 / 3)},
    )
    assert high.abstained == {"far": 1.0, "near": 1.0, "all": 1.0}
    # Each answerable question's score is kept on its outcome.
    assert [o.answerability.score for o in report.outcomes if o.answerability] == [1.0, 1.0]


def test_without_unanswerable_questions_there_is_no_abstention_report(tmp_path: Path) -> None:
    assert evaluate(tmp_path, ()).abstention is None


def test_an_id_in_both_sets_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="in both sets: q1"):
        evaluate(tmp_path, (UnanswerableQuestion("q1", "far", "Capital?"),))
