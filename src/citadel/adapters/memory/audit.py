"""The in-memory audit log: the same chaining and the same rules as SQLite's, in a list."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from citadel.domain.audit import GENESIS, AuditEntry, body_answer_id, chain_hash


class InMemoryAuditLog:
    """The audit log fake: a body must name its answer, an answer is recorded once."""

    def __init__(self) -> None:
        self._entries: list[AuditEntry] = []
        self._lock = threading.Lock()

    def append(self, answer_id: str, body: str) -> AuditEntry:
        if body_answer_id(body) != answer_id:
            raise ValueError(f"the record's body does not name answer {answer_id}")
        with self._lock:
            if any(e.answer_id == answer_id for e in self._entries):
                raise ValueError(f"answer {answer_id} is already recorded")
            last = self._entries[-1].hash if self._entries else GENESIS
            entry = AuditEntry(
                len(self._entries) + 1, answer_id, body, last, chain_hash(last, body)
            )
            self._entries.append(entry)
            return entry

    def get(self, answer_id: str) -> AuditEntry | None:
        with self._lock:
            return next((e for e in self._entries if e.answer_id == answer_id), None)

    def entries(self) -> Iterator[AuditEntry]:
        with self._lock:
            return iter(list(self._entries))

    def head(self) -> tuple[int, str]:
        with self._lock:
            return len(self._entries), self._entries[-1].hash if self._entries else GENESIS
