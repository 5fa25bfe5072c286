"""Dense search: the current chunks' vectors in one numpy matrix, searched exactly,
or through an HNSW index (``hnsw.py``) once there are ``hnsw_min_vectors`` of them.

The matrix is loaded from SQLite on first use and reloaded when the
database's generation changes (any write, by any process); the HNSW index then
takes the difference. Scope and filters become a row mask before ranking, so
rows the actor may not read are never ranked or returned: the exact product is
masked, and the HNSW search only admits those rows (and every label it returns
is checked against the current, admitted rows and re-scored exactly).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.hnsw import HnswIndex, fingerprints
from citadel.adapters.storage import dense_matrix
from citadel.adapters.storage.dense_matrix import Matrix, MatrixRow, build_matrix
from citadel.adapters.storage.rows import SOURCE_COLUMNS, source_from_row
from citadel.adapters.storage.search_defaults import DEFAULT_EXACT_SHARE
from citadel.app.ports import DenseHit, Vectors
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope

_FILTER_CACHE = 32


class DenseSearch:
    def __init__(
        self,
        db: Database,
        *,
        hnsw_min_vectors: int = 0,
        hnsw: HnswIndex | None = None,
        exact_share: float = DEFAULT_EXACT_SHARE,
        hnsw_background: bool = False,
    ) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._matrix: Matrix | None = None
        self._hnsw_min = hnsw_min_vectors
        self._hnsw = hnsw or HnswIndex(
            db.path.with_name(db.path.name + ".hnsw"), background=hnsw_background
        )
        self._exact_share = exact_share

    def _approximate(self, matrix: Matrix) -> bool:
        return 0 < self._hnsw_min <= len(matrix.chunk_ids)

    def close(self) -> None:
        self._hnsw.close()

    def search(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        matrix = self._current(model)
        if not matrix.chunk_ids:
            return []
        candidates = dense_matrix.candidates(matrix, scope, filters)
        if candidates.size == 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._approximate(matrix):
            found = self._search_graph(matrix, query, candidates, (scope, filters), limit)
            if found is not None:
                return found
            if candidates.size < len(matrix.chunk_ids):
                # Exact over the admitted rows alone: fewer bytes than the full product.
                return dense_matrix.ranked(matrix, query, candidates, min(limit, candidates.size))
        return dense_matrix.exact(matrix, query, candidates, limit)

    def _search_graph(
        self,
        matrix: Matrix,
        query: npt.NDArray[np.float32],
        candidates: npt.NDArray[np.intp],
        key: tuple[AccessScope, SearchFilters],
        limit: int,
    ) -> list[DenseHit] | None:
        """The HNSW search, or None when the exact search should answer: the filter
        admits few rows, or the graph could not return enough current admitted ones."""
        total = len(matrix.chunk_ids)
        k = min(limit, candidates.size)
        if candidates.size < self._exact_share * total or candidates.size <= limit:
            return None
        admit = None if candidates.size == total else self._filter(matrix, key, candidates)
        labels = self._hnsw.query(query, k, admit, matrix.generation)
        if labels is None:
            return None
        # Only current rows the actor may read, whatever the index holds.
        at = np.minimum(np.searchsorted(matrix.rowids, labels), total - 1)
        rows = at[matrix.rowids[at] == labels]
        where = np.minimum(np.searchsorted(candidates, rows), candidates.size - 1)
        rows = np.unique(rows[candidates[where] == rows])
        if rows.size < k:
            return None
        return dense_matrix.ranked(matrix, query, rows, k)

    @staticmethod
    def _filter(
        matrix: Matrix, key: tuple[AccessScope, SearchFilters], candidates: npt.NDArray[np.intp]
    ) -> Callable[[int], int]:
        """The admitted rowids as a lookup the graph search calls per label."""
        found = matrix.filters.get(key)
        if found is None:
            found = bytearray(int(matrix.rowids[-1]) + 1)
            found_view = np.frombuffer(found, dtype=np.uint8)
            found_view[matrix.rowids[candidates]] = 1
            if len(matrix.filters) >= _FILTER_CACHE:
                matrix.filters.clear()
            matrix.filters[key] = found
        return found.__getitem__

    def score(self, vector: Vectors, model: str, chunk_ids: Sequence[str]) -> dict[str, float]:
        return dense_matrix.score(self._current(model), vector, chunk_ids)

    def _current(self, model: str) -> Matrix:
        generation = self._db.generation()
        matrix = self._matrix
        current = matrix is not None and matrix.generation == generation and matrix.model == model
        if current and matrix is not None and not self._hnsw_behind(matrix):
            return matrix
        with self._lock:
            matrix = self._matrix
            if matrix is None or matrix.generation != generation or matrix.model != model:
                matrix = self._load(model, generation)
                if self._approximate(matrix):
                    self._hnsw.sync(model, generation, matrix.rowids, matrix.prints, matrix.vectors)
                self._matrix = matrix
            elif self._hnsw_behind(matrix):
                # A background build finished at an older generation: apply the rest.
                self._hnsw.sync(model, generation, matrix.rowids, matrix.prints, matrix.vectors)
        return matrix

    def _hnsw_behind(self, matrix: Matrix) -> bool:
        return self._approximate(matrix) and self._hnsw.behind(matrix.generation)

    def _load(self, model: str, generation: int) -> Matrix:
        conn = self._db.reader
        sources = [
            source_from_row(row)
            for row in conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE s.deleted = 0"
                " ORDER BY s.tenant, s.source_id"
            )
        ]
        rows = conn.execute(
            "SELECT c.chunk_id, c.source_id, c.section_key, e.vector, c.rowid, c.embed_key,"
            " c.tenant FROM chunks c"
            " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
            " AND c.version = s.current_version"
            " JOIN embeddings e ON e.key = c.embed_key AND e.model = ?"
            " WHERE s.deleted = 0 ORDER BY c.rowid",
            (model,),
        ).fetchall()
        prints = fingerprints([row[5] for row in rows]) if 0 < self._hnsw_min <= len(rows) else None
        return build_matrix(
            generation,
            model,
            sources,
            [MatrixRow(row[0], row[6], row[1], row[2], row[3], row[4]) for row in rows],
            prints,
        )
