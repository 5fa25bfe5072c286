"""/metrics scraped from the real app: HTTP requests by route template, ingest by format
and outcome, search by mode, the process' own series; no label value from a request."""

from __future__ import annotations

import io
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from starlette.types import Receive, Scope, Send

from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.mounting import mount
from tests.http.conftest import QUESTION, SECRET, Library, bearer

QUERY_WORD = "quokkaroo"
"""A word in the search query: it must not appear in any label."""


def scrape(client: TestClient) -> list[Sample]:
    reply = client.get("/metrics")
    assert reply.status_code == 200
    return [s for family in text_string_to_metric_families(reply.text) for s in family.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float:
    """The one sample named ``name`` with exactly ``labels`` (0 when there is none)."""
    found = [s.value for s in samples if s.name == name and s.labels == labels]
    assert len(found) <= 1, found
    return found[0] if found else 0.0


def requests(samples: list[Sample], route: str, method: str, status: int) -> float:
    labels = {"route": route, "method": method, "status": str(status)}
    return value(samples, "citadel_http_requests_total", **labels)


class Delta:
    """What changed between two scrapes (the module's app is shared by its tests)."""

    def __init__(self, before: list[Sample], after: list[Sample]) -> None:
        self.before, self.after = before, after

    def __call__(self, name: str, **labels: str) -> float:
        return value(self.after, name, **labels) - value(self.before, name, **labels)

    def requests(self, route: str, method: str, status: int) -> float:
        return requests(self.after, route, method, status) - requests(
            self.before, route, method, status
        )


def upload(client: TestClient, library: Library, name: str, data: bytes) -> int:
    reply = client.post(
        "/v1/sources",
        files={"file": (name, io.BytesIO(data), "application/octet-stream")},
        headers=bearer(library, "lib"),
    )
    return reply.status_code


def test_a_scrape_after_search_answer_404_and_ingest_has_every_series(
    client: TestClient, library: Library
) -> None:
    before = scrape(client)
    random_id = uuid.uuid4().hex
    secret = f"tok-{uuid.uuid4().hex}"
    search = {"query": f"retry budget {QUERY_WORD}", "mode": "lexical"}
    assert client.post("/v1/search", json=search, headers=bearer(library, "ada")).status_code == 200
    answer = {"search": {"query": QUESTION}, "minimum_evidence_score": 0.0}
    assert client.post("/v1/answer", json=answer, headers=bearer(library, "ada")).status_code == 200
    assert client.get(f"/nope/{random_id}?token={secret}").status_code == 404
    missing = f"/v1/answers/{random_id}/citations/E1"
    assert client.get(missing, headers=bearer(library, "ada")).status_code == 404
    note = b"# Tides\n\nThe tide tables list high water at the harbour twice a day.\n"
    assert upload(client, library, f"tides-{random_id}.md", note) == 201
    assert upload(client, library, f"blob-{random_id}.bin", b"\x00\x01binary") == 422

    samples = scrape(client)
    delta = Delta(before, samples)

    assert delta.requests("/v1/search", "POST", 200) == 1
    assert delta.requests("/v1/answer", "POST", 200) == 1
    assert delta.requests("unmatched", "GET", 404) == 1
    assert delta.requests("/v1/answers/{answer_id}/citations/{ref}", "GET", 404) == 1
    assert delta.requests("/v1/sources", "POST", 201) == 1
    assert delta.requests("/v1/sources", "POST", 422) == 1
    assert delta.requests("/metrics", "GET", 200) == 1  # the first scrape
    # The latency histogram: per route and method, buckets from 5 ms to past 5 s.
    search_labels = {"route": "/v1/search", "method": "POST"}
    assert delta("citadel_http_request_duration_seconds_count", **search_labels) == 1
    buckets = {
        s.labels["le"]
        for s in samples
        if s.name == "citadel_http_request_duration_seconds_bucket"
        and s.labels["route"] == "/v1/search"
    }
    assert {"0.005", "0.05", "0.5", "5.0", "+Inf"} <= buckets
    total = delta("citadel_http_request_duration_seconds_sum", **search_labels)
    assert 0 < total < 30
    # The scrape itself is the one request in flight.
    assert value(samples, "citadel_http_requests_in_flight") == 1

    # Search by mode: the lexical search, and the answer's own (hybrid) search.
    assert delta("citadel_search_duration_seconds_count", mode="lexical") == 1
    assert delta("citadel_search_duration_seconds_count", mode="hybrid") == 1
    # Ingest by format and outcome: the module's book (through the use case, as the
    # CLI does) before, then the uploaded note, and the refused binary with its code.
    markdown = {"format": "markdown", "outcome": "created"}
    assert value(before, "citadel_ingest_duration_seconds_count", **markdown) >= 1
    assert delta("citadel_ingest_duration_seconds_count", **markdown) == 1
    refused = {"format": "other", "outcome": "refused"}
    assert delta("citadel_ingest_duration_seconds_count", **refused) == 1
    assert delta("citadel_ingest_refusals_total", reason="unsupported") == 1

    # The process' own series.
    assert value(samples, "process_resident_memory_bytes") > 1_000_000
    assert value(samples, "process_cpu_seconds_total") > 0
    assert any(s.name == "python_info" for s in samples)
    assert any(s.name == "python_gc_objects_collected_total" for s in samples)

    # Nothing of any request became a label value.
    labels = {v for s in samples for v in s.labels.values()}
    for leaked in (random_id, secret, QUERY_WORD, QUESTION, library.source_id, "tides", "blob"):
        assert not [v for v in labels if leaked in v], leaked
    assert not [v for v in labels if "?" in v or v.startswith("/nope")]


def test_a_scanner_of_random_paths_adds_no_series(client: TestClient) -> None:
    def series() -> set[tuple[str, ...]]:
        return {
            tuple(sorted(s.labels.values()))
            for s in scrape(client)
            if s.name.startswith("citadel_http_")
        }

    client.get("/warmup-scan")
    scrape(client)  # the scrape's own series exist before they are compared
    before = series()
    for n in range(200):
        path = f"/wp-admin/{uuid.uuid4().hex}/{n}.php?id={n}"
        assert client.get(path).status_code == 404
        client.request("PROPFIND", f"/x{n}")
    after = series()
    added = after - before
    # Only the scanner's odd method (one 'other' label), not one series per path.
    assert all("other" in labels for labels in added), added
    routes = {s.labels["route"] for s in scrape(client) if s.name == "citadel_http_requests_total"}
    assert not [r for r in routes if "wp-admin" in r or r.startswith("/x")]
    unmatched = value(
        scrape(client),
        "citadel_http_requests_total",
        **{"route": "unmatched", "method": "GET", "status": "404"},
    )
    assert unmatched >= 201


@pytest.mark.parametrize("path", ["/static/style.css", "/static/missing.css"])
def test_a_mounted_app_is_labelled_by_its_prefix(client: TestClient, path: str) -> None:
    status = client.get(path).status_code
    routes = {
        s.labels["route"]
        for s in scrape(client)
        if s.name == "citadel_http_requests_total" and s.labels["status"] == str(status)
    }
    assert "/static" in routes
    assert not [r for r in routes if "style" in r or "missing" in r]


class Echoing:
    """Another entrypoint's ASGI app, served beside the API as the MCP server is."""

    path = "/mounted-test"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield


def test_an_app_served_beside_the_api_is_labelled_by_its_path(library: Library) -> None:
    served = mount(create_app(library.services, session_secret=SECRET), Echoing())
    with TestClient(served, raise_server_exceptions=False) as client:
        before = scrape(client)
        assert client.post("/mounted-test", json={"token": "x"}).status_code == 202
        assert client.get("/mounted-test/deeper/abc").status_code == 404
        delta = Delta(before, scrape(client))
    assert delta.requests("/mounted-test", "POST", 202) == 1
    assert delta.requests("unmatched", "GET", 404) == 1
