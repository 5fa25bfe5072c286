"""With CITADEL_OTEL_ENDPOINT set, spans reach an OTLP/HTTP collector; unset, nothing is sent.
The standard OpenTelemetry variables work as the SDK defines them: an
OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT alone turns export on, OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES name the resource, OTEL_SDK_DISABLED=true turns it all off.

The collector is a small HTTP server on loopback that keeps what is POSTed to
``/v1/traces`` and decodes it with OpenTelemetry's own protobuf messages.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from citadel.adapters import tracing
from citadel.adapters.tracing.otel import OtelTracer, exporting_tracer
from citadel.app.ports.tracing import NullTracer
from citadel.bootstrap import build
from citadel.bootstrap.tracing import tracer_of
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


def exported(
    collector: Collector, path: str = "/v1/traces"
) -> list[tuple[str, dict[str, object], str]]:
    """(span name, attributes, service.name) of every span the collector received."""
    found = []
    for posted, content_type, body in collector.received:
        assert posted == path and content_type == "application/x-protobuf"
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


def resources(collector: Collector) -> list[dict[str, object]]:
    """The resource attributes of every batch the collector received."""
    return [
        {a.key: _value(a.value) for a in resource.resource.attributes}
        for _, _, body in collector.received
        for resource in ExportTraceServiceRequest.FromString(body).resource_spans
    ]


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


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A process environment without OpenTelemetry's variables, and no cached tracer:
    the SDK reads the variables from ``os.environ`` when a tracer is built."""
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    tracing._exporting.cache_clear()
    yield monkeypatch
    tracing._exporting.cache_clear()


def _two_spans(tracer: object) -> None:
    assert isinstance(tracer, OtelTracer)
    with tracer.span("search", mode="hybrid"), tracer.span("lexical", hits=7):
        pass
    tracer.close()


def test_the_standard_endpoint_alone_exports_under_the_standard_service_name(
    otel_env: pytest.MonkeyPatch, collector: Collector, tmp_path: Path
) -> None:
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    otel_env.setenv("OTEL_SERVICE_NAME", "citadel-east")
    otel_env.setenv(
        "OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging,service.name=hidden"
    )
    settings = Settings.from_env(os.environ).with_overrides(home=tmp_path, embedder="hashing")
    services = build(settings)
    services.users.add("rita", Role.READER, "acme")
    services.search.search(SearchRequest("anything at all"), Actor("rita", "acme", Role.READER))
    services.close()
    assert isinstance(services.tracer, OtelTracer)
    services.tracer.close()
    spans = exported(collector)
    assert {"search", "lexical", "dense", "fusion"} <= {name for name, _, _ in spans}
    assert {service for _, _, service in spans} == {"citadel-east"}
    (resource, *_) = resources(collector)
    assert resource["deployment.environment.name"] == "staging"
    assert resource["telemetry.sdk.name"] == "opentelemetry"  # the SDK's own detectors ran


def test_the_standard_traces_endpoint_alone_is_posted_to_as_given(
    otel_env: pytest.MonkeyPatch, collector: Collector
) -> None:
    otel_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.url + "/otlp/traces")
    otel_env.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes")
    _two_spans(tracer_of(Settings.from_env(os.environ)))
    assert sorted(name for name, _, _ in exported(collector, "/otlp/traces")) == [
        "lexical",
        "search",
    ]
    assert {service for _, _, service in exported(collector, "/otlp/traces")} == {"from-attributes"}


def test_citadels_endpoint_wins_and_the_resource_is_still_the_standard_one(
    otel_env: pytest.MonkeyPatch, collector: Collector
) -> None:
    other = Collector()
    thread = threading.Thread(target=other.serve_forever, daemon=True)
    thread.start()
    try:
        otel_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", other.url + "/v1/traces")
        otel_env.setenv("OTEL_SERVICE_NAME", "citadel-west")
        env = {**os.environ, "CITADEL_OTEL_ENDPOINT": collector.url}
        _two_spans(tracer_of(Settings.from_env(env)))
    finally:
        other.shutdown()
        other.server_close()
    assert {service for _, _, service in exported(collector)} == {"citadel-west"}
    assert len(exported(collector)) == 2
    assert other.received == []


@pytest.mark.parametrize("value", ["true", "TRUE", " True "])
def test_sdk_disabled_turns_every_endpoint_off(
    otel_env: pytest.MonkeyPatch, collector: Collector, value: str
) -> None:
    otel_env.setenv("OTEL_SDK_DISABLED", value)
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    env = {**os.environ, "CITADEL_OTEL_ENDPOINT": collector.url}
    assert isinstance(tracer_of(Settings.from_env(env)), NullTracer)
    assert isinstance(tracer_of(Settings.from_env(os.environ)), NullTracer)
    # The SDK's own provider honours it too, should a tracer be built regardless.
    tracer = exporting_tracer(collector.url)
    with tracer.span("search") as span:
        assert span.trace_id == ""
    tracer.close()
    assert collector.received == []


def test_without_any_endpoint_the_standard_names_alone_trace_nothing(
    otel_env: pytest.MonkeyPatch,
) -> None:
    otel_env.setenv("OTEL_SERVICE_NAME", "citadel-east")
    otel_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")
    otel_env.setenv("OTEL_SDK_DISABLED", "false")
    settings = Settings.from_env(os.environ)
    assert not settings.otel_standard_endpoint and not settings.otel_sdk_disabled
    assert isinstance(tracer_of(settings), NullTracer)
