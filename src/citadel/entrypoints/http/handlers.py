"""The handlers that apply the error table (``errors``): a JSON error body for the
API, an error page for the web UI and the viewer, a redirect to sign in for a
page that needs a session.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from citadel.app.errors import AppError, IngestError, ParseError, RenderBusy
from citadel.config import ConfigError
from citadel.domain.errors import InvalidValue
from citadel.entrypoints.http.errors import (
    HIDDEN,
    SHED,
    RateLimited,
    SignInRequired,
    TooLarge,
    describe,
    error_body,
)
from citadel.entrypoints.http.pages import error_page
from citadel.entrypoints.http.returning import sign_in_url

log = logging.getLogger("citadel.http")


def _headers(exc: Exception, status: int) -> Mapping[str, str]:
    if isinstance(exc, (RateLimited, RenderBusy)):
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
    if status >= 500 and code not in SHED:
        log.error(
            "request failed",
            extra={"error": type(exc).__name__, "status": status},
            exc_info=code not in HIDDEN or None,
        )
    request_id = getattr(request.state, "request_id", "-")
    if wants_html(request):
        if isinstance(exc, SignInRequired):
            return RedirectResponse(sign_in_url(request), status_code=303)
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
