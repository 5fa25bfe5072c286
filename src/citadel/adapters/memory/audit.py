"""The in-memory audit log: the same keyed chaining and the same rules as SQLite's, in a list.

Its key is made by the first append, as SQLite's key file is, and lives as long as
the log does.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from citadel.app.ports import AuditSnapshot
from citadel.domain.audit_chain import (
    KEY_BYTES,
    AuditEntry,
    AuditHead,
    AuditKey,
    body_answer_id,
    next_link,
    sealed,
)


class InMemoryAuditLog:
    """The audit log fake: a body must name its answer, an answer is recorded once."""

    def __init__(self) -> None:
        self._entries: list[AuditEntry] = []
        self._head: AuditHead | None = None
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    def append(self, answer_id: str, body: str) -> AuditEntry:
        if body_answer_id(body) != answer_id:
            raise ValueError(f"the record's body does not name answer {answer_id}")
        with self._lock:
            if any(e.answer_id == answer_id for e in self._entries):
                raise ValueError(f"answer {answer_id} is already recorded")
            new = self._secret is None
            secret = self._secret or secrets.token_bytes(KEY_BYTES)
            link = next_link(self._head, secret, key_is_new=new)
            entry, head = sealed(link, secret, answer_id, body)
            self._secret = secret
            self._entries.append(entry)
            self._head = head
            return entry

    def get(self, answer_id: str) -> AuditEntry | None:
        with self._lock:
            return next((e for e in self._entries if e.answer_id == answer_id), None)

    def entries(self) -> Iterator[AuditEntry]:
        with self._lock:
            return iter(list(self._entries))

    def head(self) -> AuditHead | None:
        with self._lock:
            return self._head

    def key(self) -> AuditKey:
        with self._lock:
            return AuditKey("memory", self._secret)

    @contextmanager
    def snapshot(self) -> Iterator[AuditSnapshot]:
        with self._lock:
            taken = AuditSnapshot(iter(list(self._entries)), self._head)
        yield taken
