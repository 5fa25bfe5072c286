"""The HTTP edge's own errors and the one table from errors to HTTP statuses.

Every error reply has the same JSON shape (HTML pages render the same
fields): ``{"error": {"status", "code", "message", "request_id"}}``.
Messages of application errors are written for the caller; anything
unexpected is a bare 500 whose details go only to the log. The handlers
that apply the table are in ``handlers`` (they render pages, which need
the session; the errors here are raised by the code that reads it).
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError

from citadel.app.errors import (
    AppError,
    AuditRecordUnreadable,
    Forbidden,
    IngestError,
    InvalidGeneratorOutput,
    InvalidRequest,
    LastAdmin,
    NotFound,
    PageUnrenderable,
    ParseError,
    RenderBusy,
    RequestDeadlineExceeded,
    ServiceUnavailable,
    Unauthenticated,
    UserDisabled,
    UserExists,
    VersionConflict,
)
from citadel.config import ConfigError
from citadel.domain.errors import InvalidValue
from citadel.domain.viewer import ViewerLinkRefused
from citadel.entrypoints.present.refusals import validation_message


def _database_down() -> tuple[type[Exception], ...]:
    """The PostgreSQL driver's errors for a database that cannot be reached, shut down,
    or gave up waiting (the pool's timeout is one): a 503 the caller may retry. The
    driver's message names sockets and hosts, so the reply's message is fixed."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a runtime dependency
        return ()
    return (psycopg.OperationalError,)


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
    (LastAdmin, 409, "last_admin"),
    (VersionConflict, 409, "conflict"),
    (TooLarge, 413, "too_large"),
    (RequestValidationError, 422, "invalid_request"),
    (InvalidRequest, 422, "invalid_request"),
    (InvalidValue, 422, "invalid_request"),
    (IngestError, 422, "ingest_refused"),
    (ParseError, 422, "ingest_refused"),
    (PageUnrenderable, 422, "page_unrenderable"),
    (RateLimited, 429, "rate_limited"),
    (ConfigError, 500, "misconfigured"),
    (InvalidGeneratorOutput, 502, "generator_failed"),
    (RenderBusy, 503, "render_busy"),
    (ServiceUnavailable, 503, "unavailable"),
    *((kind, 503, "database_unavailable") for kind in _database_down()),
    (RequestDeadlineExceeded, 504, "deadline_exceeded"),
    (AuditRecordUnreadable, 500, "audit_record_unreadable"),
    (AppError, 500, "internal"),
)

# The codes whose message is fixed: what went wrong goes to the log only.
HIDDEN = {
    "misconfigured": "the server is misconfigured",
    "internal": "internal error",
    "database_unavailable": "the database cannot be reached: try again shortly",
}

# 5xx codes that are load shedding, expected under load: logged as a 429 is (the
# request's access line only), not as a failure with a traceback.
SHED = frozenset({"render_busy"})


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
    if code in HIDDEN:
        return status, code, HIDDEN[code]
    if isinstance(exc, RequestValidationError):
        return status, code, validation_message(exc.errors())
    return status, code, str(exc)
