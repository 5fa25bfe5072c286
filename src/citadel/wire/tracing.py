"""The trace across a gRPC call: W3C trace context in metadata, and how calls are named.

The client sends the headers ``Tracer.outgoing()`` gives (``traceparent``, and
``tracestate`` when there is one) as metadata; the server continues the trace from
them. Client and server spans are named and described alike, after OpenTelemetry's
RPC conventions: ``citadel.v1.Retrieval/Search`` with ``rpc.system``,
``rpc.service``, ``rpc.method`` and ``rpc.grpc.status_code``.
"""

from __future__ import annotations

from citadel.app.ports.tracing import AttributeValue
from citadel.wire.identity import Metadata, ServiceSpec

TRACE_KEYS = frozenset({"traceparent", "tracestate"})
STATUS = "rpc.grpc.status_code"


def span_name(service: ServiceSpec) -> str:
    """``citadel.v1.Retrieval/Search``: the method's full name."""
    return service.method.lstrip("/")


def rpc_attributes(service: ServiceSpec) -> dict[str, AttributeValue]:
    name, _, method = service.method.lstrip("/").partition("/")
    return {"rpc.system": "grpc", "rpc.service": name, "rpc.method": method}


def trace_metadata(headers: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The trace headers a client sends on (nothing else of ``headers``)."""
    return tuple((key, value) for key, value in headers.items() if key in TRACE_KEYS)


def trace_carrier(metadata: Metadata) -> dict[str, str]:
    """The incoming trace headers; a binary or repeated one is ignored (a fresh trace)."""
    found: dict[str, str] = {}
    repeated: set[str] = set()
    for key, value in metadata:
        if key not in TRACE_KEYS or not isinstance(value, str):
            continue
        if key in found:
            repeated.add(key)
        found[key] = value
    return {key: value for key, value in found.items() if key not in repeated}
