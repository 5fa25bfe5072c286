"""Dense search on PostgreSQL: the current chunks' vectors in one matrix, searched exactly.

The matrix is read from pgvector (binary) on first use and again whenever the
database's generation changes (a library write by any server), and ranked by
``adapters/storage/dense_matrix.py``, the code the SQLite library ranks with: the
same scores, ties and masks. Scope and filters become a row mask before ranking.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from citadel.adapters.postgres.database import Database
from citadel.adapters.storage import dense_matrix
from citadel.adapters.storage.dense_matrix import Matrix, MatrixRow, build_matrix
from citadel.adapters.storage.rows import SOURCE_COLUMNS, source_from_row
from citadel.app.ports import DenseHit, Vectors
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope


class PostgresDense:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._matrix: Matrix | None = None

    def search(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        matrix = self._current(model)
        if not matrix.chunk_ids or limit <= 0:
            return []
        candidates = dense_matrix.candidates(matrix, scope, filters)
        if candidates.size == 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        return dense_matrix.exact(matrix, query, candidates, limit)

    def score(self, vector: Vectors, model: str, chunk_ids: Sequence[str]) -> dict[str, float]:
        return dense_matrix.score(self._current(model), vector, chunk_ids)

    def _current(self, model: str) -> Matrix:
        generation = self._db.generation()
        matrix = self._matrix
        if matrix is not None and matrix.generation == generation and matrix.model == model:
            return matrix
        with self._lock:
            matrix = self._matrix
            if matrix is None or matrix.generation != generation or matrix.model != model:
                matrix = self._load(model)
                self._matrix = matrix
        return matrix

    def _load(self, model: str) -> Matrix:
        with self._db.read(snapshot=True) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            generation = int(row[0]) if row is not None else 0
            sources = [
                source_from_row(row)
                for row in conn.execute(
                    f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE NOT s.deleted"
                    ' ORDER BY s.tenant COLLATE "C", s.source_id COLLATE "C"'
                ).fetchall()
            ]
            rows = conn.execute(
                "SELECT c.chunk_id, c.tenant, c.source_id, c.section_key, e.vector, c.rowid"
                " FROM chunks c"
                " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
                " AND c.version = s.current_version"
                " JOIN embeddings e ON e.key = c.embed_key AND e.model = %s"
                " WHERE NOT s.deleted ORDER BY c.rowid",
                (model,),
                binary=True,
            ).fetchall()
        return build_matrix(
            generation,
            model,
            sources,
            [
                MatrixRow(cid, tenant, sid, key, np.asarray(vec, dtype="<f4").tobytes(), rowid)
                for cid, tenant, sid, key, vec, rowid in rows
            ],
        )
