"""Originals kept in the PostgreSQL database, so every server on it sees the same ones.

A version's original is one ``originals`` row (its sha256 and size) and its bytes in
``original_parts``, 1 MiB per row (``bytea``, stored uncompressed: a PDF's streams
are compressed already). A keep is one transaction that streams the file through
COPY, never the whole file in memory; it replaces that version's original and drops
those of versions no longer retained. Deleting a source or retention, from any
server, reaches every server, since every server reads from here.

The renderer needs a file: ``find`` asks the database first (what was deleted is
never shown, even if a copy is still cached) and hands out the server's cached copy
(``OriginalCache``), filling it from one snapshot when it lacks that content (once:
concurrent requests for the same content wait for that one copy). The
server that forgets or prunes an original drops its own copy at once; every other
server drops its copy at its next ``sweep_deleted``: one when the store is made (a
server's start: what was deleted while it was down), then one every ``sweep_s`` on
a daemon thread of the store's own until ``close`` (so a deleted book leaves every
disk, not only the database, whether or not that server is asked for it again).

A keep racing with the source's delete on another server: the keep takes a share
lock on the source's row before it commits, which the delete's update waits for, so
either the keep sees the tombstone and writes nothing, or the delete's ``forget``
comes after the keep's commit and removes what it wrote.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from citadel.adapters.pages.original_cache import OriginalCache
from citadel.adapters.postgres.database import Connection, Database

PART_BYTES = 1 << 20
SWEEP_S = 60.0
_log = logging.getLogger(__name__)
_KEY = "tenant = %s AND source_id = %s"


class _Refused(Exception):
    """The source was deleted, or the version dropped, while its original was written."""


class PostgresOriginals:
    def __init__(self, db: Database, cache: OriginalCache, *, sweep_s: float = SWEEP_S) -> None:
        self._db = db
        self._cache = cache
        self._sweeping = threading.Lock()
        self._guard = threading.Lock()
        self._fills: dict[str, tuple[threading.Lock, int]] = {}
        self._closed = threading.Event()
        self._sweep_quietly()
        self._sweeper = threading.Thread(
            target=self._sweep_every, args=(sweep_s,), name="citadel-originals-sweep", daemon=True
        )
        self._sweeper.start()

    def close(self) -> None:
        """Stop the periodic sweep (before the database it reads is closed)."""
        self._closed.set()
        self._sweeper.join(timeout=10)

    def _sweep_every(self, sweep_s: float) -> None:
        while not self._closed.wait(sweep_s):
            self._sweep_quietly()

    def _sweep_quietly(self) -> None:
        # The cache is derived data: a sweep that fails (the database unreachable for
        # a while) is logged and tried again at the next one, never a failed start.
        try:
            self.sweep_deleted()
        except Exception as error:
            _log.warning("originals cache not swept: %s", type(error).__name__)

    def keep(
        self, tenant: str, source_id: str, version: int, file: Path, retained: Collection[int]
    ) -> None:
        try:
            with self._db.transaction(library=False) as conn:
                write_original(conn, tenant, source_id, version, file)
                if _gone(conn, tenant, source_id, version):
                    raise _Refused
                self._drop_unused(conn, _prune(conn, tenant, source_id, {*retained, version}))
        except _Refused:
            return

    def find(self, tenant: str, source_id: str, version: int) -> Path | None:
        found = self._row(tenant, source_id, version)
        if found is None:
            return None
        cached = self._cache.hit(*found)
        if cached is not None:
            return cached
        # One copy per content at a time: the other requests for it wait for that copy
        # rather than each reading the whole original from the database again.
        with self._filling(found[0]):
            cached = self._cache.hit(*found)
            if cached is not None:
                return cached
            with self._db.read(snapshot=True) as conn:
                # The row again, and the parts, in one snapshot: a concurrent keep or
                # forget of this version cannot mix parts of two originals.
                row = _original_row(conn, tenant, source_id, version)
                if row is None:
                    return None
                return self._cache.fill(*row, original_parts(conn, tenant, source_id, version))

    def _row(self, tenant: str, source_id: str, version: int) -> tuple[str, int] | None:
        with self._db.read() as conn:
            return _original_row(conn, tenant, source_id, version)

    @contextmanager
    def _filling(self, sha256: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._fills.get(sha256, (threading.Lock(), 0))
            self._fills[sha256] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._fills[sha256]
                if users == 1:
                    del self._fills[sha256]
                else:
                    self._fills[sha256] = (lock, users - 1)

    def has(self, tenant: str, source_id: str, version: int) -> bool:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT 1 FROM originals WHERE {_KEY} AND version = %s",
                (tenant, source_id, version),
            ).fetchone()
        return row is not None

    def prune(self, tenant: str, source_id: str, retained: Collection[int]) -> None:
        with self._db.transaction(library=False) as conn:
            dropped = _prune(conn, tenant, source_id, set(retained))
            self._drop_unused(conn, dropped)

    def forget(self, tenant: str, source_id: str) -> None:
        with self._db.transaction(library=False) as conn:
            rows = conn.execute(
                f"DELETE FROM originals WHERE {_KEY} RETURNING sha256", (tenant, source_id)
            ).fetchall()
            self._drop_unused(conn, {str(r[0]) for r in rows})

    def sweep_deleted(self) -> int:
        """Drop this server's cached copies of contents no original has any more (another
        server forgot or pruned them); how many were dropped."""
        if not self._sweeping.acquire(blocking=False):
            return 0  # another thread is at it
        try:
            cached = self._cache.hashes()
            if not cached:
                return 0
            with self._db.read() as conn:
                rows = conn.execute(
                    "SELECT DISTINCT sha256 FROM originals WHERE sha256 = ANY(%s)", (cached,)
                ).fetchall()
            gone = set(cached) - {str(r[0]) for r in rows}
            for sha256 in gone:
                self._cache.drop(sha256)
            return len(gone)
        finally:
            self._sweeping.release()

    def _drop_unused(self, conn: Connection, hashes: Collection[str]) -> None:
        """This server's cached copies of ``hashes`` that no original has any more
        (another server's copies are never served: its ``find`` asks first)."""
        for sha256 in hashes:
            used = conn.execute("SELECT 1 FROM originals WHERE sha256 = %s", (sha256,))
            if used.fetchone() is None:
                self._cache.drop(sha256)


def write_original(
    conn: Connection, tenant: str, source_id: str, version: int, file: Path
) -> tuple[str, int]:
    """Store ``file`` as that version's original in ``conn``'s transaction, replacing
    any; streamed in parts. Returns its sha256 and size (``migrate`` checks them)."""
    key = (tenant, source_id, version)
    conn.execute(f"DELETE FROM originals WHERE {_KEY} AND version = %s", key)
    conn.execute(
        "INSERT INTO originals (tenant, source_id, version, sha256, size)"
        " VALUES (%s, %s, %s, '', 0)",
        key,
    )
    digest, size = hashlib.sha256(), 0
    with (
        conn.cursor() as cursor,
        cursor.copy(
            "COPY original_parts (tenant, source_id, version, part, data)"
            " FROM STDIN (FORMAT BINARY)"
        ) as copy,
        file.open("rb") as handle,
    ):
        copy.set_types(["text", "text", "int4", "int4", "bytea"])
        part = 0
        while chunk := handle.read(PART_BYTES):
            copy.write_row((*key, part, chunk))
            digest.update(chunk)
            size += len(chunk)
            part += 1
    sha256 = digest.hexdigest()
    conn.execute(
        f"UPDATE originals SET sha256 = %s, size = %s WHERE {_KEY} AND version = %s",
        (sha256, size, *key),
    )
    return sha256, size


def _original_row(
    conn: Connection, tenant: str, source_id: str, version: int
) -> tuple[str, int] | None:
    row = conn.execute(
        f"SELECT sha256, size FROM originals WHERE {_KEY} AND version = %s",
        (tenant, source_id, version),
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def _gone(conn: Connection, tenant: str, source_id: str, version: int) -> bool:
    """Whether the registry says the source was deleted or the version dropped; the
    share lock holds a concurrent delete until this transaction ends."""
    source = conn.execute(
        f"SELECT deleted FROM sources WHERE {_KEY} FOR SHARE", (tenant, source_id)
    ).fetchone()
    if source is not None and bool(source[0]):
        return True
    kept = conn.execute(
        f"SELECT retained FROM source_versions WHERE {_KEY} AND version = %s",
        (tenant, source_id, version),
    ).fetchone()
    return kept is not None and not bool(kept[0])


def _prune(conn: Connection, tenant: str, source_id: str, kept: set[int]) -> set[str]:
    rows = conn.execute(
        f"DELETE FROM originals WHERE {_KEY} AND NOT (version = ANY(%s)) RETURNING sha256",
        (tenant, source_id, sorted(kept)),
    ).fetchall()
    return {str(r[0]) for r in rows}


def original_parts(conn: Connection, tenant: str, source_id: str, version: int) -> Iterator[bytes]:
    """The original's parts in order, one row at a time (one part in memory), in binary
    (text would send each part hex-encoded: twice the bytes, and a decode)."""
    part = 0
    while True:
        row = conn.execute(
            f"SELECT data FROM original_parts WHERE {_KEY} AND version = %s AND part = %s",
            (tenant, source_id, version, part),
            binary=True,
        ).fetchone()
        if row is None:
            return
        yield bytes(row[0])
        part += 1
