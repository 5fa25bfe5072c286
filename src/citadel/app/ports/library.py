"""The library: sources and versions, chunks, lexical and dense indexes, retrieval."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.
from citadel.domain.document import Chunk
from citadel.domain.search import SearchFilters, SearchRequest, SearchResult
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.users import Actor

Vectors = npt.NDArray[np.float32]


class Retrieval(Protocol):
    """Search as the answer use case needs it: ``SearchService`` here, or a remote service."""

    def search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        """Rank the chunks ``actor`` may read; ``InvalidRequest`` for a bad request."""
        ...


class SourceRegistry(Protocol):
    """The trusted record of sources and their versions.

    A source id names a source within its tenant: every lookup by id takes the
    tenant, and two tenants may each have a source of one id, independent of
    each other (versions, chunks, deletion)."""

    def get(self, tenant: str, source_id: str) -> Source | None:
        """``tenant``'s source, deleted or not; None when it never existed there."""
        ...

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        """Live sources of ``tenant`` whose current version has this hash (or, given no
        hash, that were ingested from this origin), by id."""
        ...

    def versions(self, tenant: str, source_id: str) -> Sequence[SourceVersion]:
        """All versions of ``tenant``'s source (retained or not), oldest first."""
        ...

    def list(self, tenant: str | None = None) -> Sequence[Source]:
        """Live sources, by title."""
        ...

    def revisions(
        self, source_ids: Collection[str], tenant: str | None = None
    ) -> Mapping[str, int]:
        """The current ``revision`` of each known source of ``tenant`` (deleted ones too);
        unknown ids absent. Without ``tenant``, the sum of the revisions of every tenant's
        source of that id: it still changes whenever any of them changes (revisions only
        grow), which is all a cache keyed by its tenant needs."""
        ...

    def commit_version(
        self,
        source: Source,
        version: SourceVersion,
        chunks: Sequence[Chunk],
        vectors: ChunkVectors | None = None,
        *,
        unique_in: AccessScope | None = None,
    ) -> None:
        """Make ``version`` of ``source`` current with its chunks and vectors, all or nothing.

        The commit checks, in the same transaction as its writes, what its caller
        decided from an earlier read: it reads ``source.tenant``'s stored source of
        that id (and, with ``unique_in``, the live sources holding this content) and
        applies ``domain.source_writes.commit_refusal`` to them; a refusal raises
        ``VersionConflict`` through ``app.errors.refuse_write``, writing nothing.
        """
        ...

    def update(self, source: Source) -> None:
        """Replace the metadata (origin, title, ACL) of the live source of ``source.tenant``
        and ``source.source_id``; versions are untouched.

        A compare-and-swap on ``source.revision``, in the update's transaction:
        ``domain.source_writes.update_refusal`` on the stored source, raised through
        ``app.errors.refuse_write`` (``KeyError`` when it is gone or deleted,
        ``VersionConflict`` when another writer changed it first; nothing written)."""
        ...

    def delete(self, tenant: str, source_id: str) -> None:
        """Leave a tombstone: the record stays (so citations can say "deleted"), the text goes.
        ``KeyError`` when ``tenant`` has no live source of that id."""
        ...

    def prune(self, tenant: str, source_id: str, keep: int) -> int:
        """Drop the chunks of all but the newest ``keep`` versions; return how many went."""
        ...

    def locations(self, tenant: str) -> Sequence[SourceLocation]:
        """Every place ``tenant``'s sources (deleted ones too) are or were registered at:
        each current canonical URL and origin (``current``), and each one a move, a
        metadata change or a new version replaced since (not ``current``), by source id.
        A place that is current again is listed once as current (and may be listed as
        former too). No URL is fetched: this is what the registry was told."""
        ...


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A canonical URL or an origin a source has, or had before it moved."""

    source_id: str
    kind: str
    """``url`` (the trusted canonical URL) or ``origin`` (where it was ingested from)."""
    location: str
    current: bool


@dataclass(frozen=True, slots=True)
class ChunkVectors:
    """One vector per chunk of a version, and the cache key of the text each embeds."""

    model: str
    keys: tuple[str, ...]
    """sha256 of the embedded text (title, section path, chunk text), one per chunk."""
    matrix: Vectors
    """Shape (len(keys), dimension); row i embeds chunk i."""


@dataclass(frozen=True, slots=True)
class VectorCoverage:
    """How much of the library one model's vectors cover: dense search sees only that."""

    chunks: int
    """Current-version chunks of live sources."""
    missing: int
    """How many of them have no vector under the model."""


@dataclass(frozen=True, slots=True)
class UnembeddedChunk:
    """A current chunk without a vector under some model, with what its vector would embed."""

    chunk_id: str
    title: str
    """Its source's title as it is now (a title edit changes the embedded text)."""
    section_path: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class DenseHit:
    chunk_id: str
    score: float
    """Cosine similarity in [-1, 1]."""


class VectorIndex(Protocol):
    def cached_vectors(self, keys: Sequence[str], model: str) -> dict[str, Vectors]:
        """Vectors already stored for these text hashes under ``model``: re-ingesting
        unchanged text never re-embeds it."""
        ...

    def search_vectors(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        """Current-version chunks nearest ``vector`` (unit length), best first.

        ``scope`` and ``filters`` are applied inside the search: a chunk the scope
        may not read is never scored or returned.
        """
        ...

    def score_vectors(
        self, vector: Vectors, model: str, chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity of ``vector`` with each of these (already admitted) chunks;
        chunks without a vector are absent."""
        ...

    def vector_coverage(self, model: str) -> VectorCoverage:
        """How many current chunks of live sources there are, and how many have no vector
        under ``model``: dense search cannot find those, so callers can say so."""
        ...

    def unembedded_chunks(
        self,
        model: str,
        source_id: str | None = None,
        limit: int | None = None,
        *,
        tenant: str | None = None,
    ) -> Sequence[UnembeddedChunk]:
        """The current chunks of live sources (of ``tenant`` only and of ``source_id`` only,
        when given) that have no vector under ``model``, by tenant, source id, then reading
        order; the first ``limit`` of them when given (storing their vectors takes them off
        the list)."""
        ...

    def store_vectors(
        self, model: str, chunk_ids: Sequence[str], keys: Sequence[str], matrix: Vectors
    ) -> None:
        """Store row i of ``matrix`` under (``keys[i]``, ``model``), keeping a vector already
        stored there, and make ``keys[i]`` the embedding key of ``chunk_ids[i]``: one write,
        seen by the next search. An unknown chunk id or mismatched lengths raise
        ``ValueError`` and nothing is written."""
        ...


@dataclass(frozen=True, slots=True)
class StoredPassage:
    """A chunk joined with its source's stored metadata."""

    chunk: Chunk
    source: Source


class ChunkStore(Protocol):
    def chunks(self, tenant: str, source_id: str, version: int) -> Sequence[Chunk]:
        """A version of ``tenant``'s source's chunks in reading order."""
        ...

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        """Chunks by id with their sources; unknown ids are absent from the result.
        (Chunk ids are unique across tenants: the tenant is part of their key.)"""
        ...


class UnitStore(Protocol):
    """Each chunk's quotable units as ingest stores them (``Chunk.units``), filled in
    for the chunks stored before there were any."""

    def chunks_without_units(self, limit: int) -> Sequence[tuple[str, str]]:
        """(chunk id, text) of up to ``limit`` chunks with no stored units, any version."""
        ...

    def store_units(self, units: Mapping[str, str]) -> int:
        """Store units by chunk id where none are stored yet; how many chunks took them
        (a chunk gone, or given units meanwhile, is left as it is)."""
        ...


@dataclass(frozen=True, slots=True)
class LexicalHit:
    chunk_id: str
    score: float
    """Raw relevance, larger is better (BM25, sign flipped)."""


class LexicalIndex(Protocol):
    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        """Current-version chunks matching any of ``terms``, best first.

        ``scope`` is applied inside the search: chunks the scope may not read are
        never scored or returned. ``terms`` are plain words, never query syntax.
        """
        ...
