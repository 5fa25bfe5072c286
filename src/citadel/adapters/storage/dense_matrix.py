"""Exact dense search over one in-memory matrix of the current chunks' unit vectors.

A store loads the rows (chunk id, source, section key, vector, rowid), in rowid
order, at one generation; ``Matrix`` holds them with the live sources. Scope and
filters become a row mask before ranking (``candidates``), so rows the actor may
not read are never ranked or returned. Scores are float32 inner products (cosine
on unit vectors); ties go to the lower row. The SQLite and PostgreSQL libraries
both rank here; SQLite adds an HNSW index past a size (``adapters/sqlite/hnsw.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

from citadel.app.ports import DenseHit, Vectors
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source

_ADMITTED_CACHE = 256

Labels = npt.NDArray[np.int64]


@functools.cache
def blas() -> ThreadpoolController:
    return ThreadpoolController()


@dataclass(frozen=True, slots=True)
class Matrix:
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


@dataclass(frozen=True, slots=True)
class MatrixRow:
    """One current chunk's row as a store reads it."""

    chunk_id: str
    tenant: str
    source_id: str
    section_key: str
    vector: bytes  # little-endian float32
    rowid: int


def build_matrix(
    generation: int,
    model: str,
    sources: Sequence[Source],
    rows: Sequence[MatrixRow],
    prints: Labels | None = None,
) -> Matrix:
    """The matrix of ``rows`` (in rowid order) over the live ``sources``."""
    if not rows:
        return Matrix(
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
    index = {(s.tenant, s.source_id): i for i, s in enumerate(sources)}
    vectors = np.frombuffer(b"".join(row.vector for row in rows), dtype="<f4").reshape(
        len(rows), -1
    )
    return Matrix(
        generation=generation,
        model=model,
        chunk_ids=tuple(row.chunk_id for row in rows),
        vectors=np.ascontiguousarray(vectors, dtype=np.float32),
        source_of_row=np.fromiter(
            (index[(row.tenant, row.source_id)] for row in rows), np.int32, len(rows)
        ),
        sources=tuple(sources),
        section_keys=np.array([row.section_key or "" for row in rows], dtype=np.str_),
        row_of={row.chunk_id: i for i, row in enumerate(rows)},
        rowids=np.fromiter((row.rowid for row in rows), np.int64, len(rows)),
        prints=prints if prints is not None else np.zeros(0, np.int64),
    )


def candidates(matrix: Matrix, scope: AccessScope, filters: SearchFilters) -> npt.NDArray[np.intp]:
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


def exact(
    matrix: Matrix, query: npt.NDArray[np.float32], rows: npt.NDArray[np.intp], limit: int
) -> list[DenseHit]:
    """The ``limit`` best of the admitted ``rows``, by one product over every row.

    One product over every row, then the mask: cheaper than copying the allowed rows
    out of a large matrix. The product reads the whole matrix and is bound by memory,
    not arithmetic; on one BLAS thread it leaves the other core to the lexical search
    and the embedder, where OpenBLAS's second thread would spin after each call
    (measured: docs/benchmarks.md). Same scores either way.
    """
    with blas().limit(limits=1, user_api="blas"):
        scores = matrix.vectors @ query
    if rows.size < scores.size:
        scores = scores[rows]
    k = min(limit, scores.size)
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.lexsort((rows[top], -scores[top]))]
    return [DenseHit(matrix.chunk_ids[rows[i]], float(scores[i])) for i in top]


def ranked(
    matrix: Matrix, query: npt.NDArray[np.float32], rows: npt.NDArray[np.intp], k: int
) -> list[DenseHit]:
    """The ``k`` best of ``rows``, scoring those rows alone."""
    with blas().limit(limits=1, user_api="blas"):
        scores = matrix.vectors[rows] @ query
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.lexsort((rows[top], -scores[top]))]
    return [DenseHit(matrix.chunk_ids[rows[i]], float(scores[i])) for i in top]


def score(matrix: Matrix, vector: Vectors, chunk_ids: Sequence[str]) -> dict[str, float]:
    """The current chunks' scores among ``chunk_ids`` (the others are left out)."""
    rows = [matrix.row_of.get(chunk_id, -1) for chunk_id in chunk_ids]
    present = [(chunk_id, row) for chunk_id, row in zip(chunk_ids, rows, strict=True) if row >= 0]
    if not present:
        return {}
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    scores = matrix.vectors[[row for _, row in present]] @ query
    return {chunk_id: float(s) for (chunk_id, _), s in zip(present, scores, strict=True)}
