"""SQLite library: source registry, chunk store, FTS5 lexical index and dense vectors.

One file holds everything, and :class:`SqliteLibrary` implements the four ports
on it by delegating: ``registry.py`` for sources and versions, ``chunks.py``
for chunk rows, ``embeddings.py`` for stored vectors, ``lexical.py`` for BM25
ranking, ``dense.py`` for the vector matrix and ``hnsw.py`` for its approximate
index. See ``database.py`` for the connection and transaction rules and
``access.py`` for how scope and filters become FTS5 terms.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from citadel.adapters.sqlite.chunks import SqliteChunks
from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.dense import DenseSearch
from citadel.adapters.sqlite.embeddings import SqliteEmbeddings
from citadel.adapters.sqlite.lexical import LexicalSearch
from citadel.adapters.sqlite.lexical_fast import FastLexicalSearch
from citadel.adapters.sqlite.lexical_live import DEFAULT_MODE
from citadel.adapters.sqlite.registry import SqliteRegistry
from citadel.adapters.storage.search_defaults import (
    DEFAULT_MAX_TERM_SHARE,
    DEFAULT_MIN_VECTORS,
    DEFAULT_WEIGHTS,
)
from citadel.app.ports import (
    ChunkVectors,
    DenseHit,
    LexicalHit,
    SourceLocation,
    StoredPassage,
    UnembeddedChunk,
    VectorCoverage,
    Vectors,
)
from citadel.domain.document import Chunk
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source, SourceVersion


class SqliteLibrary:
    """SourceRegistry, ChunkStore, LexicalIndex and VectorIndex on one SQLite file."""

    def __init__(
        self,
        path: Path,
        *,
        weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
        max_term_share: float = DEFAULT_MAX_TERM_SHARE,
        hnsw_min_vectors: int = DEFAULT_MIN_VECTORS,
        hnsw_background: bool = False,
        lexical_memory: str = DEFAULT_MODE,
    ):
        """``hnsw_background``: build a missing HNSW index in a thread, searching
        exactly meanwhile (for long-running servers; see ``hnsw.py``).
        ``lexical_memory``: when BM25 ranks from memory (``lexical_live.py``)."""
        self._db = Database(path)
        self._lexical = LexicalSearch(self._db, weights=weights, max_term_share=max_term_share)
        self._ranking = FastLexicalSearch(
            self._db,
            self._lexical,
            weights=weights,
            max_term_share=max_term_share,
            memory=lexical_memory,
        )
        self._dense = DenseSearch(
            self._db, hnsw_min_vectors=hnsw_min_vectors, hnsw_background=hnsw_background
        )
        self._registry = SqliteRegistry(self._db)
        self._chunks = SqliteChunks(self._db)
        self._embeddings = SqliteEmbeddings(self._db)

    @property
    def database(self) -> Database:
        """The open database, for adapters that keep their tables in the same file."""
        return self._db

    def close(self) -> None:
        self._ranking.close()
        self._dense.close()
        self._db.close()

    # -- SourceRegistry -------------------------------------------------------------

    def get(self, tenant: str, source_id: str) -> Source | None:
        return self._registry.get(tenant, source_id)

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        return self._registry.matching(tenant, content_sha256=content_sha256, origin=origin)

    def versions(self, tenant: str, source_id: str) -> Sequence[SourceVersion]:
        return self._registry.versions(tenant, source_id)

    def list(self, tenant: str | None = None) -> Sequence[Source]:
        return self._registry.list(tenant)

    def revisions(
        self, source_ids: Collection[str], tenant: str | None = None
    ) -> Mapping[str, int]:
        return self._registry.revisions(source_ids, tenant)

    def commit_version(
        self,
        source: Source,
        version: SourceVersion,
        chunks: Sequence[Chunk],
        vectors: ChunkVectors | None = None,
        *,
        unique_in: AccessScope | None = None,
    ) -> None:
        self._registry.commit_version(source, version, chunks, vectors, unique_in=unique_in)

    def update(self, source: Source) -> None:
        self._registry.update(source)

    def delete(self, tenant: str, source_id: str) -> None:
        self._registry.delete(tenant, source_id)

    def prune(self, tenant: str, source_id: str, keep: int) -> int:
        return self._registry.prune(tenant, source_id, keep)

    def locations(self, tenant: str) -> Sequence[SourceLocation]:
        return self._registry.locations(tenant)

    # -- ChunkStore -----------------------------------------------------------------

    def chunks(self, tenant: str, source_id: str, version: int) -> Sequence[Chunk]:
        return self._chunks.chunks(tenant, source_id, version)

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        return self._chunks.passages(chunk_ids)

    def chunks_without_units(self, limit: int) -> Sequence[tuple[str, str]]:
        return self._chunks.chunks_without_units(limit)

    def store_units(self, units: Mapping[str, str]) -> int:
        return self._chunks.store_units(units)

    # -- LexicalIndex ---------------------------------------------------------------

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        return self._ranking.search(terms, scope, filters, limit)

    # -- VectorIndex ----------------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str], model: str) -> dict[str, Vectors]:
        return self._embeddings.cached_vectors(keys, model)

    def search_vectors(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        return self._dense.search(vector, model, scope, filters, limit)

    def score_vectors(
        self, vector: Vectors, model: str, chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        return self._dense.score(vector, model, chunk_ids)

    def vector_coverage(self, model: str) -> VectorCoverage:
        return self._embeddings.vector_coverage(model)

    def unembedded_chunks(
        self,
        model: str,
        source_id: str | None = None,
        limit: int | None = None,
        *,
        tenant: str | None = None,
    ) -> Sequence[UnembeddedChunk]:
        return self._embeddings.unembedded_chunks(model, source_id, limit, tenant=tenant)

    def store_vectors(
        self, model: str, chunk_ids: Sequence[str], keys: Sequence[str], matrix: Vectors
    ) -> None:
        self._embeddings.store_vectors(model, chunk_ids, keys, matrix)
