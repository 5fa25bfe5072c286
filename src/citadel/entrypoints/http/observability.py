"""Request ids, JSON logs and the security headers every response carries.

Log lines carry the request id, method, route, status, duration and the
user's name — never a query string (viewer links carry tokens), a body, a
question, a passage or a credential.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

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
    """The caller's id when it is short and plain, else a fresh one (never echo junk into logs)."""
    if header and _VALID_REQUEST_ID.match(header):
        return header
    return uuid.uuid4().hex


class JsonFormatter(logging.Formatter):
    """One JSON object per line; the request id and user come from the request's context."""

    _EXTRAS = ("method", "route", "status", "duration_ms", "user", "error")

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "request_id": record.__dict__.get("request_id") or request_id_var.get(),
            "message": record.getMessage(),
        }
        for key in self._EXTRAS:
            if key in record.__dict__:
                line[key] = record.__dict__[key]
        if record.exc_info and record.exc_info[0] is not None:
            line["exception"] = record.exc_info[0].__name__
        return json.dumps(line, ensure_ascii=False)


def configure_logging(level: int = logging.INFO) -> None:
    """JSON lines on stderr for citadel and uvicorn (whose access log is off: ours replaces it)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    for name in ("citadel", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False


async def request_context(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    """Give the request an id, log it once, and add the id and security headers to the reply."""
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
                "method": request.method,
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
