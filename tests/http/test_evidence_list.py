"""The answer page's evidence list over a real library: the passages the answer cites
come first under their footnotes' numbers, marked cited, each linked as its footnote;
the API's results say the same."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from citadel.adapters.generators.scripted import ScriptedGenerator, Step
from citadel.domain.answer import GenerationRequest
from citadel.entrypoints.http import create_app
from tests.http.conftest import QUESTION, SECRET, Library, bearer, browser, make_library, sign_in
from tests.http.test_web import ask

FOOTNOTE = re.compile(r'<li id="fn-(\d+)"[^>]*>(.*?)</li>', re.S)
PASSAGE = re.compile(r'<li id="passage-(\d+)" value="(\d+)"([^>]*)>(.*?)</li>', re.S)
LINK = re.compile(r'class="viewer-link" href="([^"]+)"')
LEAD = re.compile(r'<span class="lead">(.*?)</span>', re.S)


def cite_the_restarts(request: GenerationRequest) -> object:
    """Quote the passage on rolling restarts: for this question not the best search
    result (that is the one on retry budgets)."""
    (restarts,) = [e for e in request.evidence if "flux capacitor" in e.passage]
    return {"segments": [{"text": restarts.passage, "evidence_ids": [restarts.ref]}]}


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Library, TestClient]]:
    generator = ScriptedGenerator([cite_the_restarts], quotes=True)
    library = make_library(tmp_path_factory.mktemp("evidence"), generator=generator)
    with browser(create_app(library.services, session_secret=SECRET)) as client:
        yield library, client
    library.services.close()


def test_cited_passages_are_marked_numbered_as_footnotes_and_linked(
    shelf: tuple[Library, TestClient],
) -> None:
    library, c = shelf
    sign_in(c, library, "ada")
    page = ask(c, QUESTION)
    footnotes = {int(n): LINK.search(body) for n, body in FOOTNOTE.findall(page)}
    assert list(footnotes) == [1]
    passages = [(int(n), int(v), attrs, body) for n, v, attrs, body in PASSAGE.findall(page)]
    assert [n for n, *_ in passages] == [1, 2, 3]
    assert all(n == v for n, v, *_ in passages), "each <li> shows its own number"
    cited = [n for n, _, attrs, _ in passages if 'data-cited="true"' in attrs]
    assert cited == list(footnotes), "exactly the footnotes' passages are marked cited"
    first, *further = passages
    assert 'class="cited-mark"' in first[3] and 'href="#fn-1"' in first[3]
    assert all('class="cited-mark"' not in body for *_, body in further)
    # The cited passage opens where its footnote does: the same route, resolved on the click.
    note = footnotes[1]
    link = LINK.search(first[3])
    assert note is not None and link is not None and link.group(1) == note.group(1)
    # It is not the best search result: that one is listed after it, uncited.
    leads = [html.unescape(LEAD.search(body).group(1)) for *_, body in passages]  # type: ignore[union-attr]
    assert "flux capacitor" in leads[0] and "retry budget" in leads[1]
    for *_, body in passages:
        route = LINK.search(body)
        assert route is not None and route.group(1).startswith("/answers/")
        opened = c.get(html.unescape(route.group(1)), follow_redirects=False)
        assert opened.status_code == 303
        assert opened.headers["location"].startswith("/v1/sources/")
    # An uncited passage's viewer marks that passage.
    uncited = LINK.search(further[0][3])
    assert uncited is not None
    viewer = c.get(html.unescape(uncited.group(1)))
    assert viewer.status_code == 200
    marked = re.search(r'<mark id="cited">(.*?)</mark>', viewer.text, re.S)
    assert marked is not None and "retry budget" in marked.group(1)


def test_the_api_results_say_which_passage_the_answer_cites(
    shelf: tuple[Library, TestClient],
) -> None:
    library, c = shelf
    reply = c.post(
        "/v1/answer",
        json={"search": {"query": QUESTION}},
        headers=bearer(library, "ada"),
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    (segment,) = body["answer"]["segments"]
    (citation,) = segment["citations"]
    rows = body["search"]["results"]
    assert [r["cited"] for r in rows] == [r["evidence_id"] == citation["evidence_id"] for r in rows]
    (cited,) = [r for r in rows if r["cited"]]
    assert cited["footnote"] == cited["number"] == 1
    assert rows.index(cited) > 0, "the answer cites a result below the first"
    assert [r["number"] for r in rows if not r["cited"]] == [2, 3]
    assert all(r["footnote"] is None for r in rows if not r["cited"])


def test_the_schema_publishes_the_fields(shelf: tuple[Library, TestClient]) -> None:
    _, c = shelf
    schemas = c.get("/openapi.json").json()["components"]["schemas"]
    listed = schemas["AnswerEvidenceReply"]["properties"]
    assert {"number", "cited", "footnote"} <= set(listed)
    assert {"evidence_id", "passage", "score"} <= set(listed)
    assert "cited" not in schemas["EvidenceReply"]["properties"], "/v1/search is unchanged"


def test_without_an_answer_the_passages_still_open_in_search_order(tmp_path: Path) -> None:
    failing = ScriptedGenerator([Step(error=RuntimeError("provider down"))])
    library = make_library(tmp_path, generator=failing)
    try:
        with browser(create_app(library.services, session_secret=SECRET)) as c:
            sign_in(c, library, "ada")
            page = ask(c, QUESTION)
            assert 'data-reason="generator_error"' in page
            passages = PASSAGE.findall(page)
            assert [int(n) for n, *_ in passages] == [1, 2, 3]
            assert not any('data-cited="true"' in attrs for _, _, attrs, _ in passages)
            assert 'class="further"' not in page, "nothing cited: one list, in search order"
            for *_, body in passages:
                route = LINK.search(body)
                assert route is not None
                opened = c.get(html.unescape(route.group(1)), follow_redirects=False)
                assert opened.status_code == 303
                assert opened.headers["location"].startswith("/v1/sources/")
    finally:
        library.services.close()
