"""One contract for the Tracer port, run against every adapter (the no-op default included).

As ``citadel.app.ports.tracing`` describes it: a span surrounds its ``with`` block
and is the current span inside it only; it ends once, whether the block returns or
raises, and an exception leaving the block marks it failed with its type name only
(no message, no event) and propagates unchanged; the attributes given when it opens
and with ``set`` are recorded as the plain scalars they were; ``rename`` and ``kind``
are kept; ``trace_id`` is 32 hex digits, or ``""`` when nothing is recorded;
``outgoing()`` carries the current span to another tracer, which continues that
trace through ``parent=`` instead of its own current span. Each adapter is read
through a ``Probe`` (what it finished, as plain values): the OpenTelemetry adapter
through a real SDK provider and its in-memory exporter, ``NullTracer`` as the
adapter that records nothing. A new adapter joins by adding its probe to ``PROBES``.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from citadel.adapters.tracing import tracer_for
from citadel.adapters.tracing.otel import OtelTracer
from citadel.app.ports.tracing import AttributeValue, NullTracer, Tracer

HEX32 = re.compile(r"[0-9a-f]{32}")
SECRET = "the question quoted in an error message"


@dataclass(frozen=True)
class Finished:
    """One ended span as plain values; ``attributes`` under the names the caller gave."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: Mapping[str, object]
    failed: bool
    status_text: str
    events: int


@dataclass(frozen=True)
class Probe:
    name: str
    tracer: Tracer
    finished: Callable[[], list[Finished]]
    records: bool
    """Whether the adapter records spans at all (``NullTracer`` does not)."""


_KIND_NAMES = {0: "internal", 1: "server", 2: "client"}


def _caller_names(attributes: Mapping[str, object]) -> dict[str, object]:
    # The adapter files undotted names under ``citadel.`` (its module docstring).
    return {k.removeprefix("citadel."): v for k, v in attributes.items()}


def otel_probe() -> Probe:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def finished() -> list[Finished]:
        spans = []
        for span in exporter.get_finished_spans():
            assert span.context is not None
            spans.append(
                Finished(
                    name=span.name,
                    kind=_KIND_NAMES[span.kind.value],
                    trace_id=f"{span.context.trace_id:032x}",
                    span_id=f"{span.context.span_id:016x}",
                    parent_id=None if span.parent is None else f"{span.parent.span_id:016x}",
                    attributes=_caller_names(dict(span.attributes or {})),
                    failed=span.status.status_code is StatusCode.ERROR,
                    status_text=span.status.description or "",
                    events=len(span.events),
                )
            )
        return spans

    return Probe("otel", OtelTracer(provider), finished, records=True)


def null_probe() -> Probe:
    return Probe("null", NullTracer(), list, records=False)


def unconfigured_probe() -> Probe:
    """What bootstrap wires when no collector is configured."""
    return Probe("unconfigured", tracer_for(""), list, records=False)


PROBES: dict[str, Callable[[], Probe]] = {
    "otel": otel_probe,
    "null": null_probe,
    "unconfigured": unconfigured_probe,
}


@pytest.fixture(params=sorted(PROBES))
def probe(request: pytest.FixtureRequest) -> Probe:
    return PROBES[request.param]()


def only(probe: Probe) -> Finished:
    (span,) = probe.finished()
    return span


def test_a_span_ends_once_when_its_block_returns(probe: Probe) -> None:
    with probe.tracer.span("stage") as span:
        assert probe.finished() == []  # not ended while the block runs
        span.set(n=1)
    assert [s.name for s in probe.finished()] == (["stage"] if probe.records else [])


def test_an_exception_propagates_unchanged_and_the_span_ends_once_failed(probe: Probe) -> None:
    raised = ValueError(SECRET)
    with pytest.raises(ValueError, match=SECRET) as caught, probe.tracer.span("stage", n=2):
        raise raised
    assert caught.value is raised
    spans = probe.finished()
    if not probe.records:
        assert spans == []
        return
    (span,) = spans
    assert span.failed
    assert span.attributes == {"n": 2, "error.type": "ValueError"}
    assert SECRET not in span.status_text
    assert span.events == 0  # no exception event: its message could quote content


@pytest.mark.parametrize(
    "error", [KeyboardInterrupt(), asyncio.CancelledError(), SystemExit(3), GeneratorExit()]
)
def test_a_base_exception_also_propagates_and_ends_the_span(
    probe: Probe, error: BaseException
) -> None:
    with pytest.raises(type(error)) as caught, probe.tracer.span("stage"):
        raise error
    assert caught.value is error
    if probe.records:
        assert only(probe).failed
        assert only(probe).attributes["error.type"] == type(error).__name__


def test_fail_records_the_kind_only_and_the_block_still_returns(probe: Probe) -> None:
    with probe.tracer.span("call", kind="client") as span:
        span.fail("Forbidden")
    if probe.records:
        recorded = only(probe)
        assert recorded.failed
        assert recorded.attributes == {"error.type": "Forbidden"}
        assert recorded.events == 0


def test_the_blocks_own_failure_kind_stands_when_an_exception_follows(probe: Probe) -> None:
    def refused() -> None:
        with probe.tracer.span("call") as span:
            span.fail("Unauthenticated")
            raise RuntimeError("aborted")

    with pytest.raises(RuntimeError):
        refused()
    if probe.records:
        assert only(probe).attributes["error.type"] == "Unauthenticated"


def test_a_block_without_failure_is_not_failed(probe: Probe) -> None:
    with probe.tracer.span("stage"):
        pass
    if probe.records:
        assert not only(probe).failed
        assert "error.type" not in only(probe).attributes


def test_attributes_are_recorded_as_the_scalars_given(probe: Probe) -> None:
    opened: dict[str, AttributeValue] = {"mode": "hybrid", "limit": 8}
    later: dict[str, AttributeValue] = {"score": 0.25, "cached": False, "hits": 0}
    with probe.tracer.span("search", mode="hybrid", limit=8) as span:
        span.set(**later)
        span.set(**{"http.route": "/v1/search"})
        span.set(limit=10)  # a later value replaces the earlier one
    if not probe.records:
        return
    expected = {**opened, **later, "limit": 10, "http.route": "/v1/search"}
    attributes = only(probe).attributes
    assert attributes == expected
    # == takes False for 0 and 1 for 1.0: the types must survive too.
    assert {k: type(v) for k, v in attributes.items()} == {k: type(v) for k, v in expected.items()}


def test_a_late_name_and_the_kind_are_kept(probe: Probe) -> None:
    for kind in ("internal", "server", "client"):
        with probe.tracer.span("GET", kind=kind) as span:
            span.rename(f"GET /v1/{kind}")
    if probe.records:
        assert [(s.name, s.kind) for s in probe.finished()] == [
            ("GET /v1/internal", "internal"),
            ("GET /v1/server", "server"),
            ("GET /v1/client", "client"),
        ]


def test_the_trace_id_is_32_hex_digits_or_empty(probe: Probe) -> None:
    with probe.tracer.span("stage") as span:
        trace_id = span.trace_id
    if probe.records:
        assert HEX32.fullmatch(trace_id)
        assert trace_id == only(probe).trace_id
    else:
        assert trace_id == ""
    assert span.trace_id == trace_id  # still readable after the span ended


def test_the_current_span_is_the_parent_inside_its_block_only(probe: Probe) -> None:
    with probe.tracer.span("outer") as outer:
        with pytest.raises(LookupError), probe.tracer.span("failed"):
            raise LookupError("x")
        with probe.tracer.span("inner") as inner:
            assert inner.trace_id == outer.trace_id
    with probe.tracer.span("after"):
        pass
    if not probe.records:
        return
    spans = {s.name: s for s in probe.finished()}
    assert spans["failed"].parent_id == spans["outer"].span_id
    assert spans["inner"].parent_id == spans["outer"].span_id  # not the failed sibling
    assert spans["after"].parent_id is None
    assert spans["after"].trace_id != spans["outer"].trace_id


def test_the_current_span_follows_copied_contexts_into_threads_and_tasks(probe: Probe) -> None:
    seen: list[str] = []

    def child() -> None:
        with probe.tracer.span("threaded") as span:
            seen.append(span.trace_id)

    async def task() -> None:
        with probe.tracer.span("task") as span:
            seen.append(span.trace_id)

    with probe.tracer.span("request") as request:
        context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(child,))
        worker.start()
        worker.join()
        asyncio.run(asyncio.to_thread(child))
        asyncio.run(task())
    assert seen == [request.trace_id] * 3
    if probe.records:
        spans = probe.finished()
        parent = next(s.span_id for s in spans if s.name == "request")
        assert [s.parent_id for s in spans if s.name != "request"] == [parent] * 3


def test_outgoing_is_empty_outside_any_span(probe: Probe) -> None:
    assert probe.tracer.outgoing() == {}


def test_outgoing_carries_the_current_span_to_another_tracer(probe: Probe) -> None:
    server = PROBES[probe.name]()  # another process's tracer, of the same adapter
    with probe.tracer.span("call", kind="client") as call:
        headers = probe.tracer.outgoing()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    with server.tracer.span("serve", kind="server", parent=headers) as served:
        assert served.trace_id == call.trace_id
    if probe.records:
        assert set(headers) == {"traceparent"}
        assert headers["traceparent"].split("-")[1] == call.trace_id
        sent, received = only(probe), only(server)
        assert received.trace_id == sent.trace_id
        assert received.parent_id == sent.span_id
    else:
        assert headers == {}


def test_a_parent_continues_that_trace_instead_of_the_current_one(probe: Probe) -> None:
    incoming = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    with probe.tracer.span("current") as current:
        with probe.tracer.span("served", kind="server", parent=incoming) as served:
            pass
        with probe.tracer.span("fresh", kind="server", parent={}) as fresh:
            pass
    if not probe.records:
        assert served.trace_id == fresh.trace_id == current.trace_id == ""
        return
    assert served.trace_id == "0af7651916cd43dd8448eb211c80319c"
    spans = {s.name: s for s in probe.finished()}
    assert spans["served"].parent_id == "b7ad6b7169203331"
    assert spans["fresh"].parent_id != spans["current"].span_id


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"traceparent": "00-junk-junk-01"},
        {"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"},
        {"TraceParent": "not even close", "tracestate": "x=1"},
    ],
)
def test_a_missing_or_malformed_traceparent_starts_a_fresh_trace(
    probe: Probe, headers: dict[str, str]
) -> None:
    with probe.tracer.span("served", kind="server", parent=headers) as span:
        trace_id = span.trace_id
    if probe.records:
        assert HEX32.fullmatch(trace_id) and trace_id != "0" * 32
        assert only(probe).parent_id is None
    else:
        assert trace_id == ""


def test_a_span_not_entered_records_nothing(probe: Probe) -> None:
    probe.tracer.span("never entered", n=1)
    assert probe.finished() == []
