"""Dense search on PostgreSQL: the current chunks' vectors in one matrix, searched exactly,
or through pgvector's HNSW index (``hnsw.py``) once there are ``hnsw_min_vectors`` of them.

The matrix is read from pgvector (binary) on first use and again whenever the
database's generation changes (a library write by any server), and ranked by
``adapters/storage/dense_matrix.py``, the code the SQLite library ranks with: the
same scores, ties and masks. Scope and filters become a row mask before ranking;
the HNSW index only proposes embedding keys, which become the current admitted rows
holding them and are re-scored exactly (too few, and the search is exact).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from citadel.adapters.postgres.database import Database
from citadel.adapters.postgres.hnsw import PgvectorIndex
from citadel.adapters.storage import dense_matrix
from citadel.adapters.storage.dense_matrix import Matrix, MatrixRow, build_matrix
from citadel.adapters.storage.rows import SOURCE_COLUMNS, source_from_row
from citadel.adapters.storage.search_defaults import DEFAULT_EXACT_SHARE, DEFAULT_MIN_VECTORS
from citadel.app.ports import DenseHit, Vectors
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope

# Keys asked of the graph per result wanted, times the inverse of the admitted share.
_OVERFETCH = 2
_MAX_KEYS = 2_000


class PostgresDense:
    def __init__(
        self,
        db: Database,
        *,
        hnsw_min_vectors: int = DEFAULT_MIN_VECTORS,
        exact_share: float = DEFAULT_EXACT_SHARE,
        hnsw_background: bool = False,
    ) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._matrix: Matrix | None = None
        self._rows_of_key: dict[str, list[int]] = {}
        self._hnsw_min = hnsw_min_vectors
        self._exact_share = exact_share
        self._graph = PgvectorIndex(db, background=hnsw_background)

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
        if 0 < self._hnsw_min <= len(matrix.chunk_ids):
            found = self._search_graph(matrix, query, model, candidates, limit)
            if found is not None:
                return found
        return dense_matrix.exact(matrix, query, candidates, limit)

    def _search_graph(
        self,
        matrix: Matrix,
        query: npt.NDArray[np.float32],
        model: str,
        candidates: npt.NDArray[np.intp],
        limit: int,
    ) -> list[DenseHit] | None:
        """The HNSW search, or None when the exact search should answer: the filter
        admits few rows, or the graph's keys held too few current admitted rows."""
        total = len(matrix.chunk_ids)
        k = min(limit, candidates.size)
        if candidates.size < self._exact_share * total or candidates.size <= limit:
            return None
        if not self._graph.ensure(model, int(query.size)):
            return None  # being built in the background: exact meanwhile
        wanted = min(_MAX_KEYS, max(k, int(_OVERFETCH * k * total / candidates.size)))
        keys = self._graph.nearest_keys(query, model, wanted)
        rows_of_key = self._rows_of_key
        found = np.array(
            sorted({row for key in keys for row in rows_of_key.get(key, ())}), dtype=np.intp
        )
        if found.size:
            # Only current rows the actor may read, whatever the index holds.
            at = np.minimum(np.searchsorted(candidates, found), candidates.size - 1)
            found = found[candidates[at] == found]
        if found.size < k:
            return None
        return dense_matrix.ranked(matrix, query, found, k)

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
                matrix, self._rows_of_key = self._load(model)
                self._matrix = matrix
        return matrix

    def _load(self, model: str) -> tuple[Matrix, dict[str, list[int]]]:
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
                "SELECT c.chunk_id, c.tenant, c.source_id, c.section_key, e.vector, c.rowid,"
                " c.embed_key FROM chunks c"
                " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
                " AND c.version = s.current_version"
                " JOIN embeddings e ON e.key = c.embed_key AND e.model = %s"
                " WHERE NOT s.deleted ORDER BY c.rowid",
                (model,),
                binary=True,
            ).fetchall()
        rows_of_key: dict[str, list[int]] = {}
        for at, row in enumerate(rows):
            rows_of_key.setdefault(row[6], []).append(at)
        matrix = build_matrix(
            generation,
            model,
            sources,
            [
                MatrixRow(cid, tenant, sid, key, np.asarray(vec, dtype="<f4").tobytes(), rowid)
                for cid, tenant, sid, key, vec, rowid, _ in rows
            ],
        )
        return matrix, rows_of_key
