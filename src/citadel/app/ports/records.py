"""What the application records: the audit log, trust metrics, and the clock they use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from citadel.domain.audit_chain import AuditEntry, AuditHead, AuditKey, MalformedHead

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.


class Clock(Protocol):
    def now_iso(self) -> str:
        """The current UTC time, ISO 8601."""
        ...


@dataclass(frozen=True, slots=True)
class AuditSnapshot:
    """The log's records and its head as of one moment (``AuditLog.snapshot``)."""

    entries: Iterator[AuditEntry]
    """Every record of that moment, oldest first; read while the snapshot is open."""
    head: AuditHead | MalformedHead | None
    """The head of that moment; the ``MalformedHead`` error when it cannot be read."""


class AuditLog(Protocol):
    """Append-only answer records, chained under a key kept outside the log
    (``citadel.domain.audit``: the threat model and the migration rule)."""

    def append(self, answer_id: str, body: str) -> AuditEntry:
        """Chain ``body`` after the last record, atomically; an answer is recorded once.

        The record's hash and the new head are MACs under the audit key, which the
        first append creates. ``ValueError`` (nothing appended) when ``body`` does
        not name ``answer_id`` or the answer is already recorded; ``MalformedHead``
        when the head cannot be read, and ``UntrustedHead`` when the key does not
        vouch for it. Contract: tests/contract/test_audit_log_contract.py.
        """
        ...

    def get(self, answer_id: str) -> AuditEntry | None:
        """The record whose body names ``answer_id``; ``None`` when there is none."""
        ...

    def entries(self) -> Iterator[AuditEntry]:
        """Every record, oldest first."""
        ...

    def head(self) -> AuditHead | None:
        """The stored head (record count, last hash, first keyed record, its MAC);
        ``None`` when none is stored; ``MalformedHead`` when it cannot be read."""
        ...

    def key(self) -> AuditKey:
        """The audit key as it is now, never creating one (a log nothing was
        appended to has none)."""
        ...

    def snapshot(self) -> AbstractContextManager[AuditSnapshot]:
        """The records and the head as one consistent state, for verifying the chain
        while other servers append: read ``head`` then ``entries`` separately and an
        append in between leaves records past the head, which reads as tampering."""
        ...


class TrustMetrics(Protocol):
    """The trust counters and stage timings (exposed at /metrics by the HTTP layer)."""

    def answer(self, outcome: str) -> None:
        """``accepted`` or a degraded reason."""
        ...

    def rejection(self, reason: str) -> None: ...

    def resolution(self, state: str) -> None: ...

    def support(self, label: str) -> None:
        """A segment shown in an answer, by its support label."""
        ...

    def display_denial(self) -> None: ...

    def fabricated_link(self) -> None:
        """An href that did not come from the resolver was about to be shown (must stay 0)."""
        ...

    def stage(self, name: str, seconds: float) -> None:
        """search, selection, answerability, generation, validation, support or resolution."""
        ...

    def answerability(self, score: float) -> None:
        """An answerability decision's score (the best passage's, in [0, 1])."""
        ...
