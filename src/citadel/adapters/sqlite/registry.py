"""The source registry in SQLite: sources, their versions, and the write that commits one.

``commit_version`` writes a version whole in one transaction: the source row,
the version row, its vectors (``embeddings.py``) and its chunks with their FTS5
entries (``chunks.py``), after checking its preconditions (``domain.source_writes``)
under the write lock.
A source id names a source within its tenant: every row is keyed by both.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from citadel.adapters.sqlite.chunks import insert_chunks
from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.embeddings import insert_vectors
from citadel.adapters.sqlite.schema import ensure_fts
from citadel.adapters.storage.access import access_text
from citadel.adapters.storage.rows import (
    CHUNK_COLUMNS,
    SOURCE_COLUMNS,
    chunk_from_row,
    source_from_row,
)
from citadel.app.errors import refuse_write
from citadel.app.ports import ChunkVectors, SourceLocation
from citadel.domain.document import Chunk
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.source_writes import StoredSource, commit_refusal, update_refusal


class SqliteRegistry:
    """The ``SourceRegistry`` port on the library's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, tenant: str, source_id: str) -> Source | None:
        row = self._db.reader.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE s.tenant = ? AND s.source_id = ?",
            (tenant, source_id),
        ).fetchone()
        return source_from_row(row) if row else None

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        return [
            source_from_row(row)
            for row in _matching(self._db.reader, tenant, content_sha256, origin)
        ]

    def versions(self, tenant: str, source_id: str) -> Sequence[SourceVersion]:
        rows = self._db.reader.execute(
            "SELECT source_id, version, content_sha256, parser, chunker, page_count,"
            " section_count, chunk_count, created_at, retained FROM source_versions"
            " WHERE tenant = ? AND source_id = ? ORDER BY version",
            (tenant, source_id),
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

    def revisions(
        self, source_ids: Collection[str], tenant: str | None = None
    ) -> Mapping[str, int]:
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        only = "" if tenant is None else " AND tenant = ?"
        rows = self._db.reader.execute(
            f"SELECT source_id, sum(revision) FROM sources WHERE source_id IN ({marks}){only}"
            " GROUP BY source_id",
            [*ids] if tenant is None else [*ids, tenant],
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
            _record_former_locations(conn, source)
            conn.execute(
                "INSERT INTO sources(source_id, tenant, title, authors, year, tags, acl_groups,"
                " canonical_url, origin, current_version, deleted)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
                " ON CONFLICT(tenant, source_id) DO UPDATE SET title = excluded.title,"
                " authors = excluded.authors, year = excluded.year,"
                " tags = excluded.tags, acl_groups = excluded.acl_groups,"
                " canonical_url = excluded.canonical_url, origin = excluded.origin,"
                " current_version = excluded.current_version, deleted = 0,"
                " revision = sources.revision + 1",
                (source.source_id, source.tenant, *_metadata(source), version.version),
            )
            conn.execute(
                "INSERT INTO source_versions(tenant, source_id, version, content_sha256, parser,"
                " chunker, page_count, section_count, chunk_count, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    source.tenant,
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
                f"DELETE FROM {ensure_fts(conn, source.tenant)} WHERE rowid IN (SELECT rowid"
                " FROM chunks WHERE tenant = ? AND source_id = ? AND version < ?)",
                (source.tenant, source.source_id, version.version),
            )
            if vectors is not None:
                insert_vectors(conn, vectors.model, vectors.keys, vectors.matrix)
            insert_chunks(conn, source, chunks, vectors.keys if vectors is not None else None)

    def update(self, source: Source) -> None:
        with self._db.transaction() as conn:
            # Under the write lock: the check and the writes after it are one step.
            refuse_write(update_refusal(source, _stored(conn, source)))
            _record_former_locations(conn, source)
            conn.execute(
                "UPDATE sources SET title = ?, authors = ?, year = ?, tags = ?, acl_groups = ?,"
                " canonical_url = ?, origin = ?, revision = revision + 1"
                " WHERE tenant = ? AND source_id = ?",
                (*_metadata(source), source.tenant, source.source_id),
            )
            # The title and the access tokens (ACL, authors, tags) follow the source.
            fts = ensure_fts(conn, source.tenant)
            current = conn.execute(
                f"SELECT c.rowid, {CHUNK_COLUMNS} FROM chunks c JOIN {fts} f"
                " ON f.rowid = c.rowid WHERE c.tenant = ? AND c.source_id = ?",
                (source.tenant, source.source_id),
            ).fetchall()
            conn.executemany(
                f"UPDATE {fts} SET title = ?, access = ? WHERE rowid = ?",
                (
                    (source.title, access_text(source, chunk_from_row(row[1:])), row[0])
                    for row in current
                ),
            )

    def locations(self, tenant: str) -> Sequence[SourceLocation]:
        rows = self._db.reader.execute(
            "SELECT source_id, 'url', canonical_url, 1 FROM sources"
            " WHERE tenant = ? AND canonical_url IS NOT NULL AND canonical_url != ''"
            " UNION ALL SELECT source_id, 'origin', origin, 1 FROM sources"
            " WHERE tenant = ? AND origin != ''"
            " UNION ALL SELECT source_id, kind, location, 0 FROM source_locations"
            " WHERE tenant = ? ORDER BY 1, 4 DESC, 2, 3",
            (tenant, tenant, tenant),
        ).fetchall()
        return [SourceLocation(row[0], row[1], row[2], bool(row[3])) for row in rows]

    def delete(self, tenant: str, source_id: str) -> None:
        key = (tenant, source_id)
        with self._db.transaction() as conn:
            changed = conn.execute(
                "UPDATE sources SET deleted = 1, revision = revision + 1"
                " WHERE tenant = ? AND source_id = ? AND deleted = 0",
                key,
            ).rowcount
            if not changed:
                raise KeyError(source_id)
            conn.execute(
                f"DELETE FROM {ensure_fts(conn, tenant)} WHERE rowid IN"
                " (SELECT rowid FROM chunks WHERE tenant = ? AND source_id = ?)",
                key,
            )
            conn.execute("DELETE FROM chunks WHERE tenant = ? AND source_id = ?", key)
            conn.execute(
                "UPDATE source_versions SET retained = 0 WHERE tenant = ? AND source_id = ?", key
            )

    def prune(self, tenant: str, source_id: str, keep: int) -> int:
        key = (tenant, source_id)
        with self._db.transaction() as conn:
            rows = conn.execute(
                "SELECT version FROM source_versions"
                " WHERE tenant = ? AND source_id = ? AND retained = 1 ORDER BY version DESC",
                key,
            ).fetchall()
            dropped = [int(row[0]) for row in rows[max(keep, 1) :]]
            fts = ensure_fts(conn, tenant) if dropped else ""
            for version in dropped:
                conn.execute(
                    f"DELETE FROM {fts} WHERE rowid IN (SELECT rowid FROM chunks"
                    " WHERE tenant = ? AND source_id = ? AND version = ?)",
                    (*key, version),
                )
                conn.execute(
                    "DELETE FROM chunks WHERE tenant = ? AND source_id = ? AND version = ?",
                    (*key, version),
                )
                conn.execute(
                    "UPDATE source_versions SET retained = 0"
                    " WHERE tenant = ? AND source_id = ? AND version = ?",
                    (*key, version),
                )
        return len(dropped)


def _matching(
    conn: sqlite3.Connection, tenant: str, content_sha256: str, origin: str
) -> list[tuple[Any, ...]]:
    if content_sha256:
        return conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s JOIN source_versions v"
            " ON v.tenant = s.tenant AND v.source_id = s.source_id"
            " AND v.version = s.current_version"
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
    """The preconditions of ``commit_version`` (``domain.source_writes``), on what its
    transaction reads: the stored source row and, with ``unique_in``, the live sources
    holding the version's content."""
    stored = _stored(conn, source)
    holders = (
        map(source_from_row, _matching(conn, source.tenant, version.content_sha256, ""))
        if unique_in is not None
        else ()
    )
    refuse_write(commit_refusal(source, version, stored, unique_in=unique_in, holders=holders))


def _stored(conn: sqlite3.Connection, source: Source) -> StoredSource | None:
    """The stored row of ``source``'s tenant and id, as the write rules read it."""
    row = conn.execute(
        "SELECT current_version, deleted, revision FROM sources WHERE tenant = ? AND source_id = ?",
        (source.tenant, source.source_id),
    ).fetchone()
    return StoredSource(int(row[0]), bool(row[1]), int(row[2])) if row else None


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


def _record_former_locations(conn: sqlite3.Connection, source: Source) -> None:
    """Keep the stored source's canonical URL and origin that ``source`` replaces."""
    for kind, column, new in (
        ("url", "canonical_url", source.canonical_url),
        ("origin", "origin", source.origin),
    ):
        conn.execute(
            "INSERT OR IGNORE INTO source_locations(tenant, source_id, kind, location)"
            f" SELECT tenant, source_id, '{kind}', {column} FROM sources"
            f" WHERE tenant = ? AND source_id = ? AND {column} IS NOT NULL AND {column} != ''"
            f" AND {column} IS NOT ?",
            (source.tenant, source.source_id, new),
        )
