"""``POST /v1/answer/stream`` and the web UI's ``POST /ask/stream`` over a real server.

A uvicorn server on loopback, read with httpx as the events arrive: the
search comes first (measured: before a slow generator has finished), then the
answer whole — the same body ``/v1/answer`` returns — or ``degraded`` with the
reason, then ``done``. Model text that fails validation is never sent.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.scripted import ScriptedGenerator, Step
from citadel.app.errors import AppError
from citadel.config import HttpSettings
from citadel.domain.answer import Candidate, GenerationRequest
from citadel.domain.limits import Limits
from citadel.entrypoints.http import create_app
from tests.http.conftest import (
    QUESTION,
    SECRET,
    Library,
    bearer,
    csrf_of,
    make_library,
    serving,
)

DELAY_S = 0.8


class Delayed:
    """The extractive generator, after a pause: time for the search to be seen first."""

    name = "extractive"
    quotes = True

    def __init__(self, delay_s: float) -> None:
        self._inner = ExtractiveGenerator(Limits())
        self._delay_s = delay_s
        self.model = self._inner.model
        self.prompt_version = self._inner.prompt_version

    async def generate(self, request: GenerationRequest) -> Candidate:
        await asyncio.sleep(self._delay_s)
        return await self._inner.generate(request)


class Broken:
    name = "broken"
    model = "none"
    prompt_version = "0"
    quotes = False

    async def generate(self, request: GenerationRequest) -> Candidate:
        raise AppError("provider down")


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    at: float
    """Seconds from sending the request to this event's arrival."""


def read_events(base: str, path: str, **kwargs: Any) -> tuple[list[Event], bytes]:
    """The events of one streamed request as they arrive, and the raw bytes."""
    events: list[Event] = []
    raw = b""
    started = time.perf_counter()
    with httpx.stream("POST", base + path, timeout=30, **kwargs) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        assert reply.headers["cache-control"] == "no-store"
        assert "script-src 'self'" in reply.headers["content-security-policy"]
        buffer = b""
        for chunk in reply.iter_bytes():
            raw += chunk
            buffer += chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                lines = block.decode().split("\n")
                names = [line[7:] for line in lines if line.startswith("event: ")]
                data = "".join(line[6:] for line in lines if line.startswith("data: "))
                if names:
                    events.append(Event(names[0], json.loads(data), time.perf_counter() - started))
    return events, raw


def found(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An answer's search results as the search event has them: without their place in
    the answer's evidence list."""
    return [
        {k: v for k, v in r.items() if k not in {"number", "cited", "footnote"}} for r in results
    ]


def _stable(body: dict[str, Any]) -> dict[str, Any]:
    """An answer body without what differs between two requests for the same question."""
    out = {k: v for k, v in body.items() if k not in {"answer_id", "request_id", "generation"}}
    text = json.dumps(out, sort_keys=True)
    return dict(json.loads(re.sub(r"token=[A-Za-z0-9_.\-]+", "token=T", text)))


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Library]]:
    library = make_library(tmp_path_factory.mktemp("stream"), generator=Delayed(DELAY_S))
    with serving(create_app(library.services, session_secret=SECRET)) as base:
        yield base, library
    library.services.close()


def test_the_search_arrives_first_then_the_answer_whole_then_done(
    slow: tuple[str, Library],
) -> None:
    base, library = slow
    body = {"search": {"query": QUESTION, "limit": 20}}
    events, _ = read_events(base, "/v1/answer/stream", json=body, headers=bearer(library, "ada"))
    assert [e.name for e in events] == ["search", "answer", "done"]
    search, answer, done = events
    # The passages were on the wire while the generator was still in its pause (which
    # starts only after search): the answer came a whole pause later.
    assert answer.at - search.at >= DELAY_S * 0.75, (search.at, answer.at)
    assert search.data["results"] and "retry budget" in search.data["results"][0]["passage"]
    # The answer's results are the same passages, each told whether the answer cites it.
    assert search.data["results"] == found(answer.data["search"]["results"])
    assert any(r["cited"] for r in answer.data["search"]["results"])
    assert done.data == {"answer_id": answer.data["answer_id"]}
    # The answer event is /v1/answer's body for the same question.
    plain = httpx.post(base + "/v1/answer", json=body, headers=bearer(library, "ada"), timeout=30)
    assert plain.status_code == 200
    assert answer.data["answer"]["segments"], "the extractive writer answers this"
    assert _stable(answer.data) == _stable(plain.json())


def test_the_web_stream_sends_the_pages_own_fragments_and_needs_the_csrf_token(
    slow: tuple[str, Library],
) -> None:
    base, library = slow
    with httpx.Client(base_url=base, timeout=30) as c:
        form = c.get("/signin")
        c.post(
            "/signin",
            data={"name": "ada", "token": library.tokens["ada"], "csrf_token": csrf_of(form.text)},
        )
        token = csrf_of(c.get("/ask").text)
        refused = c.post("/ask/stream", data={"question": QUESTION, "csrf_token": "forged"})
        assert refused.status_code == 403
        cookies = dict(c.cookies)
    # Another question than the API test's: an answer cached from that would not pause.
    question = "When does a circuit breaker open?"
    fields = {"question": question, "csrf_token": token}
    events, _ = read_events(base, "/ask/stream", data=fields, cookies=cookies)
    assert [e.name for e in events] == ["search", "answer", "done"]
    search, answer, _ = events
    assert answer.at - search.at >= DELAY_S * 0.75, (search.at, answer.at)
    assert '<details class="passage-item">' in search.data["html"]
    assert search.data["permalink"] == "/ask?" + urlencode({"q": question})
    assert 'class="footnotes"' in answer.data["html"]
    assert 'href="/answers/' in answer.data["html"]
    # The passages again, now numbered as the footnotes, the cited ones marked.
    assert 'data-cited="true"' not in search.data["html"]
    assert (
        '<li id="passage-1" value="1" class="cited" data-cited="true">' in answer.data["evidence"]
    )


def test_a_failing_generator_streams_the_search_then_degraded(tmp_path: Path) -> None:
    library = make_library(tmp_path, generator=Broken())
    try:
        with serving(create_app(library.services, session_secret=SECRET)) as base:
            body = {"search": {"query": QUESTION}}
            events, _ = read_events(
                base, "/v1/answer/stream", json=body, headers=bearer(library, "ada")
            )
            plain = httpx.post(base + "/v1/answer", json=body, headers=bearer(library, "ada"))
        assert [e.name for e in events] == ["search", "degraded", "done"]
        degraded = events[1].data
        assert degraded["answer"] is None
        assert degraded["degraded"]["reason"] == "generator_error"
        assert found(degraded["search"]["results"]) == events[0].data["results"]
        assert not any(r["cited"] for r in degraded["search"]["results"])
        assert _stable(degraded) == _stable(plain.json())
    finally:
        library.services.close()


def test_model_text_that_fails_validation_is_never_sent(tmp_path: Path) -> None:
    invented = {"segments": [{"text": "UNPROVEN MODEL CLAIM", "evidence_ids": ["E99"]}]}
    library = make_library(tmp_path, generator=ScriptedGenerator([Step(invented)]))
    try:
        with serving(create_app(library.services, session_secret=SECRET)) as base:
            events, raw = read_events(
                base,
                "/v1/answer/stream",
                json={"search": {"query": QUESTION}},
                headers=bearer(library, "ada"),
            )
        assert [e.name for e in events] == ["search", "degraded", "done"]
        assert events[1].data["degraded"]["reason"] == "invalid_output"
        assert b"UNPROVEN MODEL CLAIM" not in raw
    finally:
        library.services.close()


def test_the_requests_deadline_ends_the_stream_with_an_error(tmp_path: Path) -> None:
    library = make_library(
        tmp_path,
        generator=ScriptedGenerator([Step(delay_s=5.0)]),
        http=HttpSettings(rate_per_minute=10_000, deadline_s=0.5),
    )
    try:
        with serving(create_app(library.services, session_secret=SECRET)) as base:
            events, _ = read_events(
                base,
                "/v1/answer/stream",
                json={"search": {"query": QUESTION}},
                headers=bearer(library, "ada"),
            )
        assert [e.name for e in events] == ["search", "error", "done"]
        assert events[1].data["status"] == 504
        assert events[1].data["code"] == "deadline_exceeded"
        assert events[2].data == {"answer_id": None}
    finally:
        library.services.close()


def test_a_bad_request_is_refused_before_any_event(slow: tuple[str, Library]) -> None:
    base, library = slow
    body = {"search": {"query": QUESTION, "filters": {"year_min": 2020, "year_max": 2000}}}
    reply = httpx.post(base + "/v1/answer/stream", json=body, headers=bearer(library, "ada"))
    assert reply.status_code == 422 and "year_min is after year_max" in reply.text
    anonymous = httpx.post(base + "/v1/answer/stream", json=body)
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"].startswith("application/json")
