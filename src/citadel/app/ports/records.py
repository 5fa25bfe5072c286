"""What the application records: the audit log, trust metrics, and the clock they use."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from citadel.domain.audit import AuditEntry

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.


class Clock(Protocol):
    def now_iso(self) -> str:
        """The current UTC time, ISO 8601."""
        ...


class AuditLog(Protocol):
    """Append-only, hash-chained answer records (``citadel.domain.audit``)."""

    def append(self, answer_id: str, body: str) -> AuditEntry:
        """Chain ``body`` after the last record, atomically; an answer is recorded once.

        ``ValueError`` (nothing appended) when ``body`` does not name ``answer_id``
        or the answer is already recorded. Contract: tests/contract/test_audit_log_contract.py.
        """
        ...

    def get(self, answer_id: str) -> AuditEntry | None:
        """The record whose body names ``answer_id``; ``None`` when there is none."""
        ...

    def entries(self) -> Iterator[AuditEntry]:
        """Every record, oldest first."""
        ...

    def head(self) -> tuple[int, str]:
        """How many records the log has appended, and the last one's hash."""
        ...


class TrustMetrics(Protocol):
    """The trust counters and stage timings (exposed at /metrics by the HTTP layer)."""

    def answer(self, outcome: str) -> None:
        """``accepted`` or a degraded reason."""
        ...

    def rejection(self, reason: str) -> None: ...

    def resolution(self, state: str) -> None: ...

    def display_denial(self) -> None: ...

    def fabricated_link(self) -> None:
        """An href that did not come from the resolver was about to be shown (must stay 0)."""
        ...

    def stage(self, name: str, seconds: float) -> None:
        """search, selection, generation, validation or resolution."""
        ...
