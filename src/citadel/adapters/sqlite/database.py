"""The SQLite database: connections, the single writer, and a change generation.

Reads use one connection per thread; writes go through one connection under
a lock, each in a single transaction (WAL mode), so a crash never leaves a
partial write visible. Every write bumps a generation number, which lets
in-memory caches (the dense matrix) notice changes made by any process.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from citadel.adapters.sqlite.schema import SCHEMA, SCHEMA_VERSION
from citadel.adapters.sqlite.upgrade import upgrade
from citadel.app.errors import AppError

_BUSY_TIMEOUT_S = 30.0


class SchemaMismatch(AppError):
    """The database was made by another version of citadel's schema."""


class Database:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        with self._write_lock:
            # An older file is upgraded in place first (upgrade.py); then the schema
            # adds whatever a file lacks.
            upgrade(self._writer)
            self._writer.executescript(SCHEMA)
            self._writer.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            self._writer.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', '0')"
            )
            (found,) = self._writer.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            self._writer.commit()
        if int(found) != SCHEMA_VERSION:
            raise SchemaMismatch(
                f"{path} has schema {found}, this citadel needs {SCHEMA_VERSION};"
                " re-ingest into a new CITADEL_HOME"
            )

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        self._connections.append(conn)
        return conn

    @property
    def reader(self) -> sqlite3.Connection:
        """This thread's read connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self, *, library: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction; it bumps the generation as part of the same commit.

        ``library=False`` is for writes that no library cache derives from (users, the
        audit log): they leave the generation alone, so the dense matrix stays loaded.
        """
        with self._write_lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                if library:
                    conn.execute(
                        "UPDATE meta SET value = CAST(value AS INTEGER) + 1"
                        " WHERE key = 'generation'"
                    )
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def generation(self) -> int:
        (value,) = self.reader.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(value)

    def close(self) -> None:
        for conn in self._connections:
            conn.close()
        self._connections.clear()
        self._local = threading.local()
