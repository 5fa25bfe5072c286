"""The source registry in PostgreSQL: sources, their versions, and the write that commits one.

The same rules as SQLite's registry (``adapters/sqlite/registry.py``): a version is
written whole in one transaction (source row, version row, vectors, chunks and
their lexical rows) after its preconditions (``domain.source_writes``) are checked
inside it. A library transaction takes the generation row's lock first
(``database.py``), so the checks and the writes are one step for every writer on
every server.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from citadel.adapters.postgres.chunks import insert_chunks, retitle
from citadel.adapters.postgres.database import Connection, Cursor, Database
from citadel.adapters.postgres.embeddings import insert_vectors
from citadel.adapters.storage.rows import SOURCE_COLUMNS, source_from_row
from citadel.app.errors import refuse_write
from citadel.app.ports import ChunkVectors, SourceLocation
from citadel.domain.document import Chunk
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.source_writes import StoredSource, commit_refusal, update_refusal


class PostgresRegistry:
    """The ``SourceRegistry`` port on the library's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, tenant: str, source_id: str) -> Source | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE s.tenant = %s AND s.source_id = %s",
                (tenant, source_id),
            ).fetchone()
        return source_from_row(row) if row else None

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        with self._db.read() as conn:
            found = _matching(conn, tenant, content_sha256, origin)
            rows = found.fetchall() if found is not None else []
        return [source_from_row(row) for row in rows]

    def versions(self, tenant: str, source_id: str) -> Sequence[SourceVersion]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT source_id, version, content_sha256, parser, chunker, page_count,"
                " section_count, chunk_count, created_at, retained FROM source_versions"
                " WHERE tenant = %s AND source_id = %s ORDER BY version",
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
        # COLLATE "C": SQLite's byte order, whatever the database's collation.
        only = "" if tenant is None else " AND s.tenant = %s"
        args: tuple[str, ...] = () if tenant is None else (tenant,)
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources s WHERE NOT s.deleted{only}"
                ' ORDER BY s.title COLLATE "C", s.source_id COLLATE "C"',
                args,
            ).fetchall()
        return [source_from_row(row) for row in rows]

    def revisions(
        self, source_ids: Collection[str], tenant: str | None = None
    ) -> Mapping[str, int]:
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        only = "" if tenant is None else " AND tenant = %s"
        args: list[object] = [ids] if tenant is None else [ids, tenant]
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT source_id, sum(revision) FROM sources WHERE source_id = ANY(%s){only}"
                " GROUP BY source_id",
                args,
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
        # Pipelined: the reads the checks need go in one round trip with BEGIN and the
        # generation's bump, the writes in another with the COMMIT.
        with self._db.transaction(pipeline=True) as conn:
            stored = _read_stored(conn, source)
            others = (
                _matching(conn, source.tenant, version.content_sha256, "")
                if unique_in is not None
                else None
            )
            allocated = conn.execute(
                "SELECT nextval('chunk_rowids') FROM generate_series(1, %s)", (len(chunks),)
            )
            refuse_write(
                commit_refusal(
                    source,
                    version,
                    _stored(stored.fetchone()),
                    unique_in=unique_in,
                    holders=map(source_from_row, [] if others is None else others.fetchall()),
                )
            )
            rowids = sorted(int(row[0]) for row in allocated.fetchall())
            _record_former_locations(conn, source)
            conn.execute(
                "INSERT INTO sources(source_id, tenant, title, authors, year, tags, acl_groups,"
                " canonical_url, origin, current_version, deleted)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, false)"
                " ON CONFLICT (tenant, source_id) DO UPDATE SET title = excluded.title,"
                " authors = excluded.authors, year = excluded.year,"
                " tags = excluded.tags, acl_groups = excluded.acl_groups,"
                " canonical_url = excluded.canonical_url, origin = excluded.origin,"
                " current_version = excluded.current_version, deleted = false,"
                " revision = sources.revision + 1",
                (source.source_id, source.tenant, *_metadata(source), version.version),
            )
            conn.execute(
                "INSERT INTO source_versions(tenant, source_id, version, content_sha256, parser,"
                " chunker, page_count, section_count, chunk_count, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
                "DELETE FROM lexical WHERE rowid IN (SELECT rowid FROM chunks"
                " WHERE tenant = %s AND source_id = %s AND version < %s)",
                (source.tenant, source.source_id, version.version),
            )
            if vectors is not None:
                insert_vectors(conn, vectors.model, vectors.keys, vectors.matrix)
            keys = vectors.keys if vectors is not None else None
            insert_chunks(conn, source, chunks, keys, rowids)

    def update(self, source: Source) -> None:
        with self._db.transaction() as conn:
            # After the generation's lock: the check and the writes after it are one step.
            refuse_write(update_refusal(source, _stored(_read_stored(conn, source).fetchone())))
            _record_former_locations(conn, source)
            conn.execute(
                "UPDATE sources SET title = %s, authors = %s, year = %s, tags = %s,"
                " acl_groups = %s, canonical_url = %s, origin = %s, revision = revision + 1"
                " WHERE tenant = %s AND source_id = %s",
                (*_metadata(source), source.tenant, source.source_id),
            )
            # The title and the access tokens (ACL, authors, tags) follow the source.
            retitle(conn, source)

    def locations(self, tenant: str) -> Sequence[SourceLocation]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT * FROM (SELECT source_id, 'url' AS kind, canonical_url AS location,"
                " true AS current FROM sources"
                " WHERE tenant = %s AND canonical_url IS NOT NULL AND canonical_url != ''"
                " UNION ALL SELECT source_id, 'origin', origin, true FROM sources"
                " WHERE tenant = %s AND origin != ''"
                " UNION ALL SELECT source_id, kind, location, false FROM source_locations"
                " WHERE tenant = %s) AS places"
                ' ORDER BY source_id COLLATE "C", current DESC, kind, location COLLATE "C"',
                (tenant, tenant, tenant),
            ).fetchall()
        return [SourceLocation(row[0], row[1], row[2], bool(row[3])) for row in rows]

    def delete(self, tenant: str, source_id: str) -> None:
        key = (tenant, source_id)
        with self._db.transaction() as conn:
            changed = conn.execute(
                "UPDATE sources SET deleted = true, revision = revision + 1"
                " WHERE tenant = %s AND source_id = %s AND NOT deleted",
                key,
            ).rowcount
            if not changed:
                raise KeyError(source_id)
            conn.execute(
                "DELETE FROM lexical WHERE rowid IN"
                " (SELECT rowid FROM chunks WHERE tenant = %s AND source_id = %s)",
                key,
            )
            conn.execute("DELETE FROM chunks WHERE tenant = %s AND source_id = %s", key)
            conn.execute(
                "UPDATE source_versions SET retained = false WHERE tenant = %s AND source_id = %s",
                key,
            )

    def prune(self, tenant: str, source_id: str, keep: int) -> int:
        key = (tenant, source_id)
        # Most calls (one after every ingest) find nothing to drop: asked first without a
        # write, they cost one round trip and leave the generation (and every server's
        # search indexes) alone. A version committed after this read is pruned by its
        # committer's own call.
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT count(*) FROM source_versions"
                " WHERE tenant = %s AND source_id = %s AND retained",
                key,
            ).fetchone()
        if row is None or int(row[0]) <= max(keep, 1):
            return 0
        with self._db.transaction(pipeline=True) as conn:
            rows = conn.execute(
                "SELECT version FROM source_versions"
                " WHERE tenant = %s AND source_id = %s AND retained ORDER BY version DESC",
                key,
            ).fetchall()
            dropped = [int(row[0]) for row in rows[max(keep, 1) :]]
            if dropped:
                conn.execute(
                    "DELETE FROM lexical WHERE rowid IN (SELECT rowid FROM chunks"
                    " WHERE tenant = %s AND source_id = %s AND version = ANY(%s))",
                    (*key, dropped),
                )
                conn.execute(
                    "DELETE FROM chunks WHERE tenant = %s AND source_id = %s AND version = ANY(%s)",
                    (*key, dropped),
                )
                conn.execute(
                    "UPDATE source_versions SET retained = false"
                    " WHERE tenant = %s AND source_id = %s AND version = ANY(%s)",
                    (*key, dropped),
                )
        return len(dropped)


def _matching(conn: Connection, tenant: str, content_sha256: str, origin: str) -> Cursor | None:
    """The live sources whose current version has ``content_sha256`` (or whose origin is
    ``origin``), as a cursor to fetch from (a pipelined caller fetches later)."""
    if content_sha256:
        return conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s JOIN source_versions v"
            " ON v.tenant = s.tenant AND v.source_id = s.source_id"
            " AND v.version = s.current_version"
            " WHERE s.tenant = %s AND NOT s.deleted AND v.content_sha256 = %s"
            ' ORDER BY s.source_id COLLATE "C"',
            (tenant, content_sha256),
        )
    if origin:
        return conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM sources s"
            " WHERE s.tenant = %s AND NOT s.deleted AND s.origin = %s"
            ' ORDER BY s.source_id COLLATE "C"',
            (tenant, origin),
        )
    return None


def _read_stored(conn: Connection, source: Source) -> Cursor:
    """The stored row of ``source``'s tenant and id, as a cursor to fetch from (a
    pipelined caller fetches later); ``_stored`` makes it what the write rules read."""
    return conn.execute(
        "SELECT current_version, deleted, revision FROM sources"
        " WHERE tenant = %s AND source_id = %s",
        (source.tenant, source.source_id),
    )


def _stored(row: tuple[Any, ...] | None) -> StoredSource | None:
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


def _record_former_locations(conn: Connection, source: Source) -> None:
    """Keep the stored source's canonical URL and origin that ``source`` replaces."""
    for kind, column, new in (
        ("url", "canonical_url", source.canonical_url),
        ("origin", "origin", source.origin),
    ):
        conn.execute(
            "INSERT INTO source_locations(tenant, source_id, kind, location)"
            f" SELECT tenant, source_id, '{kind}', {column} FROM sources"
            f" WHERE tenant = %s AND source_id = %s AND {column} IS NOT NULL AND {column} != ''"
            f" AND {column} IS DISTINCT FROM %s ON CONFLICT DO NOTHING",
            (source.tenant, source.source_id, new),
        )
