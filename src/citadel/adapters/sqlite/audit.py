"""The audit log in SQLite: one row per answer, chained, with the head kept in meta.

Rows are read back exactly as stored, whatever has been done to the file: a
text column holding another type, or bytes that are not UTF-8, comes back as a
value that verification rejects instead of raising. A head that does not read
as ``count:hash`` raises ``MalformedHead``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from citadel.adapters.sqlite.database import Database
from citadel.domain.audit import (
    GENESIS,
    AuditEntry,
    MalformedHead,
    body_answer_id,
    chain_hash,
    format_head,
    parse_head,
)

_COLUMNS = "seq, answer_id, body, prev_hash, hash"
_TEXT_COLUMNS = ("answer_id", "body", "prev_hash", "hash")
# Each text column with its stored type, as bytes: fetching a column as TEXT
# raises on bytes that are not UTF-8, and would pass a BLOB or a number unseen.
_SELECT = "seq, " + ", ".join(f"typeof({c}), CAST({c} AS BLOB)" for c in _TEXT_COLUMNS)
_HEAD_QUERY = "SELECT value FROM meta WHERE key = 'audit_head'"
_RECORDED = "SELECT 1 FROM audit_log WHERE answer_id = ?"
_BY_BODY = (
    f"SELECT {_SELECT} FROM audit_log"
    " WHERE CASE WHEN typeof(body) = 'text' AND json_valid(body)"
    " THEN json_extract(body, '$.answer_id') END = ? ORDER BY seq"
)


class SqliteAuditLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, answer_id: str, body: str) -> AuditEntry:
        if body_answer_id(body) != answer_id:
            raise ValueError(f"the record's body does not name answer {answer_id}")
        with self._db.transaction(library=False) as conn:
            # answer_id is UNIQUE too; asked first (inside the write transaction) so that
            # a second record is refused with the port's error, not the driver's.
            if conn.execute(_RECORDED, (answer_id,)).fetchone() is not None:
                raise ValueError(f"answer {answer_id} is already recorded")
            count, last = _head(conn)
            seq = count + 1
            digest = chain_hash(last, body)
            conn.execute(
                f"INSERT INTO audit_log({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (seq, answer_id, body, last, digest),
            )
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('audit_head', ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (format_head(seq, digest),),
            )
        return AuditEntry(seq, answer_id, body, last, digest)

    def get(self, answer_id: str) -> AuditEntry | None:
        """The record whose body names ``answer_id``.

        The answer_id column is the index, not the authority: a row filed under
        ``answer_id`` whose body names another answer is not returned, and a
        record whose column was rewritten is still found by its body.
        """
        reader = self._db.reader
        for query in (f"SELECT {_SELECT} FROM audit_log WHERE answer_id = ?", _BY_BODY):
            for row in reader.execute(query, (answer_id,)).fetchall():
                entry = _entry(row)
                if body_answer_id(entry.body) == answer_id:
                    return entry
        return None

    def entries(self) -> Iterator[AuditEntry]:
        cursor = self._db.reader.execute(f"SELECT {_SELECT} FROM audit_log ORDER BY seq")
        for row in cursor:
            yield _entry(row)

    def head(self) -> tuple[int, str]:
        """The stored head; ``MalformedHead`` when it does not read as ``count:hash``,
        or is missing from a log that has records."""
        return _head(self._db.reader)


def _head(conn: sqlite3.Connection) -> tuple[int, str]:
    row = conn.execute(_HEAD_QUERY).fetchone()
    if row is None:
        if conn.execute("SELECT EXISTS(SELECT 1 FROM audit_log)").fetchone()[0]:
            raise MalformedHead("the log has records but no head")
        return 0, GENESIS
    return parse_head(row[0])


def _entry(row: tuple[object, ...]) -> AuditEntry:
    seq, *cells = row
    answer_id, body, prev_hash, digest = (
        _text(cells[i], cells[i + 1]) for i in range(0, len(cells), 2)
    )
    assert isinstance(seq, int)  # INTEGER PRIMARY KEY: the rowid
    return AuditEntry(seq, answer_id, body, prev_hash, digest)


def _text(kind: object, raw: object) -> str:
    """A stored text column as written. Bytes that are not UTF-8 are decoded with
    replacement characters (they can no longer hash as written); a value stored
    as another type becomes a marker that no check accepts."""
    if kind == "text" and isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return f"\x00stored as {kind}"
