"""Approximate dense search on PostgreSQL: a pgvector HNSW index over one model's vectors.

``dense.py`` uses it once a library holds ``CITADEL_HNSW_MIN_VECTORS`` current vectors,
as the SQLite library uses hnswlib. The index is a partial expression index on
``embeddings`` (``vector::vector(dim)`` with ``vector_cosine_ops``, ``WHERE model =``
the model), made by the first search that needs it (one server builds it; the
others wait on its lock, then find it). With ``background`` (long-running servers) it
is built in a thread by ``CREATE INDEX CONCURRENTLY`` on a connection of its own,
which blocks neither ingests nor searches: until it is valid, ``ensure`` says no
and the search is exact; one server builds (a session advisory lock), the others
find it valid later. It is a candidate generator only: it returns
embedding keys, which ``dense.py`` maps to the current rows the actor may read and
re-scores exactly, so a stale or foreign key can cost recall but is never returned.
Iterative scans (pgvector 0.8, ``relaxed_order``) keep reading the graph until
enough keys are found.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import weakref

import numpy as np
import psycopg
from psycopg import sql

from citadel.adapters.postgres.database import Connection, Database
from citadel.app.ports import Vectors

# Graph degree, build beam and search beam: hnswlib's in the SQLite library (hnsw.py).
M = 16
EF_CONSTRUCTION = 200
EF_SEARCH = 200
_MAX_SCAN_TUPLES = 100_000
# After a failed background build, searches stay exact this long before another try.
RETRY_AFTER_S = 60.0
# pgvector builds the graph in memory while it fits in maintenance_work_mem and goes on
# on disk, many times slower, once it does not (the server's default is 64 MB; the
# graph of 100k 384-d vectors is about 195 MiB). A build asks for what its graph needs:
# per vector its float32 values plus about this much for neighbours and tuple ids
# (measured: 195 MiB / 100k vectors of 1,536 bytes leaves ~510 bytes), doubled for
# slack, and never more than BUILD_MEMORY_CAP_MB (past it the build spills, as before).
_GRAPH_BYTES_PER_VECTOR = 512
BUILD_MEMORY_CAP_MB = 2048
_log = logging.getLogger(__name__)


def index_name(model: str, dimension: int) -> str:
    digest = hashlib.blake2b(f"{model}\x1f{dimension}".encode(), digest_size=8).hexdigest()
    return f"embeddings_hnsw_{digest}"


class PgvectorIndex:
    def __init__(self, db: Database, *, background: bool = False) -> None:
        self._db = db
        self._background = background
        self._ready: set[str] = set()
        self._building: dict[str, threading.Thread] = {}
        self._failed_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._tuned: weakref.WeakSet[Connection] = weakref.WeakSet()

    def ensure(self, model: str, dimension: int) -> bool:
        """Whether the model's index can answer now. Without ``background`` it is made
        here if missing (outside any library transaction: it changes no row, so no
        server's search indexes need reading again); with it, a thread makes it and
        this says no until the index is valid."""
        name = index_name(model, dimension)
        if name in self._ready:
            return True
        if not self._background:
            with self._db.transaction(library=False) as conn:
                conn.execute(_build_memory(conn, model, dimension, local=True))
                conn.execute(_create(name, model, dimension, concurrently=False))
            self._ready.add(name)
            return True
        if self._valid(name):
            self._ready.add(name)
            return True
        with self._lock:
            thread = self._building.get(name)
            failed = self._failed_at.get(name)
            retry = failed is None or time.monotonic() - failed >= RETRY_AFTER_S
            if (thread is None or not thread.is_alive()) and retry:
                thread = threading.Thread(
                    target=self._build,
                    args=(name, model, dimension),
                    name=f"citadel-pgvector-{name}",
                    daemon=True,
                )
                self._building[name] = thread
                thread.start()
        return False

    def wait(self, timeout_s: float | None = None) -> None:
        """Until the builds started so far end (tests; a server never waits)."""
        with self._lock:
            threads = list(self._building.values())
        for thread in threads:
            thread.join(timeout_s)

    def _valid(self, name: str) -> bool:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
                " WHERE c.relname = %s",
                (name,),
            ).fetchone()
        return bool(row and row[0])

    def _build(self, name: str, model: str, dimension: int) -> None:
        lock = int.from_bytes(
            hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True
        )
        began = time.perf_counter()
        try:
            # Its own connection: a build of minutes must not hold one of the pool's.
            with psycopg.connect(self._db.url, autocommit=True) as conn:
                (mine,) = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone() or (
                    False,
                )
                if not mine:
                    return  # another server builds it; a later search finds it valid
                try:
                    # A build that died leaves an invalid index behind, which IF NOT
                    # EXISTS would keep; no one else builds it while the lock is held.
                    if not self._valid(name):
                        conn.execute(
                            sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                                sql.Identifier(name)
                            )
                        )
                    conn.execute(_build_memory(conn, model, dimension, local=False))
                    conn.execute(_create(name, model, dimension, concurrently=True))
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (lock,))
            _log.info("pgvector HNSW index %s built in %.1f s", name, time.perf_counter() - began)
        except psycopg.Error as error:
            with self._lock:
                self._failed_at[name] = time.monotonic()
            # The searches stay exact; one after RETRY_AFTER_S tries again.
            _log.warning("pgvector HNSW index %s not built: %s", name, type(error).__name__)

    def nearest_keys(self, vector: Vectors, model: str, k: int) -> list[str]:
        """Up to ``k`` embedding keys nearest ``vector`` by cosine distance (approximate)."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        dimension = int(query.size)
        # The model as a literal: a partial index's predicate must be provable from the
        # query text (a bound parameter would leave the planner a sequential scan).
        search = sql.SQL(
            "SELECT key FROM embeddings WHERE model = {model}"
            " ORDER BY vector::vector({dim}) <=> %b::vector({dim}) LIMIT %s"
        ).format(dim=sql.Literal(dimension), model=sql.Literal(model))
        with self._db.read() as conn:
            # One statement, one round trip: the graph's settings are the session's,
            # set once per pooled connection (they touch nothing but HNSW scans).
            if conn not in self._tuned:
                conn.execute(_SESSION_SETTINGS)
                self._tuned.add(conn)
            rows = conn.execute(search, (query, k), prepare=False).fetchall()
        return [str(row[0]) for row in rows]


# Without parameters several statements go as one query.
_SESSION_SETTINGS = (
    f"SET hnsw.ef_search = {EF_SEARCH}; SET hnsw.iterative_scan = relaxed_order;"
    f" SET hnsw.max_scan_tuples = {_MAX_SCAN_TUPLES}"
).encode()


def build_memory_mb(vectors: int, dimension: int) -> int:
    """The ``maintenance_work_mem`` (MB) a graph of ``vectors`` vectors builds in memory with."""
    graph = vectors * (4 * dimension + _GRAPH_BYTES_PER_VECTOR)
    return max(64, min(BUILD_MEMORY_CAP_MB, -(-2 * graph // (1 << 20))))


def _build_memory(conn: Connection, model: str, dimension: int, *, local: bool) -> sql.Composed:
    """``SET [LOCAL] maintenance_work_mem`` for a build over the model's stored vectors."""
    row = conn.execute("SELECT count(*) FROM embeddings WHERE model = %s", (model,)).fetchone()
    megabytes = build_memory_mb(int(row[0]) if row else 0, dimension)
    return sql.SQL("SET {scope} maintenance_work_mem = {mb}").format(
        scope=sql.SQL("LOCAL" if local else "SESSION"), mb=sql.Literal(f"{megabytes}MB")
    )


def _create(name: str, model: str, dimension: int, *, concurrently: bool) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX {how} IF NOT EXISTS {name} ON embeddings USING hnsw"
        " ((vector::vector({dim})) vector_cosine_ops)"
        " WITH (m = {m}, ef_construction = {ef}) WHERE model = {model}"
    ).format(
        how=sql.SQL("CONCURRENTLY" if concurrently else ""),
        name=sql.Identifier(name),
        dim=sql.Literal(dimension),
        m=sql.Literal(M),
        ef=sql.Literal(EF_CONSTRUCTION),
        model=sql.Literal(model),
    )
