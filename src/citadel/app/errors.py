"""Application errors; each entrypoint maps them to statuses in one table.

AppError
├── InvalidRequest          the caller sent something unusable (HTTP 422)
├── NotFound                no such source, version or answer (404)
├── Forbidden               the actor may not do or see this (403)
├── Unauthenticated         no valid credentials: unknown token or user (401)
│   └── UserDisabled        the user exists but was disabled
├── UserExists              a user of that name is already registered (409)
├── RequestDeadlineExceeded the request's own deadline passed (504)
├── ServiceUnavailable      a service this one calls is unreachable or broke its contract (503)
│   └── RenderBusy          every page renderer is busy and the queue is full (503)
├── PageUnrenderable        a page ran past its render limits, now or within the last hour
├── VersionConflict         the source changed between reading it and committing to it
│                           (raised by ``refuse_write`` from ``domain.source_writes``)
├── ParseError              a parser refused a file (raised by parser adapters)
├── InvalidGeneratorOutput  a generator adapter got a reply that is no candidate
├── ModelUnavailable        a packaged model cannot be used (missing, altered, refused)
└── IngestError             one file could not be ingested; nothing of it was written
"""

from __future__ import annotations

from citadel.domain.source_writes import Refusal, WriteRefused


class AppError(Exception):
    """Base of every error the use cases raise on purpose."""


class InvalidRequest(AppError):
    pass


class LookalikeName(InvalidRequest):
    """A new user, tenant or group name looks like an existing one, or is not written
    in one folded form of one script (``app.names``)."""


class NotFound(AppError):
    pass


class AuditRecordUnreadable(AppError):
    """A stored audit record that no longer parses: it was altered after it was
    written (``citadel audit verify`` checks the chain). An integrity failure of the
    store, never the request's fault."""


class Forbidden(AppError):
    pass


class Unauthenticated(AppError):
    """The caller could not be identified: an unknown token, or no such user."""


class UserDisabled(Unauthenticated):
    """The user exists but was disabled; nothing runs on its behalf."""


class UserExists(AppError):
    """A user of that name is already registered (names are unique across tenants)."""


class LastAdmin(AppError):
    """The change would leave a tenant without an enabled admin (or an admin would
    disable itself): nothing was changed."""


class RequestDeadlineExceeded(AppError):
    pass


class LibraryChanged(AppError):
    """The library changed under a long operation (a source deleted or re-ingested);
    what was stored before stays (``stored`` items), and running it again continues."""

    def __init__(self, message: str, stored: int = 0) -> None:
        super().__init__(message)
        self.stored = stored


class ServiceUnavailable(AppError):
    """A service this one depends on (split mode: Retrieval, Answer) failed to answer."""


class RenderBusy(ServiceUnavailable):
    """Every page renderer is busy and its queue is full; ``retry_after`` is in seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"every page renderer is busy: try again in {retry_after} s")
        self.retry_after = retry_after


class PageUnrenderable(AppError):
    """A page ran past its time or memory limit (now, or recently: it is not tried again)."""


class VersionConflict(AppError):
    """A commit's precondition failed: another writer changed the source (or added the
    same content) after it was read. Nothing was written; read again and decide again."""


def refuse_write(refused: WriteRefused | None) -> None:
    """Raise what the registry port says for a refused write to a source: ``KeyError``
    (the source id) when there is no live source to update, ``VersionConflict`` with
    the refusal's message otherwise; nothing when the write may go ahead.

    The rule is ``domain.source_writes``; every store calls this on its answer, inside
    the write's transaction, so none of them words a refusal itself."""
    if refused is None:
        return
    if refused.reason is Refusal.GONE:
        raise KeyError(refused.source_id)
    raise VersionConflict(refused.message)


class IngestError(AppError):
    """A file was refused; ``reason`` is a stable code, ``detail`` says what to do."""

    def __init__(self, path: str, reason: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.reason = reason
        self.detail = detail

    def shown_as(self, path: str) -> IngestError:
        """The same refusal, naming the file as the caller knows it (an upload's name)."""
        return IngestError(path, self.reason, self.detail)


class ParseError(AppError):
    """A parser refused its input; ``reason`` is a stable code such as ``encrypted``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class InvalidGeneratorOutput(AppError):
    """The provider answered, but with nothing usable as a candidate (bad JSON, a tool call).

    Raised by generator adapters; the answer service reports it as invalid
    output, like a candidate the validator rejects. ``reason`` is a stable code.
    """

    reason: str = "invalid_output"


class ModelUnavailable(AppError):
    """A packaged model cannot be used: a file is missing, altered or unreadable, or
    onnxruntime refused it. Raised by the adapters that load one; the composition root
    falls back to the model-free choice of the family (``bootstrap/support.py``)."""
