"""Stored vectors in SQLite: the cache keyed by content, coverage, and what is left to embed.

Searching them is ``dense.py`` (exact) and ``hnsw.py`` (approximate).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np

from citadel.adapters.sqlite.database import Database
from citadel.app.ports import UnembeddedChunk, VectorCoverage, Vectors


class SqliteEmbeddings:
    """The stored half of the ``VectorIndex`` port (search is ``DenseSearch``)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._coverage: dict[str, tuple[int, VectorCoverage]] = {}

    def cached_vectors(self, keys: Sequence[str], model: str) -> dict[str, Vectors]:
        out: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            rows = self._db.reader.execute(
                f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN"
                f" ({','.join('?' * len(batch))})",
                [model, *batch],
            ).fetchall()
            for key, blob in rows:
                out[key] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return out

    def vector_coverage(self, model: str) -> VectorCoverage:
        # Counted once per generation: every CLI search and /readyz asks, and the
        # count joins every current chunk with its vector.
        generation = self._db.generation()
        cached = self._coverage.get(model)
        if cached is not None and cached[0] == generation:
            return cached[1]
        chunks, covered = self._db.reader.execute(
            "SELECT count(*), count(e.key) FROM chunks c"
            " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
            " AND c.version = s.current_version"
            " LEFT JOIN embeddings e ON e.key = c.embed_key AND e.model = ?"
            " WHERE s.deleted = 0",
            (model,),
        ).fetchone()
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
        # Separate statements, not "? IS NULL OR": with that, SQLite scans every chunk
        # even for one source (the ingest asks once per unchanged file).
        only = ""
        args: list[object] = []
        if tenant is not None:
            only += " AND s.tenant = ?"
            args.append(tenant)
        if source_id is not None:
            only += " AND s.source_id = ?"
            args.append(source_id)
        rows = self._db.reader.execute(
            "SELECT c.chunk_id, s.title, c.section_path, c.text FROM chunks c"
            " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
            f" AND c.version = s.current_version WHERE s.deleted = 0{only} AND NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.key = c.embed_key AND e.model = ?)"
            " ORDER BY c.tenant, c.source_id, c.ordinal LIMIT ?",
            [*args, model, -1 if limit is None else limit],
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
            # chunk_id is unique, so each update touches one row or none: a shortfall
            # is an unknown id, and raising here rolls the whole write back.
            updated = conn.executemany(
                "UPDATE chunks SET embed_key = ? WHERE chunk_id = ?",
                zip(keys, chunk_ids, strict=True),
            ).rowcount
            if updated != len(chunk_ids):
                raise ValueError("unknown chunk ids: nothing was stored")
            insert_vectors(conn, model, keys, matrix)


def insert_vectors(
    conn: sqlite3.Connection, model: str, keys: Sequence[str], matrix: Vectors
) -> None:
    """One row per key (little-endian float32); a key already stored keeps its vector."""
    conn.executemany(
        "INSERT OR IGNORE INTO embeddings(key, model, vector) VALUES (?, ?, ?)",
        (
            (key, model, np.asarray(row, dtype="<f4").tobytes())
            for key, row in zip(keys, matrix, strict=True)
        ),
    )
