"""Tracing: the OpenTelemetry adapter, the no-op default, and the no-content rule.

Every test gives its own TracerProvider with an in-memory exporter (nothing is
set globally), so no span leaks from one test into another.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from citadel.adapters.tracing import tracer_for
from citadel.adapters.tracing.otel import OtelTracer, traces_url
from citadel.app.answer import AnswerRequest
from citadel.app.ingest import IngestOptions
from citadel.app.ports.tracing import NullTracer
from citadel.bootstrap import Services, build
from citadel.config import ConfigError, Settings
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http.observability import JsonFormatter, trace_id_var
from citadel.setting_kinds import Setting, Text
from citadel.settings_table import SETTINGS, is_known_variable
from tests.builders import operator

TENANT = "acme"
READER = Actor("rita", TENANT, Role.READER)
# A word no span name or attribute could carry unless content leaked into it.
MARKER = "zorblaxion"
BOOK = f"""# Quasar Maintenance

## 1 Coolant

The {MARKER} coolant loop is drained every spring and refilled with fresh glycol
before the quasar is started again at quarter power.

## 2 Alignment

Alignment mirrors are checked with a laser after every coolant change.
"""
QUESTION = f"How is the {MARKER} coolant loop maintained?"


def recording() -> tuple[OtelTracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracer(provider), exporter


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


# --- the adapter ------------------------------------------------------------


def test_spans_nest_and_name_citadels_attributes_apart_from_conventions() -> None:
    tracer, exporter = recording()
    with tracer.span("outer", mode="hybrid") as outer:
        with tracer.span("inner", hits=3) as inner:
            inner.set(**{"http.route": "/v1/answer"}, fused=True)
        outer.set(results=2)
    spans = by_name(exporter.get_finished_spans())
    assert set(spans) == {"outer", "inner"}
    inner_span, outer_span = spans["inner"], spans["outer"]
    assert inner_span.parent is not None
    assert inner_span.parent.span_id == outer_span.context.span_id
    assert inner_span.context.trace_id == outer_span.context.trace_id
    assert dict(inner_span.attributes or {}) == {
        "citadel.hits": 3,
        "citadel.fused": True,
        "http.route": "/v1/answer",
    }
    assert dict(outer_span.attributes or {}) == {"citadel.mode": "hybrid", "citadel.results": 2}
    assert outer.trace_id == f"{outer_span.context.trace_id:032x}"


def test_a_failure_records_the_type_only_never_the_message() -> None:
    tracer, exporter = recording()
    with pytest.raises(ValueError, match=MARKER), tracer.span("stage"):
        raise ValueError(f"the question was about {MARKER}")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {}) == {"error.type": "ValueError"}
    assert span.events == ()
    assert MARKER not in (span.status.description or "")


def test_the_blocks_own_failure_kind_is_kept_when_an_exception_follows() -> None:
    tracer, exporter = recording()

    def refuse() -> None:
        with tracer.span("call") as span:
            span.fail("Forbidden")
            raise RuntimeError("aborted")

    with pytest.raises(RuntimeError):
        refuse()
    (recorded,) = exporter.get_finished_spans()
    assert (recorded.attributes or {})["error.type"] == "Forbidden"


def test_outgoing_headers_continue_the_trace_in_another_tracer() -> None:
    """Two processes in miniature: what one sends, the other continues."""
    client, client_spans = recording()
    server, server_spans = recording()
    with client.span("call", kind="client") as call:
        headers = client.outgoing()
    assert set(headers) == {"traceparent"}
    assert headers["traceparent"].split("-")[1] == call.trace_id
    with server.span("serve", kind="server", parent=headers):
        pass
    (sent,) = client_spans.get_finished_spans()
    (served,) = server_spans.get_finished_spans()
    assert served.kind is SpanKind.SERVER and sent.kind is SpanKind.CLIENT
    assert served.context.trace_id == sent.context.trace_id
    assert served.parent is not None and served.parent.span_id == sent.context.span_id


def test_no_incoming_or_a_malformed_traceparent_starts_a_fresh_trace() -> None:
    tracer, exporter = recording()
    with tracer.span("a", kind="server", parent={}):
        pass
    with tracer.span("b", kind="server", parent={"traceparent": "00-junk-junk-01"}):
        pass
    a, b = exporter.get_finished_spans()
    assert a.parent is None and b.parent is None
    assert a.context.trace_id != b.context.trace_id


def test_the_null_tracer_records_nothing_and_sends_nothing() -> None:
    tracer = NullTracer()
    with tracer.span("x", kind="server", parent={"traceparent": "x"}, n=1) as span:
        span.set(more=2)
        span.rename("y")
        span.fail("E")
        assert span.trace_id == ""
        assert tracer.outgoing() == {}
    with pytest.raises(KeyError), tracer.span("z"):
        raise KeyError("propagates")


def test_an_empty_endpoint_means_no_tracing_and_a_bad_one_is_refused() -> None:
    assert isinstance(tracer_for(""), NullTracer)
    with pytest.raises(ValueError, match="not an http"):
        tracer_for("collector:4318")
    assert traces_url("http://collector:4318") == "http://collector:4318/v1/traces"
    assert traces_url("https://otel.example.org/") == "https://otel.example.org/v1/traces"
    assert traces_url("http://c:4318/custom/path") == "http://c:4318/custom/path"


def test_the_setting_is_checked_and_never_echoed() -> None:
    assert Settings.from_env({}).otel_endpoint == ""
    url = "http://collector:4318"
    assert Settings.from_env({"CITADEL_OTEL_ENDPOINT": url}).otel_endpoint == url
    with pytest.raises(ConfigError, match="CITADEL_OTEL_ENDPOINT") as caught:
        Settings.from_env({"CITADEL_OTEL_ENDPOINT": "user:hunter2@collector"})
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("env", "standard", "disabled"),
    [
        ({}, False, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True, False),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False, False),  # empty: unset, as the SDK says
        ({"OTEL_SERVICE_NAME": "citadel-east"}, False, False),  # a name alone exports nothing
        ({"OTEL_SDK_DISABLED": "True"}, False, True),
        ({"OTEL_SDK_DISABLED": "1"}, False, False),  # only "true" counts, as in the SDK
    ],
)
def test_the_standard_variables_say_whether_an_endpoint_is_set_or_the_sdk_is_off(
    env: dict[str, str], standard: bool, disabled: bool
) -> None:
    settings = Settings.from_env(env)
    assert (settings.otel_standard_endpoint, settings.otel_sdk_disabled) == (standard, disabled)
    assert settings.otel_endpoint == ""


def test_only_the_standard_variables_are_named_outside_citadels_prefix() -> None:
    with pytest.raises(ValueError, match="malformed"):
        Setting("OTEL_SOMETHING", "x", Text(), "", "a standard name not marked so")
    with pytest.raises(ValueError, match="malformed"):
        Setting("CITADEL_HOME", "x", Text(), "", "ours", standard=True)
    assert {s.name for s in SETTINGS if s.standard} == {
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_SDK_DISABLED",
    }
    assert is_known_variable("OTEL_SERVICE_NAME") and is_known_variable("CITADEL_HOME")
    assert not is_known_variable("OTEL_EXPORTER_OTLP_PROTOCOL")  # not honoured: HTTP only


def test_json_log_lines_carry_the_trace_id_only_while_a_span_is_recorded() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("citadel.http", logging.INFO, __file__, 1, "request", None, None)
    assert "trace_id" not in json.loads(formatter.format(record))
    token = trace_id_var.set("0af7651916cd43dd8448eb211c80319c")
    try:
        line = json.loads(formatter.format(record))
    finally:
        trace_id_var.reset(token)
    assert line["trace_id"] == "0af7651916cd43dd8448eb211c80319c"


# --- the stages, and what their spans may carry ------------------------------


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[Services, InMemorySpanExporter]]:
    tracer, exporter = recording()
    services = build(Settings(home=tmp_path, embedder="hashing"), tracer=tracer)
    book = tmp_path / "quasar.md"
    book.write_text(BOOK, encoding="utf-8")
    services.ingest.ingest(
        services.documents.open(book), IngestOptions(tenant=TENANT), actor=operator(TENANT)
    )
    services.users.add("rita", Role.READER, TENANT)
    exporter.clear()
    yield services, exporter
    services.close()


STAGES = {
    "answer",
    "search",
    "lexical",
    "dense",
    "fusion",
    "selection",
    "answerability",
    "generation",
    "attempt",
    "validation",
    "support",
    "resolution",
    "audit",
}


def test_an_answer_has_one_span_per_stage_in_one_trace(
    traced: tuple[Services, InMemorySpanExporter],
) -> None:
    services, exporter = traced
    request = AnswerRequest(SearchRequest(query=QUESTION))
    result = asyncio.run(services.answer.answer(request, READER))
    assert result.answer is not None, result.degraded
    spans = exporter.get_finished_spans()
    assert {span.name for span in spans} == STAGES
    assert len({span.context.trace_id for span in spans}) == 1
    named = by_name(spans)
    parents = {
        name: next(p.name for p in spans if p.context.span_id == span.parent.span_id)
        for name, span in named.items()
        if span.parent is not None
    }
    assert parents == {
        "search": "answer",
        "lexical": "search",
        "dense": "search",  # on the search's other thread
        "fusion": "search",
        "selection": "answer",
        "answerability": "answer",
        "generation": "answer",
        "attempt": "generation",
        "validation": "generation",
        "support": "generation",
        "resolution": "answer",
        "audit": "answer",
    }
    attributes = {name: dict(span.attributes or {}) for name, span in named.items()}
    assert attributes["answer"]["citadel.outcome"] == "accepted"
    assert attributes["search"]["citadel.mode"] == "hybrid"
    assert attributes["search"]["citadel.results"] == len(result.search.results)
    assert attributes["generation"]["citadel.generator"] == "extractive"
    assert attributes["attempt"]["citadel.attempt"] == 1
    assert attributes["validation"]["citadel.outcome"] == "accepted"
    cited = sum(len(s.citations) for s in result.answer.segments)
    assert attributes["resolution"]["citadel.citations"] == cited


def test_no_span_carries_the_question_the_passages_or_the_answer(
    traced: tuple[Services, InMemorySpanExporter],
) -> None:
    services, exporter = traced
    for mode in SearchMode:
        services.search.search(SearchRequest(query=QUESTION, mode=mode), READER)
    result = asyncio.run(services.answer.answer(AnswerRequest(SearchRequest(QUESTION)), READER))
    assert result.answer is not None
    assert any(MARKER in r.passage for r in result.search.results)  # the marker was found
    assert any(MARKER in s.text for s in result.answer.segments)  # and shown
    spans = exporter.get_finished_spans()
    assert len(spans) > len(STAGES)
    recorded = [span.name for span in spans]
    for span in spans:
        recorded += [f"{key}={value}" for key, value in (span.attributes or {}).items()]
        recorded += [event.name for event in span.events]
    text = "\n".join(recorded).lower()
    assert MARKER not in text
    assert "coolant" not in text and "glycol" not in text and "quasar" not in text


def test_a_degraded_answer_says_why_in_its_spans(
    traced: tuple[Services, InMemorySpanExporter],
) -> None:
    services, exporter = traced
    request = AnswerRequest(SearchRequest(query="unrelated words about nothing held"), 0.99)
    result = asyncio.run(services.answer.answer(request, READER))
    assert result.degraded is not None
    named = by_name(exporter.get_finished_spans())
    assert (named["answer"].attributes or {})["citadel.outcome"] == result.degraded.reason.value
    assert "generation" not in named  # no evidence: the generator was not called
    assert (named["selection"].attributes or {})["citadel.selected"] == 0


def test_an_unknown_http_method_is_other_in_the_span_and_the_log(
    traced: tuple[Services, InMemorySpanExporter], caplog: pytest.LogCaptureFixture
) -> None:
    # The caller's own method word would name the span (and fill the log line).
    from starlette.testclient import TestClient

    from citadel.entrypoints.http import create_app

    services, exporter = traced
    with caplog.at_level(logging.INFO, logger="citadel.http"):
        reply = TestClient(create_app(services), raise_server_exceptions=False).request(
            "MARKERMETHOD", "/v1/sources"
        )
    assert reply.status_code in {401, 405}
    spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert spans and all("MARKERMETHOD" not in s.name for s in spans)
    assert {s.attributes["http.request.method"] for s in spans} == {"_OTHER"}  # type: ignore[index]
    logged = [r for r in caplog.records if r.getMessage() == "request"]
    assert logged and all(getattr(r, "method", "") == "_OTHER" for r in logged)
