"""Upgrading an older library file in place, before the schema is applied.

Schema 3 → 4 adds the per-source revision counter. Schema 4 → 5 scopes source
ids to their tenant: ``sources``, ``source_versions`` and ``chunks`` are rebuilt
keyed by ``(tenant, source_id)`` (SQLite cannot change a primary key in place),
in one transaction with foreign keys off, checked before it commits. Every row is
kept as stored: chunk ids (the audit log names them), chunk rowids (the FTS5
index and the HNSW index name them), revisions and tombstones. Schema 5 → 6
splits the one FTS5 index into one table per tenant (``schema.fts_table``), so
BM25's statistics are each tenant's own; the entries move as they are, rowids
included, in the same transaction. Schema 6 → 7 adds ``chunks.units``, the quotable
units ingest cuts (NULL for the chunks stored before: the extractive generator cuts
those itself on the answer path, as every version before did).
"""

from __future__ import annotations

import sqlite3

from citadel.adapters.sqlite.schema import SCHEMA_VERSION, ensure_fts, library_table

_SOURCE_COLUMNS = (
    "tenant, source_id, title, authors, year, tags, acl_groups, canonical_url, origin,"
    " current_version, deleted, revision"
)
_VERSION_COLUMNS = (
    "source_id, version, content_sha256, parser, chunker, page_count, section_count,"
    " chunk_count, created_at, retained"
)
_CHUNK_COLUMNS = (
    "rowid, chunk_id, source_id, version, ordinal, text, sha256, section_path, chapter,"
    " section, page_start, page_end, page_label_start, page_label_end, char_start, char_end,"
    " location, section_key, embed_key"
)


class UpgradeFailed(RuntimeError):
    """The rebuilt tables do not hold what the old ones did; nothing was changed."""


def stored_version(conn: sqlite3.Connection) -> int | None:
    """The schema version the file records; None for a new (empty) file."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if has_meta is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row is not None else None


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring a schema 3, 4, 5 or 6 file to ``SCHEMA_VERSION``; anything else is left alone.

    Safe against another process opening the same file at once: the version is read
    again under the write lock, so only one of them upgrades.
    """
    if stored_version(conn) not in {3, 4, 5, 6}:
        return
    conn.commit()
    # Foreign keys cannot be switched inside a transaction; off, the old tables can be
    # dropped while the new ones (which name them) are built.
    conn.execute("PRAGMA foreign_keys=OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = stored_version(conn)
            if found == 3:
                conn.execute("ALTER TABLE sources ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")
                found = 4
            if found == 4:
                _tenant_scoped_ids(conn)
                found = 5
            if found == 5:
                _fts_per_tenant(conn)
                found = 6
            if found == 6:
                _stored_units(conn)
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
                # Caches derived from the library (the dense matrix) reload.
                conn.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
                )
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
    finally:
        conn.execute("PRAGMA foreign_keys=ON")


def _tenant_scoped_ids(conn: sqlite3.Connection) -> None:
    """Schema 4 → 5: the three tables rebuilt with the tenant in their keys."""
    before = _counts(conn)
    conn.execute(library_table("sources", "sources_v5"))
    conn.execute(f"INSERT INTO sources_v5({_SOURCE_COLUMNS}) SELECT {_SOURCE_COLUMNS} FROM sources")
    conn.execute(library_table("source_versions", "source_versions_v5"))
    conn.execute(
        f"INSERT INTO source_versions_v5(tenant, {_VERSION_COLUMNS})"
        f" SELECT s.tenant, {', '.join('v.' + c.strip() for c in _VERSION_COLUMNS.split(','))}"
        " FROM source_versions v JOIN sources s ON s.source_id = v.source_id"
    )
    conn.execute(library_table("chunks", "chunks_v5"))
    conn.execute(
        f"INSERT INTO chunks_v5(tenant, {_CHUNK_COLUMNS})"
        f" SELECT s.tenant, {', '.join('c.' + c.strip() for c in _CHUNK_COLUMNS.split(','))}"
        " FROM chunks c JOIN sources s ON s.source_id = c.source_id"
    )
    for table in ("chunks", "source_versions", "sources"):
        conn.execute(f"DROP TABLE {table}")
    for table in ("sources", "source_versions", "chunks"):
        conn.execute(f"ALTER TABLE {table}_v5 RENAME TO {table}")
    # The indexes went with the old tables; the schema creates them again after this.
    after = _counts(conn)
    if after != before:
        raise UpgradeFailed(f"rows before {before} and after {after} differ")
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise UpgradeFailed(f"{len(broken)} rows refer to nothing after the upgrade")


def _fts_per_tenant(conn: sqlite3.Connection) -> None:
    """Schema 5 → 6: each tenant's entries of the one FTS5 index into the tenant's table."""
    has_shared = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunks_fts'"
    ).fetchone()
    if has_shared is None:
        return
    (before,) = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()
    moved = 0
    tenants = [row[0] for row in conn.execute("SELECT DISTINCT tenant FROM chunks ORDER BY 1")]
    for tenant in tenants:
        table = ensure_fts(conn, tenant)
        moved += conn.execute(
            f"INSERT INTO {table}(rowid, title, headings, body, access)"
            " SELECT f.rowid, f.title, f.headings, f.body, f.access FROM chunks_fts f"
            " JOIN chunks c ON c.rowid = f.rowid WHERE c.tenant = ?",
            (tenant,),
        ).rowcount
    if moved != before:
        raise UpgradeFailed(f"{before} index entries, {moved} of them moved to their tenant")
    conn.execute("DROP TABLE chunks_fts")


def _stored_units(conn: sqlite3.Connection) -> None:
    """Schema 6 → 7: the ``units`` column (a file rebuilt by 4 → 5 has it already)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    if "units" not in columns:
        conn.execute("ALTER TABLE chunks ADD COLUMN units TEXT")


def _counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    return tuple(
        int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        for table in ("sources", "source_versions", "chunks")
    )
