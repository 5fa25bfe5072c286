"""With CITADEL_OTEL_ENDPOINT set, spans reach an OTLP/HTTP collector; unset, nothing is sent.

The collector is a small HTTP server on loopback that keeps what is POSTed to
``/v1/traces`` and decodes it with OpenTelemetry's own protobuf messages.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from citadel.adapters.tracing.otel import exporting_tracer
from citadel.app.ports.tracing import NullTracer
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role


class Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Receive)
        self.received: list[tuple[str, str, bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Receive(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def exported(collector: Collector) -> list[tuple[str, dict[str, object], str]]:
    """(span name, attributes, service.name) of every span the collector received."""
    found = []
    for path, content_type, body in collector.received:
        assert path == "/v1/traces" and content_type == "application/x-protobuf"
        message = ExportTraceServiceRequest.FromString(body)
        for resource in message.resource_spans:
            service = next(
                a.value.string_value
                for a in resource.resource.attributes
                if a.key == "service.name"
            )
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    found.append((span.name, attributes, service))
    return found


def _value(value: object) -> object:
    kind = value.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(value, kind)


def test_spans_are_batched_to_the_collector_and_flushed_on_close(collector: Collector) -> None:
    tracer = exporting_tracer(collector.url)
    with tracer.span("search", mode="hybrid") as span:
        span.set(results=3)
        with tracer.span("lexical", hits=7):
            pass
    tracer.close()
    assert sorted(exported(collector), key=lambda s: str(s[0])) == [
        ("lexical", {"citadel.hits": 7}, "citadel"),
        ("search", {"citadel.mode": "hybrid", "citadel.results": 3}, "citadel"),
    ]


def test_the_setting_wires_the_exporter_into_every_stage(
    collector: Collector, tmp_path: Path
) -> None:
    settings = Settings.from_env({"CITADEL_OTEL_ENDPOINT": collector.url}).with_overrides(
        home=tmp_path, embedder="hashing"
    )
    services = build(settings)
    assert not isinstance(services.tracer, NullTracer)
    services.users.add("rita", Role.READER, "acme")
    services.search.search(SearchRequest("anything at all"), Actor("rita", "acme", Role.READER))
    services.close()
    flush = getattr(services.tracer, "close", None)
    assert flush is not None
    flush()
    names = {name for name, _, _ in exported(collector)}
    assert {"search", "lexical", "dense", "fusion"} <= names


def test_without_the_setting_nothing_is_recorded(tmp_path: Path) -> None:
    services = build(Settings(home=tmp_path, embedder="hashing"))
    try:
        assert isinstance(services.tracer, NullTracer)
        assert services.tracer.outgoing() == {}  # nothing to send on either
    finally:
        services.close()
