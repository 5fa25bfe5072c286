"""SQLite library: source registry, chunk store, FTS5 lexical index and dense vectors.

One file holds everything; see ``database.py`` for the connection and
transaction rules, ``access.py`` for how scope and filters become FTS5 terms,
``lexical.py`` for BM25 ranking, ``dense.py`` for the vector matrix and
``hnsw.py`` for its approximate index.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citadel.adapters.sqlite.access import access_text
from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.dense import DenseSearch
from citadel.adapters.sqlite.hnsw import DEFAULT_MIN_VECTORS
from citadel.adapters.sqlite.lexical import DEFAULT_WEIGHTS, LexicalSearch
from citadel.adapters.sqlite.rows import (
    CHUNK_COLUMNS,
    SOURCE_COLUMNS,
    chunk_from_row,
    section_key,
    source_from_row,
)
from citadel.app.errors import VersionConflict
from citadel.app.ports import (
    ChunkVectors,
    DenseHit,
    LexicalHit,
    StoredPassage,
    UnembeddedChunk,
    VectorCoverage,
    Vectors,
)
from citadel.domain.document import Chunk
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source, SourceVersion


class SqliteLibrary:
    def __init__(
        self,
        path: Path,
        *,
        weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
        max_term_share: float = 1.0,
        hnsw_min_vectors: int = DEFAULT_MIN_VECTORS,
        hnsw_background: bool = False,
    ):
        """``hnsw_background``: build a missing HNSW index in a thread, searching
        exactly meanwhile (for long-running servers; see ``hnsw.py``)."""
        self._db = Database(path)
        self._lexical = LexicalSearch(self._db, weights=weights, max_term_share=max_term_share)
        self._dense = DenseSearch(
            self._db, hnsw_min_vectors=hnsw_min_vectors, hnsw_background=hnsw_background
        )
        self._coverage: dict[str, tuple[int, VectorCoverage]] = {}

    @property
    def database(self) -> Database:
        """The open database, for adapters that keep their tables in the same file."""
        return self._db

    def close(self) -> None:
        self._dense.close()
        self._db.close()

    # -- SourceRegistry -------------------------------------------------------------

    def get(self, source_id: str) -> Source | None:
        row = self._db.reader.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE s.source_id = ?", (source_id,)
        ).fetchone()
        return source_from_row(row) if row else None

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        return [
            source_from_row(row)
            for row in _matching(self._db.reader, tenant, content_sha256, origin)
        ]

    def versions(self, source_id: str) -> Sequence[SourceVersion]:
        rows = self._db.reader.execute(
            "SELECT source_id, version, content_sha256, parser, chunker, page_count,"
            " section_count, chunk_count, created_at, retained FROM source_versions"
            " WHERE source_id = ? ORDER BY version",
            (source_id,),
        ).fetchall()
        return [
            SourceVersion(
                source_id=row[0],
                version=row[1],
                content_sha256=row[2],
                parser=row[3],
                chunker=row[4],
                page_count=row[5],
                section_count=row[6],
                chunk_count=row[7],
                created_at=row[8],
                retained=bool(row[9]),
            )
            for row in rows
        ]

    def list(self, tenant: str | None = None) -> Sequence[Source]:
        sql = f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE s.deleted = 0"
        args: tuple[str, ...] = ()
        if tenant is not None:
            sql += " AND s.tenant = ?"
            args = (tenant,)
        rows = self._db.reader.execute(sql + " ORDER BY s.title, s.source_id", args).fetchall()
        return [source_from_row(row) for row in rows]

    def revisions(self, source_ids: Collection[str]) -> Mapping[str, int]:
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        rows = self._db.reader.execute(
            f"SELECT source_id, revision FROM sources WHERE source_id IN ({marks})", ids
        ).fetchall()
        return {str(sid): int(revision) for sid, revision in rows}

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
        with self._db.transaction() as conn:
            # BEGIN IMMEDIATE holds the write lock of every process: the checks
            # below and the writes after them are one step for all writers.
            _check_commit(conn, source, version, unique_in)
            conn.execute(
                "INSERT INTO sources(source_id, tenant, title, authors, year, tags, acl_groups,"
                " canonical_url, origin, current_version, deleted)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
                " ON CONFLICT(source_id) DO UPDATE SET tenant = excluded.tenant,"
                " title = excluded.title, authors = excluded.authors, year = excluded.year,"
                " tags = excluded.tags, acl_groups = excluded.acl_groups,"
                " canonical_url = excluded.canonical_url, origin = excluded.origin,"
                " current_version = excluded.current_version, deleted = 0,"
                " revision = sources.revision + 1",
                (source.source_id, source.tenant, *_metadata(source), version.version),
            )
            conn.execute(
                "INSERT INTO source_versions(source_id, version, content_sha256, parser, chunker,"
                " page_count, section_count, chunk_count, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    version.source_id,
                    version.version,
                    version.content_sha256,
                    version.parser,
                    version.chunker,
                    version.page_count,
                    version.section_count,
                    version.chunk_count,
                    version.created_at,
                ),
            )
            # Older versions stay addressable in `chunks` but leave the search index.
            conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN"
                " (SELECT rowid FROM chunks WHERE source_id = ? AND version < ?)",
                (source.source_id, version.version),
            )
            if vectors is not None:
                conn.executemany(
                    "INSERT OR IGNORE INTO embeddings(key, model, vector) VALUES (?, ?, ?)",
                    (
                        (key, vectors.model, np.asarray(row, dtype="<f4").tobytes())
                        for key, row in zip(vectors.keys, vectors.matrix, strict=True)
                    ),
                )
            for index, chunk in enumerate(chunks):
                cursor = conn.execute(
                    "INSERT INTO chunks(chunk_id, source_id, version, ordinal, text, sha256,"
                    " section_path, chapter, section, page_start, page_end, page_label_start,"
                    " page_label_end, char_start, char_end, location, section_key, embed_key)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        chunk.chunk_id,
                        chunk.source_id,
                        chunk.version,
                        chunk.ordinal,
                        chunk.text,
                        chunk.sha256,
                        json.dumps(list(chunk.section_path), ensure_ascii=False),
                        chunk.chapter,
                        chunk.section,
                        chunk.page_start,
                        chunk.page_end,
                        chunk.page_label_start,
                        chunk.page_label_end,
                        chunk.char_start,
                        chunk.char_end,
                        chunk.location,
                        section_key(chunk.section_path),
                        vectors.keys[index] if vectors is not None else None,
                    ),
                )
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, headings, body, access)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (
                        cursor.lastrowid,
                        source.title,
                        " / ".join(chunk.section_path),
                        chunk.text,
                        access_text(source, chunk),
                    ),
                )

    def update(self, source: Source) -> None:
        with self._db.transaction() as conn:
            changed = conn.execute(
                "UPDATE sources SET title = ?, authors = ?, year = ?, tags = ?, acl_groups = ?,"
                " canonical_url = ?, origin = ?, revision = revision + 1"
                " WHERE source_id = ? AND deleted = 0",
                (*_metadata(source), source.source_id),
            ).rowcount
            if not changed:
                raise KeyError(source.source_id)
            # The title and the access tokens (ACL, authors, tags) follow the source.
            current = conn.execute(
                f"SELECT c.rowid, {CHUNK_COLUMNS} FROM chunks c JOIN chunks_fts f"
                " ON f.rowid = c.rowid WHERE c.source_id = ?",
                (source.source_id,),
            ).fetchall()
            conn.executemany(
                "UPDATE chunks_fts SET title = ?, access = ? WHERE rowid = ?",
                (
                    (source.title, access_text(source, chunk_from_row(row[1:])), row[0])
                    for row in current
                ),
            )

    def delete(self, source_id: str) -> None:
        with self._db.transaction() as conn:
            changed = conn.execute(
                "UPDATE sources SET deleted = 1, revision = revision + 1"
                " WHERE source_id = ? AND deleted = 0",
                (source_id,),
            ).rowcount
            if not changed:
                raise KeyError(source_id)
            conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN"
                " (SELECT rowid FROM chunks WHERE source_id = ?)",
                (source_id,),
            )
            conn.execute("DELETE FROM chunks WHERE source_id = ?", (source_id,))
            conn.execute(
                "UPDATE source_versions SET retained = 0 WHERE source_id = ?", (source_id,)
            )

    def prune(self, source_id: str, keep: int) -> int:
        with self._db.transaction() as conn:
            rows = conn.execute(
                "SELECT version FROM source_versions WHERE source_id = ? AND retained = 1"
                " ORDER BY version DESC",
                (source_id,),
            ).fetchall()
            dropped = [int(row[0]) for row in rows[max(keep, 1) :]]
            for version in dropped:
                conn.execute(
                    "DELETE FROM chunks_fts WHERE rowid IN"
                    " (SELECT rowid FROM chunks WHERE source_id = ? AND version = ?)",
                    (source_id, version),
                )
                conn.execute(
                    "DELETE FROM chunks WHERE source_id = ? AND version = ?", (source_id, version)
                )
                conn.execute(
                    "UPDATE source_versions SET retained = 0 WHERE source_id = ? AND version = ?",
                    (source_id, version),
                )
        return len(dropped)

    # -- ChunkStore -----------------------------------------------------------------

    def chunks(self, source_id: str, version: int) -> Sequence[Chunk]:
        rows = self._db.reader.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.source_id = ? AND c.version = ?"
            " ORDER BY c.ordinal",
            (source_id, version),
        ).fetchall()
        return [chunk_from_row(row) for row in rows]

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self._db.reader.execute(
            f"SELECT {CHUNK_COLUMNS}, {SOURCE_COLUMNS} FROM chunks c"
            f" JOIN sources s ON s.source_id = c.source_id WHERE c.chunk_id IN ({marks})",
            tuple(chunk_ids),
        ).fetchall()
        width = len(CHUNK_COLUMNS.split(","))
        out: dict[str, StoredPassage] = {}
        for row in rows:
            chunk = chunk_from_row(row[:width])
            out[chunk.chunk_id] = StoredPassage(chunk=chunk, source=source_from_row(row[width:]))
        return out

    # -- LexicalIndex ---------------------------------------------------------------

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        return self._lexical.search(terms, scope, filters, limit)

    # -- VectorIndex ----------------------------------------------------------------

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

    def search_vectors(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        return self._dense.search(vector, model, scope, filters, limit)

    def score_vectors(
        self, vector: Vectors, model: str, chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        return self._dense.score(vector, model, chunk_ids)

    def vector_coverage(self, model: str) -> VectorCoverage:
        # Counted once per generation: every CLI search and /readyz asks, and the
        # count joins every current chunk with its vector.
        generation = self._db.generation()
        cached = self._coverage.get(model)
        if cached is not None and cached[0] == generation:
            return cached[1]
        chunks, covered = self._db.reader.execute(
            "SELECT count(*), count(e.key) FROM chunks c"
            " JOIN sources s ON s.source_id = c.source_id AND c.version = s.current_version"
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
        self, model: str, source_id: str | None = None, limit: int | None = None
    ) -> Sequence[UnembeddedChunk]:
        # Two statements, not "? IS NULL OR": with that, SQLite scans every chunk even
        # for one source (the ingest asks once per unchanged file).
        only = "" if source_id is None else " AND s.source_id = ?"
        rows = self._db.reader.execute(
            "SELECT c.chunk_id, s.title, c.section_path, c.text FROM chunks c"
            " JOIN sources s ON s.source_id = c.source_id AND c.version = s.current_version"
            f" WHERE s.deleted = 0{only} AND NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.key = c.embed_key AND e.model = ?)"
            " ORDER BY c.source_id, c.ordinal LIMIT ?",
            (
                (model, -1 if limit is None else limit)
                if source_id is None
                else (source_id, model, -1 if limit is None else limit)
            ),
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
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings(key, model, vector) VALUES (?, ?, ?)",
                (
                    (key, model, np.asarray(row, dtype="<f4").tobytes())
                    for key, row in zip(keys, matrix, strict=True)
                ),
            )


def _matching(
    conn: sqlite3.Connection, tenant: str, content_sha256: str, origin: str
) -> list[tuple[Any, ...]]:
    if content_sha256:
        return conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s JOIN source_versions v"
            " ON v.source_id = s.source_id AND v.version = s.current_version"
            " WHERE s.tenant = ? AND s.deleted = 0 AND v.content_sha256 = ?"
            " ORDER BY s.source_id",
            (tenant, content_sha256),
        ).fetchall()
    if origin:
        return conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s"
            " WHERE s.tenant = ? AND s.deleted = 0 AND s.origin = ? ORDER BY s.source_id",
            (tenant, origin),
        ).fetchall()
    return []


def _check_commit(
    conn: sqlite3.Connection,
    source: Source,
    version: SourceVersion,
    unique_in: AccessScope | None,
) -> None:
    """The preconditions of ``commit_version`` (see the port), inside its transaction."""
    stored = conn.execute(
        "SELECT tenant, current_version, deleted FROM sources WHERE source_id = ?",
        (source.source_id,),
    ).fetchone()
    if stored is not None and (stored[2] or stored[0] != source.tenant):
        raise VersionConflict(f"source {source.source_id} is not writable")
    if version.version != (stored[1] if stored else 0) + 1:
        raise VersionConflict(f"source {source.source_id} has a newer version")
    if unique_in is not None and any(
        other.source_id != source.source_id and unique_in.allows(other)
        for other in map(
            source_from_row, _matching(conn, source.tenant, version.content_sha256, "")
        )
    ):
        raise VersionConflict("another source holds this content now")


def _metadata(source: Source) -> tuple[object, ...]:
    """A source's editable columns, in the order both writes name them."""
    return (
        source.title,
        json.dumps(list(source.authors)),
        source.year,
        json.dumps(list(source.tags)),
        json.dumps(sorted(source.acl_groups)),
        source.canonical_url,
        source.origin,
    )
