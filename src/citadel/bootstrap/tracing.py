"""The tracer the settings choose: citadel's endpoint, else the standard ones, else none."""

from __future__ import annotations

from citadel.adapters.tracing import tracer_for
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.config import Settings


def tracer_of(settings: Settings) -> Tracer:
    """Spans to ``CITADEL_OTEL_ENDPOINT``, else to the collector the SDK finds in
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``; a no-op
    tracer when neither is set or ``OTEL_SDK_DISABLED=true`` (the SDK is then not loaded)."""
    if settings.otel_sdk_disabled:
        return NullTracer()
    return tracer_for(settings.otel_endpoint, standard_endpoint=settings.otel_standard_endpoint)
