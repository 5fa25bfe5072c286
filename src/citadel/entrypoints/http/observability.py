"""Request ids, JSON logs and the security headers every response carries.

Log lines carry the request id, method, route, status, duration and the
user's name — never a query string (viewer links carry tokens), a body, a
question, a passage or a credential. Each request is a server span of the
services' tracer (continuing an incoming W3C ``traceparent``), and while it is
recorded every log line of the request carries its ``trace_id``.

Records of third-party libraries (``pypdf`` and the like) and captured
``warnings.warn`` calls are JSON lines too, but without their text: a
library's message can quote the document it is reading (pypdf's warnings carry
outline titles and object dumps), and even its format string may have been
built from document text. Such a line keeps the logger, the level, a fixed
message and where in the library it was raised (module, function and line; for
a warning, its category and file) — enough to look it up, nothing of the text.
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from starlette.requests import Request
from starlette.responses import Response

from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.domain.requests import request_id_or_new
from citadel.entrypoints.present.json_lines import json_line

REQUEST_ID_HEADER = "X-Request-ID"

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
trace_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("trace_id", default="")
TRACE_HEADERS = ("traceparent", "tracestate")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none';"
    " frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}

log = logging.getLogger("citadel.http")


def request_id_from(header: str | None) -> str:
    """The caller's id when it is short and plain, else a fresh one (never echo junk into logs).

    The rule is ``citadel.domain.requests``'s, the one the gRPC services apply too.
    """
    return request_id_or_new(header)


OWN_LOGGERS = ("citadel", "uvicorn")
"""Loggers whose messages are citadel's own (or the server's) and are logged as written."""

WITHHELD = "third-party log record (message withheld: it may quote document text)"
WARNINGS_LOGGER = "py.warnings"


def _own(name: str) -> bool:
    return any(name == own or name.startswith(own + ".") for own in OWN_LOGGERS)


class JsonFormatter(logging.Formatter):
    """One JSON object per line; the request id and user come from the request's context.

    A record of any logger but citadel's and uvicorn's gets a fixed message and
    its origin instead of its text (see the module's docstring).
    """

    _EXTRAS = ("method", "route", "status", "duration_ms", "user", "error")

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "request_id": record.__dict__.get("request_id") or request_id_var.get(),
        }
        trace_id = record.__dict__.get("trace_id") or trace_id_var.get()
        if trace_id:
            line["trace_id"] = trace_id
        if _own(record.name):
            line["message"] = record.getMessage()
            for key in self._EXTRAS:
                if key in record.__dict__:
                    line[key] = record.__dict__[key]
        else:
            line["message"] = WITHHELD
            line["origin"] = f"{record.module}.{record.funcName}:{record.lineno}"
            if record.name == WARNINGS_LOGGER and "category" in record.__dict__:
                # Logged by ``_log_warning``: where the warning was raised, and its class.
                line["origin"] = str(record.__dict__.get("origin"))
                line["category"] = str(record.__dict__["category"])
        if record.exc_info and record.exc_info[0] is not None:
            line["exception"] = record.exc_info[0].__name__
        return json_line(line)


def _log_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning`` for the server: a JSON line with the category, never the text."""
    logging.getLogger(WARNINGS_LOGGER).warning(
        "warning",
        extra={"category": category.__name__, "origin": f"{os.path.basename(filename)}:{lineno}"},
    )


def configure_logging(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """JSON lines on ``stream`` (default stderr) for everything the server process logs.

    citadel's and uvicorn's loggers (uvicorn's access log is off: ours replaces
    it) log at ``level`` with their messages. Every other logger propagates to
    the root handler, at WARNING and above, with its message withheld; without
    it Python's last-resort handler would print their text as plain lines.
    ``warnings.warn`` calls are logged there too, by category, not printed.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("citadel", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(max(level, logging.WARNING))
    warnings_logger = logging.getLogger(WARNINGS_LOGGER)
    warnings_logger.handlers = []
    warnings_logger.propagate = True
    warnings.showwarning = _log_warning


KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_name(method: str) -> str:
    """The request's method for spans and logs: any other than the standard ones is
    ``_OTHER`` (OpenTelemetry's convention), never the caller's own word."""
    return method if method in KNOWN_METHODS else "_OTHER"


async def request_context(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    """Give the request an id and a server span, log it once, and add the id and
    security headers to the reply."""
    incoming = {name: request.headers[name] for name in TRACE_HEADERS if name in request.headers}
    method = method_name(request.method)
    with _tracer(request).span(method, kind="server", parent=incoming) as span:
        span.set(**{"http.request.method": method, "url.scheme": request.url.scheme})
        trace_token = trace_id_var.set(span.trace_id)
        try:
            response = await _logged(request, call_next)
        finally:
            trace_id_var.reset(trace_token)
        route = getattr(request.scope.get("route"), "path", None)
        if route is not None:
            span.rename(f"{method} {route}")
            span.set(**{"http.route": route})
        span.set(**{"http.response.status_code": response.status_code})
        if response.status_code >= 500:
            span.fail(str(response.status_code))
        return response


def _tracer(request: Request) -> Tracer:
    """The services' tracer (``create_app`` puts them in the app's state)."""
    edge = getattr(request.app.state, "edge", None)
    tracer: Tracer | None = getattr(getattr(edge, "services", None), "tracer", None)
    return tracer or NullTracer()


async def _logged(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
    request.state.request_id = request_id
    id_token = request_id_var.set(request_id)
    started = time.perf_counter()
    try:
        response = await call_next(request)
        response.headers[REQUEST_ID_HEADER] = request_id
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        route = request.scope.get("route")
        log.info(
            "request",
            extra={
                "request_id": request_id,
                "trace_id": trace_id_var.get(),
                "method": method_name(request.method),
                "route": getattr(route, "path", "(unmatched)"),
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                # Set by the authentication dependency (the scope's state is shared).
                "user": getattr(request.state, "user", "-"),
            },
        )
        return response
    finally:
        request_id_var.reset(id_token)
