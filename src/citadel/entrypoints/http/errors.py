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
)
from citadel.config import ConfigError
from citadel.domain.errors import InvalidValue
from citadel.domain.viewer import ViewerLinkRefused


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


def validation_message(errors: Any) -> str:
    """The validator's errors in citadel's own words, one clause per field: the field,
    what is wrong and the limit. Nothing of the validator's own text reaches the
    caller (no documentation URL, no type codes, no model names, not the input)."""
    parts: list[str] = []
    for error in list(errors)[:10]:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        parts.append(_in_own_words(".".join(loc), error.get("type", ""), error.get("ctx") or {}))
    return "; ".join(parts) or "invalid request"


# What each kind of value must be, named as a JSON caller knows it.
_KINDS = {
    "string_type": "text (a JSON string)",
    "int_type": "a whole number (a JSON integer)",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list (a JSON array)",
    "dict_type": "an object (a JSON object)",
    "model_type": "an object (a JSON object)",
    "model_attributes_type": "an object (a JSON object)",
    "enum": "one of the documented values",
    "literal_error": "one of the documented values",
}


def _in_own_words(where: str, kind: str, ctx: Any) -> str:
    field = f"{where!r}" if where else "the body"
    limit = {k: ctx[k] for k in ("ge", "gt", "le", "lt", "min_length", "max_length") if k in ctx}
    if kind == "extra_forbidden":
        return (
            f"unknown field {field}: the request carries only the documented fields"
            " (passages, citations and identity come from the server, never the caller)"
        )
    if kind == "missing":
        return f"{field} is required"
    if kind in ("string_too_short", "too_short"):
        unit = "character" if kind.startswith("string") else "item"
        n = limit.get("min_length", 1)
        return f"{field} needs at least {n} {unit}{'' if n == 1 else 's'}"
    if kind in ("string_too_long", "too_long"):
        unit = "character" if kind.startswith("string") else "item"
        n = limit.get("max_length")
        return f"{field} may hold at most {n} {unit}{'' if n == 1 else 's'}"
    if kind == "greater_than_equal":
        return f"{field} must be at least {limit['ge']}"
    if kind == "greater_than":
        return f"{field} must be more than {limit['gt']}"
    if kind == "less_than_equal":
        return f"{field} must be at most {limit['le']}"
    if kind == "less_than":
        return f"{field} must be less than {limit['lt']}"
    if kind in _KINDS:
        if kind in ("enum", "literal_error") and "expected" in ctx:
            return f"{field} must be one of {ctx['expected']}"
        return f"{field} must be {_KINDS[kind]}"
    if kind == "value_error" and "error" in ctx:
        # A validator of citadel's own raised it: its message is written for callers.
        return f"{field}: {ctx['error']}"
    return f"{field} is not valid here"
