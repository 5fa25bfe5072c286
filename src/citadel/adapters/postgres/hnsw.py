"""Approximate dense search on PostgreSQL: a pgvector HNSW index over one model's vectors.

``dense.py`` uses it once a library holds ``CITADEL_HNSW_MIN_VECTORS`` current vectors,
as the SQLite library uses hnswlib. The index is a partial expression index on
``embeddings`` (``vector::vector(dim)`` with ``vector_cosine_ops``, ``WHERE model =``
the model), made by the first search that needs it (one server builds it; the
others wait on its lock, then find it). It is a candidate generator only: it returns
embedding keys, which ``dense.py`` maps to the current rows the actor may read and
re-scores exactly, so a stale or foreign key can cost recall but is never returned.
Iterative scans (pgvector 0.8, ``relaxed_order``) keep reading the graph until
enough keys are found.
"""

from __future__ import annotations

import hashlib

import numpy as np
from psycopg import sql

from citadel.adapters.postgres.database import Database
from citadel.app.ports import Vectors

# Graph degree, build beam and search beam: hnswlib's in the SQLite library (hnsw.py).
M = 16
EF_CONSTRUCTION = 200
EF_SEARCH = 200
_MAX_SCAN_TUPLES = 100_000


def index_name(model: str, dimension: int) -> str:
    digest = hashlib.blake2b(f"{model}\x1f{dimension}".encode(), digest_size=8).hexdigest()
    return f"embeddings_hnsw_{digest}"


class PgvectorIndex:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._ready: set[str] = set()

    def ensure(self, model: str, dimension: int) -> None:
        """The model's index, made if missing (outside any library transaction: it
        changes no row, so no server's search indexes need reading again)."""
        name = index_name(model, dimension)
        if name in self._ready:
            return
        statement = sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw"
            " ((vector::vector({dim})) vector_cosine_ops)"
            " WITH (m = {m}, ef_construction = {ef}) WHERE model = {model}"
        ).format(
            name=sql.Identifier(name),
            dim=sql.Literal(dimension),
            m=sql.Literal(M),
            ef=sql.Literal(EF_CONSTRUCTION),
            model=sql.Literal(model),
        )
        with self._db.transaction(library=False) as conn:
            conn.execute(statement)
        self._ready.add(name)

    def nearest_keys(self, vector: Vectors, model: str, k: int) -> list[str]:
        """Up to ``k`` embedding keys nearest ``vector`` by cosine distance (approximate)."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        dimension = int(query.size)
        self.ensure(model, dimension)
        # The model as a literal: a partial index's predicate must be provable from the
        # query text (a bound parameter would leave the planner a sequential scan).
        search = sql.SQL(
            "SELECT key FROM embeddings WHERE model = {model}"
            " ORDER BY vector::vector({dim}) <=> %b::vector({dim}) LIMIT %s"
        ).format(dim=sql.Literal(dimension), model=sql.Literal(model))
        with self._db.read(snapshot=True) as conn:
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(EF_SEARCH)))
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute(
                sql.SQL("SET LOCAL hnsw.max_scan_tuples = {}").format(sql.Literal(_MAX_SCAN_TUPLES))
            )
            rows = conn.execute(search, (query, k), prepare=False).fetchall()
        return [str(row[0]) for row in rows]
