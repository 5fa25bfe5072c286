"""The audit log in SQLite: one row per answer, chained, with the head kept in meta.

The chain's key is not in the database: it is a file (``audit.key`` in
CITADEL_HOME, 32 random bytes, mode 0600) that the first append creates, so
that whoever can write the database cannot make a record or a head that
verifies (``citadel.domain.audit`` has the threat model).

Rows are read back exactly as stored, whatever has been done to the file: a
text column holding another type, or bytes that are not UTF-8, comes back as a
value that verification rejects instead of raising. A head that does not read
as ``count:hash`` raises ``MalformedHead``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from citadel.adapters.key_files import AuditKeyFile
from citadel.adapters.sqlite.database import Database
from citadel.app.ports import AuditSnapshot
from citadel.domain.audit_chain import (
    AuditEntry,
    AuditHead,
    AuditKey,
    MalformedHead,
    UntrustedHead,
    body_answer_id,
    format_head,
    next_link,
    parse_head,
    sealed,
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
    def __init__(self, db: Database, key_file: Path | None = None) -> None:
        """``key_file``: where the audit key is kept (bootstrap: CITADEL_HOME/audit.key);
        by default ``audit.key`` beside the database."""
        self._db = db
        self._keys = AuditKeyFile(key_file or db.path.parent / "audit.key")

    def append(self, answer_id: str, body: str) -> AuditEntry:
        if body_answer_id(body) != answer_id:
            raise ValueError(f"the record's body does not name answer {answer_id}")
        created = False
        try:
            with self._db.transaction(library=False) as conn:
                # answer_id is UNIQUE too; asked first (inside the write transaction) so
                # that a second record is refused with the port's error, not the driver's.
                if conn.execute(_RECORDED, (answer_id,)).fetchone() is not None:
                    raise ValueError(f"answer {answer_id} is already recorded")
                head = _head(conn)
                if head is None and _has_records(conn):
                    raise MalformedHead("the log has records but no head")
                secret, created = self._secret(head)
                entry, after = sealed(
                    next_link(head, secret, key_is_new=created), secret, answer_id, body
                )
                conn.execute(
                    f"INSERT INTO audit_log({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                    (entry.seq, answer_id, body, entry.prev_hash, entry.hash),
                )
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('audit_head', ?)"
                    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (format_head(after),),
                )
        except BaseException:
            if created:  # nothing was keyed with it: the next append makes the key again
                self._keys.discard()
            raise
        return entry

    def _secret(self, head: AuditHead | None) -> tuple[bytes, bool]:
        """The key to append with, and whether it was made for this append (only ever
        for a log that was never keyed: a keyed log without its key is refused)."""
        key = self._keys.read()
        if key.secret is not None:
            return key.secret, False
        if key.trouble:
            raise ValueError(f"the audit key {key.where} cannot be used ({key.trouble})")
        if head is not None and head.keyed:
            raise UntrustedHead(
                f"the log is keyed, but its audit key is missing ({key.where}): restore it"
                " from a backup (a new key could never verify the records made with the old one)"
            )
        return self._keys.create()

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

    @contextmanager
    def snapshot(self) -> Iterator[AuditSnapshot]:
        """One read transaction on this thread's reader: in WAL mode it sees the
        database as of its first read (the head), whatever is appended meanwhile."""
        conn = self._db.reader
        owned = not conn.in_transaction
        if owned:
            conn.execute("BEGIN")
        try:
            head: AuditHead | MalformedHead | None
            try:
                head = _head(conn)
            except MalformedHead as exc:
                head = exc
            cursor = conn.execute(f"SELECT {_SELECT} FROM audit_log ORDER BY seq")
            yield AuditSnapshot((_entry(row) for row in cursor), head)
        finally:
            if owned:
                conn.execute("COMMIT")

    def head(self) -> AuditHead | None:
        """The stored head; ``None`` when none is stored; ``MalformedHead`` when it
        cannot be read."""
        return _head(self._db.reader)

    def key(self) -> AuditKey:
        return self._keys.read()


def _head(conn: sqlite3.Connection) -> AuditHead | None:
    row = conn.execute(_HEAD_QUERY).fetchone()
    return None if row is None else parse_head(row[0])


def _has_records(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("SELECT EXISTS(SELECT 1 FROM audit_log)").fetchone()[0])


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
