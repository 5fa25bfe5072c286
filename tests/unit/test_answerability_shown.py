"""Wherever an answer is shown, the answerability decision and ``not_in_library`` go with
it: ``ask --json`` (the API's and MCP's shape), the terminal's words, MCP's output and
Markdown, the web UI's label of the passages."""

from __future__ import annotations

from citadel.domain.answer import (
    Answerability,
    AnswerResult,
    Degraded,
    DegradedReason,
    GroundedAnswer,
)
from citadel.domain.search import SearchResult
from citadel.entrypoints.cli.text import answer_text
from citadel.entrypoints.http.pages import fragment
from citadel.entrypoints.http.presenters import answer_view
from citadel.entrypoints.mcp.markdown import ask_markdown
from citadel.entrypoints.mcp.presenting import ask_output
from citadel.entrypoints.present.labels import NOT_IN_LIBRARY_NOTE
from citadel.entrypoints.present.shapes import answer_json
from tests.builders import make_evidence

DECIDED = Answerability(0.123456, 0.5, "relevance-minilm/1")


def not_in_library(answerability: Answerability | None = DECIDED) -> AnswerResult:
    return AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("q", (make_evidence(passage="The closest passage there is."),)),
        answer=None,
        degraded=Degraded(DegradedReason.NOT_IN_LIBRARY, "the closest passages are shown"),
        answerability=answerability,
    )


def test_the_json_shape_carries_the_decision_and_the_reason() -> None:
    shown = answer_json(not_in_library())
    assert shown["answer"] is None
    assert shown["degraded"] == {
        "reason": "not_in_library",
        "detail": "the closest passages are shown",
    }
    assert shown["answerability"] == {
        "score": 0.1235,
        "threshold": 0.5,
        "scorer": "relevance-minilm/1",
        "answerable": False,
    }
    assert shown["search"]["results"][0]["passage"] == "The closest passage there is."
    answered = AnswerResult(
        "a2",
        "r2",
        SearchResult("q"),
        GroundedAnswer("extractive", ()),
        None,
        answerability=Answerability(0.9, 0.5, "s"),
    )
    assert answer_json(answered)["answerability"]["answerable"] is True
    assert answer_json(not_in_library(None))["answerability"] is None


def test_the_terminal_says_the_passages_are_the_closest_not_an_answer() -> None:
    text = answer_text(not_in_library())
    assert text.startswith("No answer (not_in_library). " + NOT_IN_LIBRARY_NOTE)
    assert "does not seem to answer" in text
    assert "Closest passages (not an answer):" in text
    assert "The closest passage there is." in text
    assert "Search results:" not in text
    other = AnswerResult(
        "a", "r", SearchResult("q"), None, Degraded(DegradedReason.GENERATOR_ERROR, "down")
    )
    assert "Search results:" in answer_text(other) and NOT_IN_LIBRARY_NOTE not in answer_text(other)


def test_mcp_outputs_the_decision_and_says_what_the_passages_are() -> None:
    output = ask_output(not_in_library())
    assert output.degraded is not None and output.degraded.reason == "not_in_library"
    assert output.answerability is not None
    assert (output.answerability.score, output.answerability.answerable) == (0.1235, False)
    assert output.answerability.scorer == "relevance-minilm/1"
    assert output.results and output.answer is None
    text = ask_markdown(output)
    assert NOT_IN_LIBRARY_NOTE in text and "Closest passages:" in text
    assert ask_output(not_in_library(None)).answerability is None


def test_the_web_ui_labels_the_passages_as_the_closest_ones() -> None:
    view = answer_view(not_in_library())
    assert view.closest and view.degraded == NOT_IN_LIBRARY_NOTE
    assert view.degraded_code == "not_in_library"
    closest = fragment("_evidence.html", passages=view.passages, closest=view.closest)
    assert "Closest passages" in closest and "not an answer" in closest
    assert 'class="evidence closest"' in closest
    other = AnswerResult(
        "a", "r", SearchResult("q"), None, Degraded(DegradedReason.GENERATOR_ERROR, "down")
    )
    plain = answer_view(other)
    assert not plain.closest
    evidence = fragment("_evidence.html", passages=plain.passages, closest=plain.closest)
    assert "Evidence passages" in evidence and "Closest" not in evidence
