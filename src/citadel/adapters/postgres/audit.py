"""The audit log in PostgreSQL: one chain for every server on the database.

The same records, hashes and head as SQLite's log (``adapters/sqlite/audit.py``): a
row per answer in ``audit_log``, chained under the audit key, the head in meta's
``audit_head`` row. Appends are serialised in the database: each takes a
transaction-scoped advisory lock before it reads the head, so appends from any number
of processes and servers run one at a time and form one chain (the lock is released
with the commit that writes the record and the new head together). In READ
COMMITTED, which the pool's connections use, the statements after the lock see
every append committed before it.

The key is not in the database: it is a file (``audit.key`` in CITADEL_HOME, made
by the first append, mode 0600). Every server appending to one database needs the
same key file: a server whose home has none refuses to append after a keyed head
(``UntrustedHead``) rather than make a key that could never verify the chain; copy
the first server's key to the others (or share the directory) before they serve.

The table refuses UPDATE, DELETE and TRUNCATE itself (triggers, ``schema_records.py``).
Columns are read back as text whatever has been done to their type, so a column
altered to another type comes back as a value verification rejects.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from citadel.adapters.key_files import AuditKeyFile
from citadel.adapters.postgres.database import Connection, Database
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

# Any fixed number, distinct from the schema's: every append takes it (pg_advisory_xact_lock).
APPEND_LOCK = 0x61_75_64_69_74_5F_6C_67  # "audit_lg"
_PAGE = 1000
_COLUMNS = "seq, answer_id, body, prev_hash, hash"
_SELECT = "seq::bigint, answer_id::text, body::text, prev_hash::text, hash::text"
_HEAD_QUERY = "SELECT value FROM meta WHERE key = 'audit_head'"
_RECORDED = "SELECT 1 FROM audit_log WHERE answer_id = %s"
# A record filed under another id is looked for among the bodies that hold the id as
# canonical JSON writes it (a quoted string), then checked by parsing the body.
_BY_BODY = f"SELECT {_SELECT} FROM audit_log WHERE strpos(body::text, %s) > 0 ORDER BY seq"


class PostgresAuditLog:
    def __init__(self, db: Database, key_file: Path) -> None:
        """``key_file``: where the audit key is kept (bootstrap: CITADEL_HOME/audit.key)."""
        self._db = db
        self._keys = AuditKeyFile(key_file)

    def append(self, answer_id: str, body: str) -> AuditEntry:
        if body_answer_id(body) != answer_id:
            raise ValueError(f"the record's body does not name answer {answer_id}")
        keyed: AuditEntry | None = None  # the record, when the key was made for it
        try:
            with self._db.transaction(library=False) as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
                entry, made = self._append(conn, answer_id, body)
                keyed = entry if made else None
            return entry
        except BaseException:
            # The commit failed, or its outcome was lost with the connection: the key made
            # for this append goes only once the record is known not to be stored (a key
            # removed under a committed record could never verify it again).
            if keyed is not None and self._stored(keyed) is False:
                self._keys.discard()
            raise

    def _stored(self, entry: AuditEntry) -> bool | None:
        """Whether ``entry`` is in the log; ``None`` when the database cannot say."""
        try:
            with self._db.read() as conn:
                row = conn.execute(
                    "SELECT hash FROM audit_log WHERE seq = %s", (entry.seq,)
                ).fetchone()
        except Exception:
            return None
        return row is not None and row[0] == entry.hash

    def _append(self, conn: Connection, answer_id: str, body: str) -> tuple[AuditEntry, bool]:
        # answer_id is UNIQUE too; asked first (under the lock) so that a second record
        # is refused with the port's error, not the driver's.
        if conn.execute(_RECORDED, (answer_id,)).fetchone() is not None:
            raise ValueError(f"answer {answer_id} is already recorded")
        head = _head(conn)
        if head is None and _has_records(conn):
            raise MalformedHead("the log has records but no head")
        secret, created = self._secret(head)
        try:
            entry, after = sealed(
                next_link(head, secret, key_is_new=created), secret, answer_id, body
            )
            conn.execute(
                f"INSERT INTO audit_log({_COLUMNS}) VALUES (%s, %s, %s, %s, %s)",
                (entry.seq, answer_id, body, entry.prev_hash, entry.hash),
            )
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('audit_head', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (format_head(after),),
            )
        except BaseException:
            if created:  # removed under the lock: no other append has read it yet
                self._keys.discard()
            raise
        return entry, created

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
                " from a backup, or copy it from the server that made it (a new key could"
                " never verify the records made with the old one)"
            )
        return self._keys.create()

    def get(self, answer_id: str) -> AuditEntry | None:
        """The record whose body names ``answer_id``.

        The answer_id column is the index, not the authority: a row filed under
        ``answer_id`` whose body names another answer is not returned, and a
        record whose column was rewritten is still found by its body.
        """
        quoted = json.dumps(answer_id, ensure_ascii=False)
        with self._db.read() as conn:
            for query, value in (
                (f"SELECT {_SELECT} FROM audit_log WHERE answer_id = %s", answer_id),
                (_BY_BODY, quoted),
            ):
                for row in conn.execute(query, (value,)).fetchall():
                    entry = _entry(row)
                    if body_answer_id(entry.body) == answer_id:
                        return entry
        return None

    def entries(self) -> Iterator[AuditEntry]:
        """Every record by ``seq``, read a page at a time (no connection is held
        between pages, so a reader that stops early holds nothing)."""
        query = f"SELECT {_SELECT} FROM audit_log ORDER BY seq LIMIT {_PAGE}"
        after: tuple[int, ...] = ()
        while True:
            with self._db.read() as conn:
                rows = conn.execute(query, after).fetchall()
            for row in rows:
                yield _entry(row)
            if len(rows) < _PAGE:
                return
            query = f"SELECT {_SELECT} FROM audit_log WHERE seq > %s ORDER BY seq LIMIT {_PAGE}"
            after = (int(rows[-1][0]),)

    def head(self) -> AuditHead | None:
        """The stored head; ``None`` when none is stored; ``MalformedHead`` when it
        cannot be read."""
        with self._db.read() as conn:
            return _head(conn)

    @contextmanager
    def snapshot(self) -> Iterator[AuditSnapshot]:
        """One REPEATABLE READ transaction: the head and every page of records from
        the same snapshot, whatever other servers append meanwhile."""
        with self._db.read(snapshot=True) as conn:
            head: AuditHead | MalformedHead | None
            try:
                head = _head(conn)
            except MalformedHead as exc:
                head = exc
            yield AuditSnapshot(_pages(conn), head)

    def key(self) -> AuditKey:
        return self._keys.read()


def _pages(conn: Connection) -> Iterator[AuditEntry]:
    """Every record by ``seq`` on ``conn``, a page at a time."""
    query = f"SELECT {_SELECT} FROM audit_log ORDER BY seq LIMIT {_PAGE}"
    after: tuple[int, ...] = ()
    while True:
        rows = conn.execute(query, after).fetchall()
        for row in rows:
            yield _entry(row)
        if len(rows) < _PAGE:
            return
        query = f"SELECT {_SELECT} FROM audit_log WHERE seq > %s ORDER BY seq LIMIT {_PAGE}"
        after = (int(rows[-1][0]),)


def _head(conn: Connection) -> AuditHead | None:
    row = conn.execute(_HEAD_QUERY).fetchone()
    return None if row is None else parse_head(row[0])


def _has_records(conn: Connection) -> bool:
    row = conn.execute("SELECT EXISTS(SELECT 1 FROM audit_log)").fetchone()
    return bool(row and row[0])


def _entry(row: tuple[object, ...]) -> AuditEntry:
    seq, answer_id, body, prev_hash, digest = row
    assert isinstance(seq, int)  # seq::bigint
    return AuditEntry(seq, _text(answer_id), _text(body), _text(prev_hash), _text(digest))


def _text(value: object) -> str:
    """A column cast to text. Bytes come only from a database whose encoding is not
    UTF-8 (decoded with replacement characters: they can no longer hash as written);
    a NULL (once NOT NULL was dropped) becomes a marker that no check accepts."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "\x00stored as NULL" if value is None else str(value)
