"""Libraries as older citadels made them, for the upgrade tests.

``to_schema_4`` rewrites a library file into the layout of schema 4, when source
ids were global: the three tables keyed by ``source_id`` alone, no tenant on
versions and chunks. It keeps every row as it is (chunk ids and rowids included),
so what the upgrade must give back is exactly what was there.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# The schema-4 DDL of the tables source ids key (src/citadel/adapters/sqlite/schema.py
# before schema 5), verbatim.
SCHEMA_4_TABLES = """
CREATE TABLE sources (
    source_id       TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    title           TEXT NOT NULL,
    authors         TEXT NOT NULL,          -- JSON list
    year            INTEGER,
    tags            TEXT NOT NULL,          -- JSON list
    acl_groups      TEXT NOT NULL,          -- JSON list
    canonical_url   TEXT,
    origin          TEXT NOT NULL,
    current_version INTEGER NOT NULL,
    deleted         INTEGER NOT NULL DEFAULT 0,
    revision        INTEGER NOT NULL DEFAULT 0   -- bumped by every change to the source
);
CREATE INDEX sources_tenant ON sources(tenant, deleted);
CREATE INDEX sources_origin ON sources(tenant, origin);
CREATE TABLE source_versions (
    source_id      TEXT NOT NULL REFERENCES sources(source_id),
    version        INTEGER NOT NULL,
    content_sha256 TEXT NOT NULL,
    parser         TEXT NOT NULL,
    chunker        TEXT NOT NULL,
    page_count     INTEGER NOT NULL,
    section_count  INTEGER NOT NULL,
    chunk_count    INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    retained       INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (source_id, version)
);
CREATE INDEX versions_hash ON source_versions(content_sha256);
CREATE TABLE chunks (
    rowid            INTEGER PRIMARY KEY,
    chunk_id         TEXT NOT NULL UNIQUE,
    source_id        TEXT NOT NULL,
    version          INTEGER NOT NULL,
    ordinal          INTEGER NOT NULL,
    text             TEXT NOT NULL,
    sha256           TEXT NOT NULL,
    section_path     TEXT NOT NULL,         -- JSON list
    chapter          TEXT NOT NULL,
    section          TEXT NOT NULL,
    page_start       INTEGER,
    page_end         INTEGER,
    page_label_start TEXT,
    page_label_end   TEXT,
    char_start       INTEGER NOT NULL,
    char_end         INTEGER NOT NULL,
    location         TEXT,
    section_key      TEXT NOT NULL,         -- section path joined by U+001F, for prefix filters
    embed_key        TEXT,                  -- sha256 of the embedded text, or NULL
    FOREIGN KEY (source_id, version) REFERENCES source_versions(source_id, version)
);
CREATE INDEX chunks_version ON chunks(source_id, version, ordinal);
"""

_COLUMNS = {
    "sources": "source_id, tenant, title, authors, year, tags, acl_groups, canonical_url,"
    " origin, current_version, deleted, revision",
    "source_versions": "source_id, version, content_sha256, parser, chunker, page_count,"
    " section_count, chunk_count, created_at, retained",
    "chunks": "rowid, chunk_id, source_id, version, ordinal, text, sha256, section_path,"
    " chapter, section, page_start, page_end, page_label_start, page_label_end, char_start,"
    " char_end, location, section_key, embed_key",
}


# Schemas 4 and 5 indexed every tenant's chunks in one FTS5 table.
SHARED_FTS = """CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, headings, body, access,
    tokenize = 'porter unicode61 remove_diacritics 2'
)"""


def _one_fts_index(conn: sqlite3.Connection) -> None:
    """The per-tenant FTS5 tables (schema 6) merged back into schema 5's one table."""
    tables = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'fts_*'"
            " AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        )
    ]
    conn.execute(SHARED_FTS)
    for table in tables:
        conn.execute(
            "INSERT INTO chunks_fts(rowid, title, headings, body, access)"
            f" SELECT rowid, title, headings, body, access FROM {table}"
        )
        conn.execute(f"DROP TABLE {table}")


def to_schema_6(path: Path) -> None:
    """Rewrite the (closed) library at ``path`` into schema 6's layout: no stored units."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("ALTER TABLE chunks DROP COLUMN units")
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()


def to_schema_5(path: Path) -> None:
    """Rewrite the (closed) library at ``path`` into schema 5's layout: one FTS5 index,
    no stored units."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("ALTER TABLE chunks DROP COLUMN units")
        _one_fts_index(conn)
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()


def to_schema_4(path: Path) -> None:
    """Rewrite the (closed) library at ``path`` into schema 4's layout."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("BEGIN")
        tenants = {str(row[0]) for row in conn.execute("SELECT DISTINCT tenant FROM sources")}
        ids = conn.execute("SELECT count(DISTINCT source_id), count(*) FROM sources").fetchone()
        if ids[0] != ids[1]:
            raise ValueError(f"schema 4 cannot hold one source id in two tenants ({tenants})")
        for table in _COLUMNS:
            conn.execute(f"ALTER TABLE {table} RENAME TO {table}_v5")
        for index in ("sources_tenant", "sources_origin", "versions_hash", "chunks_version"):
            conn.execute(f"DROP INDEX {index}")
        for statement in SCHEMA_4_TABLES.split(";"):
            if statement.strip():
                conn.execute(statement)
        for table, columns in _COLUMNS.items():
            conn.execute(f"INSERT INTO {table}({columns}) SELECT {columns} FROM {table}_v5")
        for table in ("chunks", "source_versions", "sources"):
            conn.execute(f"DROP TABLE {table}_v5")
        _one_fts_index(conn)
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()
