"""``Tracer`` on the OpenTelemetry SDK, exporting over OTLP/HTTP when an endpoint is set.

The provider is injected, never the process-global one (``trace.set_tracer_provider``
is not called): tests give their own with an in-memory exporter, and two servers in
one process do not share state by accident. The current span lives in
OpenTelemetry's context (a context variable), so threads started with a copy of the
context (``asyncio.to_thread``, ``contextvars.copy_context().run``) see their parent.

Attribute names without a dot are citadel's and are recorded as ``citadel.NAME``;
dotted names (``http.route``, ``rpc.service``) are OpenTelemetry's semantic
conventions and are kept as given. An exception leaving a span marks it failed with
``error.type`` (its class name) only: no exception event, whose message could quote
a question or a passage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind as OtelKind
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from citadel.app.ports.tracing import AttributeValue, Span, SpanKind

_KINDS: dict[str, OtelKind] = {
    "internal": OtelKind.INTERNAL,
    "server": OtelKind.SERVER,
    "client": OtelKind.CLIENT,
}
INSTRUMENTATION = "citadel"
TRACES_PATH = "/v1/traces"
DEFAULT_SERVICE_NAME = "citadel"


def _named(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    return {(k if "." in k else f"citadel.{k}"): v for k, v in attributes.items()}


class _OtelSpan:
    __slots__ = ("_span", "failed")

    def __init__(self, span: trace.Span) -> None:
        self._span = span
        self.failed = False

    @property
    def trace_id(self) -> str:
        context = self._span.get_span_context()
        return trace.format_trace_id(context.trace_id) if context.is_valid else ""

    def set(self, **attributes: AttributeValue) -> None:
        self._span.set_attributes(_named(attributes))

    def rename(self, name: str) -> None:
        self._span.update_name(name)

    def fail(self, kind: str) -> None:
        self.failed = True
        self._span.set_attribute("error.type", kind)
        self._span.set_status(Status(StatusCode.ERROR))


class OtelTracer:
    """The ``Tracer`` port on ``provider``; ``close`` flushes and shuts it down."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)
        self._propagator = TraceContextTextMapPropagator()

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = "internal",
        parent: Mapping[str, str] | None = None,
        **attributes: AttributeValue,
    ) -> AbstractContextManager[Span]:
        context = self._propagator.extract(parent) if parent is not None else None
        return self._block(name, _KINDS[kind], context, _named(attributes))

    @contextmanager
    def _block(
        self,
        name: str,
        kind: OtelKind,
        context: Context | None,
        attributes: dict[str, AttributeValue],
    ) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            recorded = _OtelSpan(span)
            try:
                yield recorded
            except BaseException as exc:
                if not recorded.failed:  # the block's own word on the failure stands
                    recorded.fail(type(exc).__name__)
                raise

    def outgoing(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        return carrier

    def close(self) -> None:
        self._provider.shutdown()


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for ``endpoint``: a collector's base URL
    (``http://collector:4318``) gets ``/v1/traces``; a URL with a path is kept."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{endpoint!r} is not an http(s) URL")
    return endpoint.rstrip("/") + TRACES_PATH if parts.path in ("", "/") else endpoint


def service_resource(default_name: str = DEFAULT_SERVICE_NAME) -> Resource:
    """The SDK's resource for this process: its detectors' attributes, the standard
    ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` among them, with
    ``service.name`` ``default_name`` unless the environment names the service."""
    # Resource.create lets the attributes it is given win over the environment's, so
    # a service name passed to it would hide OTEL_SERVICE_NAME: the environment's own
    # resource (the SDK's detector, which parses both variables) is merged over it.
    return Resource.create({SERVICE_NAME: default_name}).merge(OTELResourceDetector().detect())


def exporting_tracer(endpoint: str = "", service_name: str = DEFAULT_SERVICE_NAME) -> OtelTracer:
    """A tracer whose spans are batched to the OTLP/HTTP collector at ``endpoint``; when
    it is empty, the SDK's exporter reads ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` itself. ``OTEL_SDK_DISABLED=true`` makes the SDK's
    provider record nothing."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=traces_url(endpoint) if endpoint else None)
    provider = TracerProvider(resource=service_resource(service_name))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return OtelTracer(provider)
