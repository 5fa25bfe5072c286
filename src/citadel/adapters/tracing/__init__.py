"""Tracing with OpenTelemetry: the ``Tracer`` port over an injected SDK tracer provider.

The SDK is imported only when tracing is turned on (it costs a few hundred
milliseconds at start), so a process without tracing never loads it.
"""

from __future__ import annotations

import functools

from citadel.app.ports.tracing import NullTracer, Tracer


def tracer_for(endpoint: str, *, standard_endpoint: bool = False) -> Tracer:
    """Spans batched over OTLP/HTTP to ``endpoint``; when it is empty, to the collector
    the SDK's exporter finds in the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` if ``standard_endpoint`` says one is set; else none.

    One provider per endpoint and process (flushed at exit): the HTTP edge, its
    gRPC clients and the services of one process share it. ``ValueError`` for an
    endpoint that is not an http(s) URL.
    """
    if endpoint or standard_endpoint:
        return _exporting(endpoint)
    return NullTracer()


@functools.cache
def _exporting(endpoint: str) -> Tracer:
    from citadel.adapters.tracing.otel import exporting_tracer

    return exporting_tracer(endpoint)
