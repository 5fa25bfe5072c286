"""The audit log in SQLite: one row per answer, chained, with the head kept in meta."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from citadel.adapters.sqlite.database import Database
from citadel.domain.audit import GENESIS, AuditEntry, chain_hash

_COLUMNS = "seq, answer_id, body, prev_hash, hash"


class SqliteAuditLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, answer_id: str, body: str) -> AuditEntry:
        with self._db.transaction(library=False) as conn:
            count, last = _head(conn.execute("SELECT value FROM meta WHERE key = 'audit_head'"))
            seq = count + 1
            digest = chain_hash(last, body)
            conn.execute(
                f"INSERT INTO audit_log({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (seq, answer_id, body, last, digest),
            )
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('audit_head', ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (f"{seq}:{digest}",),
            )
        return AuditEntry(seq, answer_id, body, last, digest)

    def get(self, answer_id: str) -> AuditEntry | None:
        row = self._db.reader.execute(
            f"SELECT {_COLUMNS} FROM audit_log WHERE answer_id = ?", (answer_id,)
        ).fetchone()
        return AuditEntry(*row) if row else None

    def entries(self) -> Iterator[AuditEntry]:
        cursor = self._db.reader.execute(f"SELECT {_COLUMNS} FROM audit_log ORDER BY seq")
        for row in cursor:
            yield AuditEntry(*row)

    def head(self) -> tuple[int, str]:
        return _head(self._db.reader.execute("SELECT value FROM meta WHERE key = 'audit_head'"))


def _head(cursor: sqlite3.Cursor) -> tuple[int, str]:
    row = cursor.fetchone()
    if row is None:
        return 0, GENESIS
    count, _, digest = str(row[0]).partition(":")
    return int(count), digest
