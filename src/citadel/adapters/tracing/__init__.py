"""Tracing with OpenTelemetry: the ``Tracer`` port over an injected SDK tracer provider.

The SDK is imported only when an endpoint is configured (it costs a few hundred
milliseconds at start), so a process without tracing never loads it.
"""

from __future__ import annotations

import functools

from citadel.app.ports.tracing import NullTracer, Tracer


def tracer_for(endpoint: str) -> Tracer:
    """Spans batched to the OTLP/HTTP collector at ``endpoint``; none when it is empty.

    One provider per endpoint and process (flushed at exit): the HTTP edge, its
    gRPC clients and the services of one process share it. ``ValueError`` for an
    endpoint that is not an http(s) URL.
    """
    return _exporting(endpoint) if endpoint else NullTracer()


@functools.cache
def _exporting(endpoint: str) -> Tracer:
    from citadel.adapters.tracing.otel import exporting_tracer

    return exporting_tracer(endpoint)
