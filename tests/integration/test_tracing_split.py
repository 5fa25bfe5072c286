"""One traced answer across split mode: HTTP edge -> Answer service -> Retrieval service.

Real gRPC servers on loopback behind mTLS with certificates from ``citadel certs
dev``; each of the three "processes" has its own TracerProvider and in-memory
exporter (as three processes would), so the only thing tying their spans into
one trace is the ``traceparent`` each hop sends in its metadata.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from citadel.adapters.tracing.otel import OtelTracer
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.bootstrap.grpc_wiring import (
    build_answer_client,
    build_retrieval_client,
    grpc_server_credentials,
    mint_dev_certs,
)
from citadel.config import Settings
from citadel.domain.users import Role
from citadel.entrypoints.grpc.server import RunningServer, start_server
from citadel.entrypoints.grpc.services import AnswerServicer, RetrievalServicer
from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.observability import JsonFormatter
from citadel.wire.identity import ANSWER, RETRIEVAL
from tests.builders import operator

T = TypeVar("T")
TENANT = "acme"
MARKER = "quendlewick"
NOTE = (
    "# Capacitors\n\nThe flux capacitor workers restart one at a time after a deploy"
    f" of the {MARKER} release.\n\n"
    "## Budgets\n\nEach worker keeps a retry budget of three attempts per minute.\n"
)
QUESTION = f"How do the flux capacitor workers of {MARKER} restart?"


class Loop:
    """An event loop on its own thread for the gRPC servers (another "process")."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


def recording() -> tuple[OtelTracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracer(provider), exporter


@dataclass
class Split:
    client: TestClient
    token: str
    edge: InMemorySpanExporter
    answer: InMemorySpanExporter
    retrieval: InMemorySpanExporter


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Split]:
    root = tmp_path_factory.mktemp("traced")
    certs = root / "certs"
    mint_dev_certs(certs)
    settings = Settings(home=root / "home", embedder="hashing")
    note = root / "capacitors.md"
    note.write_text(NOTE, encoding="utf-8")
    edge_tracer, edge_spans = recording()
    answer_tracer, answer_spans = recording()
    retrieval_tracer, retrieval_spans = recording()
    # Three services on one CITADEL_HOME, as split mode's processes share it.
    retrieval_side = build(settings, tracer=retrieval_tracer)
    retrieval_side.ingest.ingest(
        retrieval_side.documents.open(note), IngestOptions(tenant=TENANT), actor=operator(TENANT)
    )
    _, token = retrieval_side.users.add("rita", Role.READER, TENANT)
    loop = Loop()
    servers: list[RunningServer] = []
    retrieval = loop.run(
        start_server(
            RETRIEVAL,
            RetrievalServicer(
                retrieval_side.search, retrieval_side.users, tracer=retrieval_tracer
            ).handler(),
            "127.0.0.1:0",
            grpc_server_credentials(certs, RETRIEVAL.server_name),
        )
    )
    servers.append(retrieval)
    remote = build_retrieval_client(settings, retrieval.address, certs, tracer=answer_tracer)
    answer_side = build(settings, retrieval=remote, tracer=answer_tracer)
    answer = loop.run(
        start_server(
            ANSWER,
            AnswerServicer(answer_side.answer, answer_side.users, tracer=answer_tracer).handler(),
            "127.0.0.1:0",
            grpc_server_credentials(certs, ANSWER.server_name),
        )
    )
    servers.append(answer)
    edge: Services = build(settings, tracer=edge_tracer)
    answering = build_answer_client(settings, answer.address, certs, tracer=edge_tracer)
    app = create_app(edge, session_secret=b"s" * 32, answering=answering)
    with TestClient(app) as client:
        yield Split(client, token, edge_spans, answer_spans, retrieval_spans)
    for server in servers:
        loop.run(server.server.stop(None))
    loop.close()
    for services in (edge, answer_side, retrieval_side):
        services.close()


def one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


def test_an_answer_over_split_mode_is_one_trace_with_every_stage(
    split: Split, caplog: pytest.LogCaptureFixture
) -> None:
    for exporter in (split.edge, split.answer, split.retrieval):
        exporter.clear()
    with caplog.at_level(logging.INFO, logger="citadel.http"):
        reply = split.client.post(
            "/v1/answer",
            json={"search": {"query": QUESTION}},
            headers={"Authorization": f"Bearer {split.token}"},
        )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["answer"] is not None, body["degraded"]
    edge = split.edge.get_finished_spans()
    answer = split.answer.get_finished_spans()
    retrieval = split.retrieval.get_finished_spans()
    assert {s.name for s in edge} == {"POST /v1/answer", "citadel.v1.Answer/Answer"}
    assert {s.name for s in answer} == {
        "citadel.v1.Answer/Answer",
        "answer",
        "citadel.v1.Retrieval/Search",
        "selection",
        "answerability",
        "generation",
        "attempt",
        "validation",
        "support",
        "resolution",
        "audit",
    }
    assert {s.name for s in retrieval} == {
        "citadel.v1.Retrieval/Search",
        "search",
        "lexical",
        "dense",
        "fusion",
    }
    everything = edge + answer + retrieval
    assert len({span.context.trace_id for span in everything}) == 1

    # Each hop's server span is the child of the caller's client span.
    http = one(edge, "POST /v1/answer")
    assert http.kind is SpanKind.SERVER and http.parent is None
    assert (http.attributes or {})["http.route"] == "/v1/answer"
    assert (http.attributes or {})["http.request.method"] == "POST"
    assert (http.attributes or {})["http.response.status_code"] == 200
    edge_call = one(edge, "citadel.v1.Answer/Answer")
    assert edge_call.kind is SpanKind.CLIENT and child_of(edge_call, http)
    answer_served = one(answer, "citadel.v1.Answer/Answer")
    assert answer_served.kind is SpanKind.SERVER and child_of(answer_served, edge_call)
    assert (answer_served.attributes or {})["rpc.grpc.status_code"] == 0
    assert child_of(one(answer, "answer"), answer_served)
    search_call = one(answer, "citadel.v1.Retrieval/Search")
    assert search_call.kind is SpanKind.CLIENT and child_of(search_call, one(answer, "answer"))
    retrieval_served = one(retrieval, "citadel.v1.Retrieval/Search")
    assert retrieval_served.kind is SpanKind.SERVER and child_of(retrieval_served, search_call)
    search = one(retrieval, "search")
    assert child_of(search, retrieval_served)
    for stage in ("lexical", "dense", "fusion"):
        assert child_of(one(retrieval, stage), search), stage

    # The request's JSON log line carries the same trace id; no span carries content.
    formatter = JsonFormatter()
    lines = [json.loads(formatter.format(r)) for r in caplog.records if r.name == "citadel.http"]
    (logged,) = [line for line in lines if line.get("route") == "/v1/answer"]
    assert logged["trace_id"] == f"{http.context.trace_id:032x}"
    recorded = "\n".join(
        f"{span.name} {dict(span.attributes or {})} {span.events}" for span in everything
    )
    assert MARKER not in recorded and "capacitor" not in recorded


def test_an_incoming_traceparent_is_continued_by_the_edge(split: Split) -> None:
    split.edge.clear()
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    caller_span = "00f067aa0ba902b7"
    reply = split.client.get(
        "/healthz", headers={"traceparent": f"00-{caller_trace}-{caller_span}-01"}
    )
    assert reply.status_code == 200
    (span,) = split.edge.get_finished_spans()
    assert span.name == "GET /healthz"
    assert f"{span.context.trace_id:032x}" == caller_trace
    assert span.parent is not None and f"{span.parent.span_id:016x}" == caller_span


def test_a_refused_call_is_a_failed_server_span_with_its_status(split: Split) -> None:
    for exporter in (split.edge, split.answer):
        exporter.clear()
    reply = split.client.post(
        "/v1/answer",
        json={"search": {"query": QUESTION}},
        headers={"Authorization": "Bearer ctd_not-a-token"},
    )
    assert reply.status_code == 401
    (http,) = split.edge.get_finished_spans()  # refused at the edge: no gRPC call
    assert (http.attributes or {})["http.response.status_code"] == 401
    assert split.answer.get_finished_spans() == ()
