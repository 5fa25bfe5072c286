"""Stored vectors in PostgreSQL (pgvector): the cache keyed by content, coverage, and what
is left to embed. Searching them is ``dense.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from citadel.adapters.postgres.database import Connection, Database
from citadel.app.ports import UnembeddedChunk, VectorCoverage, Vectors


class PostgresEmbeddings:
    """The stored half of the ``VectorIndex`` port (search is ``PostgresDense``)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._coverage: dict[str, tuple[int, VectorCoverage]] = {}

    def cached_vectors(self, keys: Sequence[str], model: str) -> dict[str, Vectors]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT key, vector FROM embeddings WHERE model = %s AND key = ANY(%s)",
                (model, unique),
                binary=True,
            ).fetchall()
        return {key: np.asarray(vector, dtype=np.float32) for key, vector in rows}

    def vector_coverage(self, model: str) -> VectorCoverage:
        # Counted once per generation, as SQLite's: every CLI search and /readyz asks.
        generation = self._db.generation()
        cached = self._coverage.get(model)
        if cached is not None and cached[0] == generation:
            return cached[1]
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT count(*), count(e.key) FROM chunks c"
                " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
                " AND c.version = s.current_version"
                " LEFT JOIN embeddings e ON e.key = c.embed_key AND e.model = %s"
                " WHERE NOT s.deleted",
                (model,),
            ).fetchone()
        chunks, covered = row if row is not None else (0, 0)
        coverage = VectorCoverage(chunks=int(chunks), missing=int(chunks) - int(covered))
        if len(self._coverage) > 8:
            self._coverage.clear()
        self._coverage[model] = (generation, coverage)
        return coverage

    def unembedded_chunks(
        self,
        model: str,
        source_id: str | None = None,
        limit: int | None = None,
        *,
        tenant: str | None = None,
    ) -> Sequence[UnembeddedChunk]:
        only = ""
        args: list[object] = []
        if tenant is not None:
            only += " AND s.tenant = %s"
            args.append(tenant)
        if source_id is not None:
            only += " AND s.source_id = %s"
            args.append(source_id)
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id, s.title, c.section_path, c.text FROM chunks c"
                " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
                f" AND c.version = s.current_version WHERE NOT s.deleted{only} AND NOT EXISTS"
                " (SELECT 1 FROM embeddings e WHERE e.key = c.embed_key AND e.model = %s)"
                ' ORDER BY c.tenant COLLATE "C", c.source_id COLLATE "C", c.ordinal LIMIT %s',
                [*args, model, limit],
            ).fetchall()
        return [
            UnembeddedChunk(
                chunk_id=row[0],
                title=row[1],
                section_path=tuple(json.loads(row[2])),
                text=row[3],
            )
            for row in rows
        ]

    def store_vectors(
        self, model: str, chunk_ids: Sequence[str], keys: Sequence[str], matrix: Vectors
    ) -> None:
        if matrix.ndim != 2 or not len(chunk_ids) == len(keys) == matrix.shape[0]:
            raise ValueError("one key and one vector row per chunk id")
        with self._db.transaction() as conn:
            # chunk_id is unique: a shortfall is an unknown id, and raising here rolls
            # the whole write back.
            updated = conn.execute(
                "UPDATE chunks c SET embed_key = u.key"
                " FROM unnest(%s::text[], %s::text[]) AS u(key, chunk_id)"
                " WHERE c.chunk_id = u.chunk_id",
                (list(keys), list(chunk_ids)),
            ).rowcount
            if updated != len(set(chunk_ids)):
                raise ValueError("unknown chunk ids: nothing was stored")
            insert_vectors(conn, model, keys, matrix)


def insert_vectors(conn: Connection, model: str, keys: Sequence[str], matrix: Vectors) -> None:
    """One row per key (pgvector stores float32 as given); a key already stored keeps
    its vector."""
    if not len(keys):
        return
    rows = np.asarray(matrix, dtype=np.float32)
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO embeddings(key, model, vector) VALUES (%s, %s, %b)"
            " ON CONFLICT (key, model) DO NOTHING",
            [(key, model, row) for key, row in zip(keys, rows, strict=True)],
        )
