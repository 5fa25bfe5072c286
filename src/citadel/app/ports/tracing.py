"""Tracing: one span per stage of a request, and the context that ties them into one trace.

The use cases open spans through ``Tracer`` and never see OpenTelemetry (the adapter
is ``citadel.adapters.tracing``); ``NullTracer``, the default everywhere, records
nothing and costs a method call.

What a span may carry is the rule of this port: counts, modes, outcomes, names of
components, attempt numbers, reasons — never a question, a passage, an answer's
text, a token or a credential. Attribute values are therefore plain scalars the
callers choose from what they know about the stage, not from what it read.

The edges (the HTTP middleware, the gRPC servers and clients) also carry the trace
across processes: ``span(..., parent=headers)`` continues a trace whose W3C
``traceparent`` came in, and ``outgoing()`` gives the headers to send on.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Literal, Protocol

AttributeValue = str | int | float | bool
SpanKind = Literal["internal", "server", "client"]


class Span(Protocol):
    """The span being recorded, told what the stage came to as it learns it."""

    @property
    def trace_id(self) -> str:
        """The trace's id as 32 hex digits; ``""`` when nothing is recorded."""
        ...

    def set(self, **attributes: AttributeValue) -> None:
        """Add attributes (counts, modes, outcomes: never content)."""
        ...

    def rename(self, name: str) -> None:
        """A better name learned late (an HTTP route is known after routing)."""
        ...

    def fail(self, kind: str) -> None:
        """Mark the span failed, with the error's type name only (messages may quote content)."""
        ...


class Tracer(Protocol):
    """Opens spans; the current span (a context variable) is the parent of the next one."""

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = "internal",
        parent: Mapping[str, str] | None = None,
        **attributes: AttributeValue,
    ) -> AbstractContextManager[Span]:
        """A span around the ``with`` block, the current one inside it.

        ``parent``: headers of an incoming call (``traceparent``); the span then
        continues that trace instead of the current one. An exception leaving the
        block marks the span failed with its type name (unless the block already
        called ``fail``, whose kind stands), ends it, and propagates.
        """
        ...

    def outgoing(self) -> dict[str, str]:
        """The headers that carry the current span to another service (W3C trace context)."""
        ...


class _NullSpan:
    __slots__ = ()

    @property
    def trace_id(self) -> str:
        return ""

    def set(self, **attributes: AttributeValue) -> None:
        pass

    def rename(self, name: str) -> None:
        pass

    def fail(self, kind: str) -> None:
        pass


NULL_SPAN: Span = _NullSpan()


class _Reusable:
    """A context manager that does nothing and may be entered any number of times."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return NULL_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NOTHING = _Reusable()


class NullTracer:
    """Records nothing: the default when no tracing is configured."""

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = "internal",
        parent: Mapping[str, str] | None = None,
        **attributes: AttributeValue,
    ) -> AbstractContextManager[Span]:
        return _NOTHING

    def outgoing(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        pass
