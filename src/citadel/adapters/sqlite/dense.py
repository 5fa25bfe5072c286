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

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.hnsw import HnswIndex, Labels, fingerprints
from citadel.adapters.sqlite.rows import SOURCE_COLUMNS, source_from_row
from citadel.app.ports import DenseHit, Vectors
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source

_ADMITTED_CACHE = 256
_FILTER_CACHE = 32
# With HNSW on, filters admitting under this share of the rows are searched
# exactly over the admitted rows: the graph search slows as the filter tightens
# (measured: docs/benchmarks.md, "Search latency").
DEFAULT_EXACT_SHARE = 0.2


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


@dataclass(frozen=True, slots=True)
class _Matrix:
    generation: int
    model: str
    chunk_ids: tuple[str, ...]
    vectors: Vectors
    source_of_row: npt.NDArray[np.int32]
    sources: tuple[Source, ...]
    section_keys: npt.NDArray[np.str_]
    row_of: dict[str, int]
    rowids: Labels
    prints: Labels
    admitted: dict[tuple[AccessScope, SearchFilters], npt.NDArray[np.intp]] = field(
        default_factory=dict
    )
    filters: dict[tuple[AccessScope, SearchFilters], bytearray] = field(default_factory=dict)


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
        self._matrix: _Matrix | None = None
        self._hnsw_min = hnsw_min_vectors
        self._hnsw = hnsw or HnswIndex(
            db.path.with_name(db.path.name + ".hnsw"), background=hnsw_background
        )
        self._exact_share = exact_share

    def _approximate(self, matrix: _Matrix) -> bool:
        return 0 < self._hnsw_min <= len(matrix.chunk_ids)

    def close(self) -> None:
        self._hnsw.close()

    def search(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        matrix = self._current(model)
        if not matrix.chunk_ids:
            return []
        candidates = self._candidates(matrix, scope, filters)
        if candidates.size == 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._approximate(matrix):
            found = self._search_graph(matrix, query, candidates, (scope, filters), limit)
            if found is not None:
                return found
            if candidates.size < len(matrix.chunk_ids):
                # Exact over the admitted rows alone: fewer bytes than the full product.
                return self._ranked(matrix, query, candidates, min(limit, candidates.size))
        # One product over every row, then the mask: cheaper than copying the
        # allowed rows out of a large matrix. The product reads the whole matrix
        # and is bound by memory, not arithmetic; on one BLAS thread it leaves the
        # other core to FTS5 and the embedder, where OpenBLAS's second thread would
        # spin after each call (measured: docs/benchmarks.md). Same scores either way.
        with _blas().limit(limits=1, user_api="blas"):
            scores = matrix.vectors @ query
        if candidates.size < scores.size:
            scores = scores[candidates]
        rows = candidates
        k = min(limit, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((rows[top], -scores[top]))]
        return [DenseHit(matrix.chunk_ids[rows[i]], float(scores[i])) for i in top]

    def _search_graph(
        self,
        matrix: _Matrix,
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
        return self._ranked(matrix, query, rows, k)

    @staticmethod
    def _ranked(
        matrix: _Matrix, query: npt.NDArray[np.float32], rows: npt.NDArray[np.intp], k: int
    ) -> list[DenseHit]:
        with _blas().limit(limits=1, user_api="blas"):
            scores = matrix.vectors[rows] @ query
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((rows[top], -scores[top]))]
        return [DenseHit(matrix.chunk_ids[rows[i]], float(scores[i])) for i in top]

    @staticmethod
    def _filter(
        matrix: _Matrix, key: tuple[AccessScope, SearchFilters], candidates: npt.NDArray[np.intp]
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

    def _candidates(
        self, matrix: _Matrix, scope: AccessScope, filters: SearchFilters
    ) -> npt.NDArray[np.intp]:
        """Row numbers the scope and filters admit; memoised per matrix, since the same
        few (tenant, groups, filters) combinations recur and a library can hold
        thousands of sources."""
        key = (scope, filters)
        found = matrix.admitted.get(key)
        if found is not None:
            return found
        allowed_sources = np.fromiter(
            (
                scope.allows(s) and filters.admits_source(s.source_id, s.authors, s.tags, s.year)
                for s in matrix.sources
            ),
            dtype=bool,
            count=len(matrix.sources),
        )
        mask = allowed_sources[matrix.source_of_row]
        if filters.section_prefix:
            prefix = "".join(h.replace("\x1f", " ") + "\x1f" for h in filters.section_prefix)
            mask &= np.char.startswith(matrix.section_keys, prefix)
        rows = np.flatnonzero(mask)
        if len(matrix.admitted) >= _ADMITTED_CACHE:
            matrix.admitted.clear()
        matrix.admitted[key] = rows
        return rows

    def score(self, vector: Vectors, model: str, chunk_ids: Sequence[str]) -> dict[str, float]:
        matrix = self._current(model)
        rows = [matrix.row_of.get(chunk_id, -1) for chunk_id in chunk_ids]
        present = [
            (chunk_id, row) for chunk_id, row in zip(chunk_ids, rows, strict=True) if row >= 0
        ]
        if not present:
            return {}
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        scores = matrix.vectors[[row for _, row in present]] @ query
        return {
            chunk_id: float(score) for (chunk_id, _), score in zip(present, scores, strict=True)
        }

    def _current(self, model: str) -> _Matrix:
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

    def _hnsw_behind(self, matrix: _Matrix) -> bool:
        return self._approximate(matrix) and self._hnsw.behind(matrix.generation)

    def _load(self, model: str, generation: int) -> _Matrix:
        conn = self._db.reader
        sources = [
            source_from_row(row)
            for row in conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE s.deleted = 0"
                " ORDER BY s.tenant, s.source_id"
            )
        ]
        index = {(s.tenant, s.source_id): i for i, s in enumerate(sources)}
        rows = conn.execute(
            "SELECT c.chunk_id, c.source_id, c.section_key, e.vector, c.rowid, c.embed_key,"
            " c.tenant FROM chunks c"
            " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
            " AND c.version = s.current_version"
            " JOIN embeddings e ON e.key = c.embed_key AND e.model = ?"
            " WHERE s.deleted = 0 ORDER BY c.rowid",
            (model,),
        ).fetchall()
        if not rows:
            return _Matrix(
                generation,
                model,
                (),
                np.zeros((0, 0), np.float32),
                np.zeros(0, np.int32),
                tuple(sources),
                np.array([], dtype=np.str_),
                {},
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
            )
        vectors = np.frombuffer(b"".join(row[3] for row in rows), dtype="<f4").reshape(
            len(rows), -1
        )
        return _Matrix(
            generation=generation,
            model=model,
            chunk_ids=tuple(row[0] for row in rows),
            vectors=np.ascontiguousarray(vectors, dtype=np.float32),
            source_of_row=np.fromiter(
                (index[(row[6], row[1])] for row in rows), np.int32, len(rows)
            ),
            sources=tuple(sources),
            section_keys=np.array([row[2] or "" for row in rows], dtype=np.str_),
            row_of={row[0]: i for i, row in enumerate(rows)},
            rowids=np.fromiter((row[4] for row in rows), np.int64, len(rows)),
            prints=(
                fingerprints([row[5] for row in rows])
                if 0 < self._hnsw_min <= len(rows)
                else np.zeros(0, np.int64)
            ),
        )
