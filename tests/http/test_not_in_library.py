"""A question the library does not answer, over the real app: the API's body, the web
page and its stream say the passages are the closest ones, not an answer, and /metrics
counts the outcome and the decision's score.

The relevance scorer is the table fake: every passage scores ``LOW``, under the
default threshold (0.5), unless the question names the retry budget.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from citadel.entrypoints.http import create_app
from citadel.entrypoints.present.labels import NOT_IN_LIBRARY_NOTE
from tests.http.conftest import (
    QUESTION,
    SECRET,
    Library,
    bearer,
    browser,
    csrf_of,
    make_library,
    serving,
    sign_in,
)
from tests.http.test_stream import read_events

LOW = 0.125
OFF_TOPIC = "What did the flux capacitor workers eat for breakfast?"


class QuestionRelevance:
    """High for the module's QUESTION, ``LOW`` for any other: one library serves both."""

    name = "question-relevance/1"

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        return [0.875 if question == QUESTION else LOW for _ in texts]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    lib = make_library(tmp_path_factory.mktemp("abstain"), relevance=QuestionRelevance())
    yield lib
    lib.services.close()


@pytest.fixture(scope="module")
def client(library: Library) -> Iterator[TestClient]:
    with TestClient(create_app(library.services, session_secret=SECRET)) as c:
        yield c


def test_the_api_body_says_not_in_library_with_the_decision_and_the_closest_passages(
    client: TestClient, library: Library
) -> None:
    body = {"search": {"query": OFF_TOPIC}}
    reply = client.post("/v1/answer", json=body, headers=bearer(library, "ada"))
    assert reply.status_code == 200, reply.text
    shown = reply.json()
    assert shown["answer"] is None and shown["generation"] is None
    assert shown["degraded"]["reason"] == "not_in_library"
    assert "closest passages" in shown["degraded"]["detail"]
    assert shown["answerability"] == {
        "score": LOW,
        "threshold": 0.5,
        "scorer": "question-relevance/1",
        "answerable": False,
    }
    assert shown["search"]["results"], "the closest passages are still there"


def test_an_answered_body_carries_the_decision_it_passed(
    client: TestClient, library: Library
) -> None:
    reply = client.post(
        "/v1/answer", json={"search": {"query": QUESTION}}, headers=bearer(library, "ada")
    )
    shown = reply.json()
    assert shown["degraded"] is None and shown["answer"]["segments"]
    assert shown["answerability"]["answerable"] is True
    assert shown["answerability"]["score"] == 0.875


def test_the_openapi_schema_documents_the_decision_and_the_reason(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert "answerability" in schemas["AnswerReply"]["properties"]
    assert set(schemas["AnswerabilityReply"]["properties"]) == {
        "score",
        "threshold",
        "scorer",
        "answerable",
    }
    assert "not_in_library" in schemas["DegradedReason"]["enum"]


def test_the_web_page_labels_the_passages_as_the_closest_ones(library: Library) -> None:
    with browser(create_app(library.services, session_secret=SECRET)) as c:
        sign_in(c, library, "ada")
        token = csrf_of(c.get("/ask").text)
        page = c.post("/ask", data={"question": OFF_TOPIC, "csrf_token": token}).text
    assert 'data-reason="not_in_library"' in page
    assert NOT_IN_LIBRARY_NOTE in page
    assert "Closest passages" in page and "Evidence passages" not in page
    assert '<details class="passage-item">' in page and 'class="footnotes"' not in page


def test_the_web_stream_relabels_the_passages_it_sent_first(library: Library) -> None:
    with serving(create_app(library.services, session_secret=SECRET)) as base:
        with httpx.Client(base_url=base, timeout=30) as c:
            form = c.get("/signin")
            c.post(
                "/signin",
                data={
                    "name": "ada",
                    "token": library.tokens["ada"],
                    "csrf_token": csrf_of(form.text),
                },
            )
            token = csrf_of(c.get("/ask").text)
            cookies = dict(c.cookies)
        fields = {"question": OFF_TOPIC, "csrf_token": token}
        events, _ = read_events(base, "/ask/stream", data=fields, cookies=cookies)
    assert [e.name for e in events] == ["search", "degraded", "done"]
    search, degraded, _ = events
    assert "Evidence passages" in search.data["html"]  # sent before the decision
    assert "Closest passages" in degraded.data["evidence"]
    assert NOT_IN_LIBRARY_NOTE in degraded.data["html"]


def test_metrics_count_not_in_library_and_the_decisions_scores(
    client: TestClient, library: Library
) -> None:
    def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = client.get("/metrics").text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    before = samples()
    assert (("citadel_answers_total", (("outcome", "not_in_library"),))) in before
    client.post(
        "/v1/answer",
        json={"search": {"query": OFF_TOPIC + " Really?"}},
        headers=bearer(library, "ada"),
    )
    after = samples()
    outcome = ("citadel_answers_total", (("outcome", "not_in_library"),))
    assert after[outcome] == before[outcome] + 1
    count = ("citadel_answerability_score_count", ())
    assert after[count] == before.get(count, 0) + 1
    low_bucket = ("citadel_answerability_score_bucket", (("le", "0.2"),))
    assert after[low_bucket] == before.get(low_bucket, 0) + 1
    stage = ("citadel_stage_seconds_count", (("stage", "answerability"),))
    assert after[stage] >= 1


def test_nothing_of_this_reaches_a_library_without_a_scorer(tmp_path: Path) -> None:
    plain = make_library(tmp_path)
    try:
        with TestClient(create_app(plain.services, session_secret=SECRET)) as c:
            reply = c.post(
                "/v1/answer", json={"search": {"query": OFF_TOPIC}}, headers=bearer(plain, "ada")
            )
        assert reply.json()["answerability"] is None
        assert reply.json()["degraded"] is None or (
            reply.json()["degraded"]["reason"] != "not_in_library"
        )
    finally:
        plain.services.close()
