"""The one table from errors to HTTP statuses, and the handlers that apply it.

Every error reply has the same JSON shape (HTML pages render the same
fields): ``{"error": {"status", "code", "message", "request_id"}}``.
Messages of application errors are written for the caller; anything
unexpected is a bare 500 whose details go only to the log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from citadel.app.errors import (
    AppError,
    Forbidden,
    IngestError,
    InvalidGeneratorOutput,
    InvalidRequest,
    NotFound,
    ParseError,
    RequestDeadlineExceeded,
    ServiceUnavailable,
    Unauthenticated,
    UserDisabled,
    UserExists,
)
from citadel.config import ConfigError
from citadel.domain.errors import InvalidValue
from citadel.domain.viewer import ViewerLinkRefused

log = logging.getLogger("citadel.http")


class EdgeError(AppError):
    """Errors of the HTTP edge itself (no session, a bad CSRF token, too many requests)."""


class SignInRequired(Unauthenticated):
    """No credentials at all: no bearer token and no session."""


class CsrfRefused(EdgeError):
    pass


class RateLimited(EdgeError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many requests: try again in {retry_after} s")
        self.retry_after = retry_after


class TooLarge(EdgeError):
    reason = "too_large"


# Most specific first: the first row whose class matches decides.
ERROR_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (UserDisabled, 403, "user_disabled"),
    (Unauthenticated, 401, "unauthenticated"),
    (Forbidden, 403, "forbidden"),
    (ViewerLinkRefused, 403, "viewer_link_refused"),
    (CsrfRefused, 403, "csrf_refused"),
    (NotFound, 404, "not_found"),
    (UserExists, 409, "conflict"),
    (TooLarge, 413, "too_large"),
    (RequestValidationError, 422, "invalid_request"),
    (InvalidRequest, 422, "invalid_request"),
    (InvalidValue, 422, "invalid_request"),
    (IngestError, 422, "ingest_refused"),
    (ParseError, 422, "ingest_refused"),
    (RateLimited, 429, "rate_limited"),
    (ConfigError, 500, "misconfigured"),
    (InvalidGeneratorOutput, 502, "generator_failed"),
    (ServiceUnavailable, 503, "unavailable"),
    (RequestDeadlineExceeded, 504, "deadline_exceeded"),
    (AppError, 500, "internal"),
)

_HIDDEN = {"misconfigured": "the server is misconfigured", "internal": "internal error"}


def classify(exc: Exception) -> tuple[int, str]:
    for kind, status, code in ERROR_STATUS:
        if isinstance(exc, kind):
            return status, code
    return 500, "internal"


def error_body(status: int, code: str, message: str, request_id: str) -> dict[str, Any]:
    return {"error": {"status": status, "code": code, "message": message, "request_id": request_id}}


def describe(exc: Exception) -> tuple[int, str, str]:
    """Status, code and the message the caller may see."""
    status, code = classify(exc)
    if code in _HIDDEN:
        return status, code, _HIDDEN[code]
    if isinstance(exc, RequestValidationError):
        return status, code, validation_message(exc.errors())
    return status, code, str(exc)


def validation_message(errors: Any) -> str:
    """Pydantic's errors in one sentence per field; unknown fields are named as such."""
    parts: list[str] = []
    for error in list(errors)[:10]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        if error.get("type") == "extra_forbidden":
            parts.append(
                f"unknown field {where!r}: the request carries only the documented fields"
                " (passages, citations and identity come from the server, never the caller)"
            )
        else:
            parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _headers(exc: Exception, status: int) -> Mapping[str, str]:
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after)}
    if status == 401:
        return {"WWW-Authenticate": 'Bearer realm="citadel"'}
    return {}


def wants_html(request: Request) -> bool:
    """HTML for the web UI's pages and the viewer; JSON for everything else."""
    path = request.url.path
    if path.startswith("/v1/") and not path.endswith("/view"):
        return False
    return "text/html" in request.headers.get("accept", "")


async def handle(request: Request, exc: Exception) -> Response:
    status, code, message = describe(exc)
    if status >= 500:
        log.error(
            "request failed",
            extra={"error": type(exc).__name__, "status": status},
            exc_info=code not in _HIDDEN or None,
        )
    request_id = getattr(request.state, "request_id", "-")
    if wants_html(request):
        if isinstance(exc, SignInRequired):
            return RedirectResponse("/signin", status_code=303)
        from citadel.entrypoints.http.pages import error_page

        return error_page(request, status, message, _headers(exc, status))
    body = error_body(status, code, message, request_id)
    if isinstance(exc, (IngestError, ParseError, TooLarge)):
        # The stable per-file code the CLI's --json prints as "reason".
        body["error"]["reason"] = exc.reason
    return JSONResponse(body, status, headers=dict(_headers(exc, status)))


async def handle_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    request_id = getattr(request.state, "request_id", "-")
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    if wants_html(request):
        from citadel.entrypoints.http.pages import error_page

        return error_page(request, exc.status_code, str(exc.detail), exc.headers or {})
    return JSONResponse(
        error_body(exc.status_code, code, str(exc.detail), request_id),
        exc.status_code,
        headers=exc.headers,
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, handle_http)
    app.add_exception_handler(RequestValidationError, handle)
    app.add_exception_handler(AppError, handle)
    app.add_exception_handler(ConfigError, handle)
    app.add_exception_handler(InvalidValue, handle)
