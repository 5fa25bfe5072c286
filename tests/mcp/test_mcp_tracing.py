"""Every MCP tool call is one span, the stages of its use case inside it.

In process, with the SDK's in-memory client and an in-memory exporter on a
provider of this test's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from citadel.adapters.tracing.otel import OtelTracer
from citadel.app.errors import Forbidden
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.users import Actor, Role
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools
from tests.builders import operator

TENANT = "acme"
READER = Actor("rita", TENANT, Role.READER)
MARKER = "plimbertude"
NOTE = f"# Valves\n\nThe {MARKER} valve is closed before the pump is serviced each week.\n"
QUESTION = f"When is the {MARKER} valve closed?"


def test_each_tool_call_is_a_span_with_its_stages_inside(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    services = build(Settings(home=tmp_path, embedder="hashing"), tracer=OtelTracer(provider))
    note = tmp_path / "valves.md"
    note.write_text(NOTE, encoding="utf-8")
    services.ingest.ingest(
        services.documents.open(note), IngestOptions(tenant=TENANT), actor=operator(TENANT)
    )
    refuse = {"now": False}

    def caller(request: Any | None) -> Actor:
        if refuse["now"]:
            raise Forbidden(f"not for you ({MARKER})")
        return READER

    server = build_server(CitadelTools(services), caller)

    async def main() -> None:
        async with Client(server) as client:
            asked = await client.call_tool("ask", {"question": QUESTION})
            assert not asked.is_error
            found = await client.call_tool("search", {"query": QUESTION})
            assert not found.is_error
            refuse["now"] = True
            refused = await client.call_tool("search", {"query": QUESTION})
            assert refused.is_error

    exporter.clear()
    try:
        anyio.run(main)
    finally:
        services.close()
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name.startswith("tools/call ")]
    assert [s.name for s in calls] == ["tools/call ask", "tools/call search", "tools/call search"]
    ask, search, refused = calls
    assert ask.kind is SpanKind.SERVER and ask.parent is None
    assert dict(ask.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "ask",
    }

    def inside(call: ReadableSpan) -> set[str]:
        return {
            s.name for s in spans if s.context.trace_id == call.context.trace_id and s is not call
        }

    assert {
        "answer",
        "search",
        "lexical",
        "dense",
        "fusion",
        "selection",
        "generation",
        "validation",
        "support",
        "resolution",
        "audit",
    } <= inside(ask)
    assert inside(search) == {"search", "lexical", "dense", "fusion"}
    assert inside(refused) == set()
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["error.type"] == "Forbidden"
    assert len({ask.context.trace_id, search.context.trace_id, refused.context.trace_id}) == 3
    recorded = "\n".join(f"{s.name} {dict(s.attributes or {})} {s.events}" for s in spans)
    assert MARKER not in recorded and "valve" not in recorded


def test_over_http_the_tool_call_is_inside_the_requests_span(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from citadel.entrypoints.cli.serve import http_app

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    services = build(Settings(home=tmp_path, embedder="hashing"), tracer=OtelTracer(provider))
    try:
        _, token = services.users.add("rita", Role.READER, TENANT)
        with TestClient(http_app(services)) as client:
            exporter.clear()
            called = client.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "search", "arguments": {"query": QUESTION}},
                },
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
            assert called.status_code == 200, called.text
    finally:
        services.close()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"POST /mcp", "tools/call search", "search"} <= set(spans)
    request, call = spans["POST /mcp"], spans["tools/call search"]
    assert call.context.trace_id == request.context.trace_id
    assert call.parent is not None and call.parent.span_id == request.context.span_id
    assert spans["search"].parent is not None
    assert spans["search"].parent.span_id == call.context.span_id
