"""The in-memory library: registry, chunk store, lexical (BM25) and vector index in
dictionaries; it passes the storage and retrieval contract suites, as SQLite does.

Sources are keyed by ``(tenant, source_id)``, as in SQLite; each chunk is filed
under the key of the source it belongs to."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from citadel.adapters.memory.ranking import bm25
from citadel.app.errors import refuse_write
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
from citadel.domain.source_writes import StoredSource, commit_refusal, update_refusal

Key = tuple[str, str]
"""(tenant, source_id): what names a source."""


def _key(source: Source) -> Key:
    return (source.tenant, source.source_id)


class InMemoryLibrary:
    """Registry, chunk store and a small BM25 index, all in dictionaries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sources: dict[Key, Source] = {}
        self._versions: dict[Key, list[SourceVersion]] = {}
        self._chunks: dict[str, Chunk] = {}
        self._owners: dict[str, Key] = {}
        """chunk id -> the key of its source (a chunk says its source's id, not its tenant)."""
        self._embeddings: dict[tuple[str, str], Vectors] = {}
        self._embed_keys: dict[str, str] = {}
        self._former: dict[Key, set[tuple[str, str]]] = {}
        """(kind, location) each source had before a change replaced it."""

    def get(self, tenant: str, source_id: str) -> Source | None:
        return self._sources.get((tenant, source_id))

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        with self._lock:
            return [
                source
                for source in sorted(self._sources.values(), key=lambda s: s.source_id)
                if not source.deleted
                and source.tenant == tenant
                and self._matches(source, content_sha256, origin)
            ]

    def _matches(self, source: Source, content_sha256: str, origin: str) -> bool:
        if content_sha256:
            current = self._current(source)
            return current is not None and current.content_sha256 == content_sha256
        return bool(origin) and source.origin == origin

    def versions(self, tenant: str, source_id: str) -> Sequence[SourceVersion]:
        return list(self._versions.get((tenant, source_id), []))

    def list(self, tenant: str | None = None) -> Sequence[Source]:
        live = [s for s in self._sources.values() if not s.deleted and tenant in (None, s.tenant)]
        return sorted(live, key=lambda s: (s.title, s.source_id))

    def revisions(
        self, source_ids: Collection[str], tenant: str | None = None
    ) -> Mapping[str, int]:
        wanted = set(source_ids)
        out: dict[str, int] = {}
        with self._lock:
            for (owner, source_id), source in self._sources.items():
                if source_id in wanted and tenant in (None, owner):
                    out[source_id] = out.get(source_id, 0) + source.revision
        return out

    def commit_version(
        self,
        source: Source,
        version: SourceVersion,
        chunks: Sequence[Chunk],
        vectors: ChunkVectors | None = None,
        *,
        unique_in: AccessScope | None = None,
    ) -> None:
        if vectors is not None and len(vectors.keys) != len(chunks):
            raise ValueError("one vector key per chunk")
        key = _key(source)
        with self._lock:
            stored = self._sources.get(key)
            holders = (
                other
                for other in self._sources.values()
                if other.tenant == source.tenant
                and self._matches(other, version.content_sha256, "")
            )
            refuse_write(
                commit_refusal(
                    source, version, _stored(stored), unique_in=unique_in, holders=holders
                )
            )
            if vectors is not None:
                for embed_key, chunk, row in zip(vectors.keys, chunks, vectors.matrix, strict=True):
                    self._embeddings.setdefault(
                        (embed_key, vectors.model), np.array(row, np.float32)
                    )
                    self._embed_keys[chunk.chunk_id] = embed_key
            known = self._versions.get(key, [])
            if any(v.version == version.version for v in known):
                raise ValueError(f"version {version.version} of {source.source_id} exists")
            if any(chunk.chunk_id in self._chunks for chunk in chunks):
                raise ValueError("a chunk id is stored already")
            self._remember_locations(stored, source)
            self._sources[key] = replace(
                source,
                current_version=version.version,
                deleted=False,
                revision=stored.revision + 1 if stored else 0,
            )
            self._versions[key] = [*known, version]
            for chunk in chunks:
                self._chunks[chunk.chunk_id] = chunk
                self._owners[chunk.chunk_id] = key

    def update(self, source: Source) -> None:
        with self._lock:
            current = self._sources.get(_key(source))
            refuse_write(update_refusal(source, _stored(current)))
            assert current is not None, "update_refusal refuses a missing source"
            self._remember_locations(current, source)
            self._sources[_key(source)] = replace(
                source,
                tenant=current.tenant,
                current_version=current.current_version,
                deleted=False,
                revision=current.revision + 1,
            )

    def _remember_locations(self, stored: Source | None, new: Source) -> None:
        if stored is None:
            return
        former = self._former.setdefault(_key(stored), set())
        if stored.canonical_url and stored.canonical_url != new.canonical_url:
            former.add(("url", stored.canonical_url))
        if stored.origin and stored.origin != new.origin:
            former.add(("origin", stored.origin))

    def locations(self, tenant: str) -> Sequence[SourceLocation]:
        with self._lock:
            found: list[SourceLocation] = []
            for key in sorted(k for k in self._sources if k[0] == tenant):
                source = self._sources[key]
                if source.canonical_url:
                    found.append(SourceLocation(key[1], "url", source.canonical_url, True))
                if source.origin:
                    found.append(SourceLocation(key[1], "origin", source.origin, True))
                found.extend(
                    SourceLocation(key[1], kind, where, False)
                    for kind, where in sorted(self._former.get(key, ()))
                )
            return sorted(found, key=lambda x: (x.source_id, not x.current, x.kind, x.location))

    def delete(self, tenant: str, source_id: str) -> None:
        key = (tenant, source_id)
        with self._lock:
            current = self._sources.get(key)
            if current is None or current.deleted:
                raise KeyError(source_id)
            self._sources[key] = replace(current, deleted=True, revision=current.revision + 1)
            self._drop_chunks(lambda chunk_id: self._owners[chunk_id] == key)
            self._versions[key] = [replace(v, retained=False) for v in self._versions.get(key, [])]

    def prune(self, tenant: str, source_id: str, keep: int) -> int:
        key = (tenant, source_id)
        with self._lock:
            versions = self._versions.get(key, [])
            retained = sorted((v.version for v in versions if v.retained), reverse=True)
            dropped = set(retained[max(keep, 1) :])
            self._drop_chunks(
                lambda chunk_id: (
                    self._owners[chunk_id] == key and self._chunks[chunk_id].version in dropped
                )
            )
            self._versions[key] = [
                replace(v, retained=False) if v.version in dropped else v for v in versions
            ]
        return len(dropped)

    def _drop_chunks(self, doomed: Callable[[str], bool]) -> None:
        """Forget the chunks ``doomed`` picks by id (call with the lock held)."""
        for chunk_id in [c for c in self._chunks if doomed(c)]:
            del self._chunks[chunk_id]
            del self._owners[chunk_id]

    def chunks(self, tenant: str, source_id: str, version: int) -> Sequence[Chunk]:
        key = (tenant, source_id)
        found = [
            c
            for c in self._chunks.values()
            if self._owners[c.chunk_id] == key and c.version == version
        ]
        return sorted(found, key=lambda c: c.ordinal)

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        out: dict[str, StoredPassage] = {}
        for chunk_id in chunk_ids:
            chunk = self._chunks.get(chunk_id)
            if chunk is not None:
                out[chunk_id] = StoredPassage(chunk, self._source_of(chunk))
        return out

    def chunks_without_units(self, limit: int) -> Sequence[tuple[str, str]]:
        with self._lock:
            return [(c.chunk_id, c.text) for c in self._chunks.values() if c.units is None][:limit]

    def store_units(self, units: Mapping[str, str]) -> int:
        with self._lock:
            fill = [c for i in units if (c := self._chunks.get(i)) is not None and c.units is None]
            for chunk in fill:
                self._chunks[chunk.chunk_id] = replace(chunk, units=units[chunk.chunk_id])
        return len(fill)

    def _source_of(self, chunk: Chunk) -> Source:
        return self._sources[self._owners[chunk.chunk_id]]

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        def admitted(chunk: Chunk) -> bool:
            source = self._source_of(chunk)
            return scope.allows(source) and _admits(filters, source, chunk)

        hits = [h for h in self._bm25(terms, scope.tenant) if admitted(self._chunks[h.chunk_id])]
        return hits[:limit]

    def _bm25(self, terms: Sequence[str], tenant: str) -> Sequence[LexicalHit]:
        """BM25 over ``tenant``'s chunks, with that tenant's statistics (as SQLite's one
        FTS5 table per tenant): another tenant's library never changes a score."""
        return bm25(
            terms,
            (
                (c, self._source_of(c))
                for c in self._chunks.values()
                if self._owners[c.chunk_id][0] == tenant
            ),
        )

    def cached_vectors(self, keys: Sequence[str], model: str) -> dict[str, Vectors]:
        return {k: self._embeddings[(k, model)] for k in keys if (k, model) in self._embeddings}

    def search_vectors(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        hits: list[DenseHit] = []
        for chunk in self._chunks.values():
            source = self._source_of(chunk)
            if chunk.version != source.current_version or not scope.allows(source):
                continue
            if not _admits(filters, source, chunk):
                continue
            key = self._embed_keys.get(chunk.chunk_id)
            stored = self._embeddings.get((key, model)) if key is not None else None
            if stored is not None:
                hits.append(DenseHit(chunk.chunk_id, float(stored @ query)))
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits[:limit]

    def score_vectors(
        self, vector: Vectors, model: str, chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        out: dict[str, float] = {}
        for chunk_id in chunk_ids:
            key = self._embed_keys.get(chunk_id)
            stored = self._embeddings.get((key, model)) if key is not None else None
            if stored is not None and chunk_id in self._chunks:
                out[chunk_id] = float(stored @ query)
        return out

    def vector_coverage(self, model: str) -> VectorCoverage:
        with self._lock:
            current = self._current_chunks()
            missing = sum(1 for c in current if not self._has_vector(c.chunk_id, model))
        return VectorCoverage(chunks=len(current), missing=missing)

    def unembedded_chunks(
        self,
        model: str,
        source_id: str | None = None,
        limit: int | None = None,
        *,
        tenant: str | None = None,
    ) -> Sequence[UnembeddedChunk]:
        with self._lock:
            found = [
                c
                for c in self._current_chunks()
                if source_id in (None, c.source_id)
                and tenant in (None, self._owners[c.chunk_id][0])
                and not self._has_vector(c.chunk_id, model)
            ]
            found.sort(key=lambda c: (self._owners[c.chunk_id], c.ordinal))
            return [
                UnembeddedChunk(c.chunk_id, self._source_of(c).title, c.section_path, c.text)
                for c in found[:limit]
            ]

    def store_vectors(
        self, model: str, chunk_ids: Sequence[str], keys: Sequence[str], matrix: Vectors
    ) -> None:
        if matrix.ndim != 2 or not len(chunk_ids) == len(keys) == matrix.shape[0]:
            raise ValueError("one key and one vector row per chunk id")
        with self._lock:
            if any(chunk_id not in self._chunks for chunk_id in chunk_ids):
                raise ValueError("unknown chunk ids: nothing was stored")
            for chunk_id, key, row in zip(chunk_ids, keys, matrix, strict=True):
                self._embeddings.setdefault((key, model), np.array(row, np.float32))
                self._embed_keys[chunk_id] = key

    def _current_chunks(self) -> Sequence[Chunk]:
        """Chunks of the current version of live sources (call with the lock held)."""
        return [
            c
            for c in self._chunks.values()
            if not self._source_of(c).deleted and c.version == self._source_of(c).current_version
        ]

    def _has_vector(self, chunk_id: str, model: str) -> bool:
        key = self._embed_keys.get(chunk_id)
        return key is not None and (key, model) in self._embeddings

    def _current(self, source: Source) -> SourceVersion | None:
        for version in self._versions.get(_key(source), []):
            if version.version == source.current_version:
                return version
        return None


def _stored(source: Source | None) -> StoredSource | None:
    """A stored record as the write rules read it."""
    if source is None:
        return None
    return StoredSource(source.current_version, source.deleted, source.revision)


def _admits(filters: SearchFilters, source: Source, chunk: Chunk) -> bool:
    return filters.admits_source(
        source.source_id, source.authors, source.tags, source.year
    ) and filters.admits_section(chunk.section_path)
