"""The SQLite schema, applied idempotently on open (older files are upgraded first,
``upgrade.py``).

A source id names a source within its tenant: sources are keyed by
``(tenant, source_id)``, and their versions and chunks carry the tenant too.
Chunk ids stay unique across the file (the tenant is part of their key). Schema 6
indexes each tenant's chunks in an FTS5 table of its own (``fts_table``); schema 7
stores each chunk's quotable units beside its text (``Chunk.units``).
"""

import hashlib
import sqlite3

SCHEMA_VERSION = 7

# The tables a source id keys, with ``{name}`` for the table's name: the upgrade
# (``upgrade.py``) builds them under new names, copies the rows and renames them.
LIBRARY_TABLES: dict[str, str] = {
    "sources": """
CREATE TABLE IF NOT EXISTS {name} (
    tenant          TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    title           TEXT NOT NULL,
    authors         TEXT NOT NULL,          -- JSON list
    year            INTEGER,
    tags            TEXT NOT NULL,          -- JSON list
    acl_groups      TEXT NOT NULL,          -- JSON list
    canonical_url   TEXT,
    origin          TEXT NOT NULL,
    current_version INTEGER NOT NULL,
    deleted         INTEGER NOT NULL DEFAULT 0,
    revision        INTEGER NOT NULL DEFAULT 0,  -- bumped by every change to the source
    PRIMARY KEY (tenant, source_id)
);
""",
    "source_versions": """
CREATE TABLE IF NOT EXISTS {name} (
    tenant         TEXT NOT NULL,
    source_id      TEXT NOT NULL,
    version        INTEGER NOT NULL,
    content_sha256 TEXT NOT NULL,
    parser         TEXT NOT NULL,
    chunker        TEXT NOT NULL,
    page_count     INTEGER NOT NULL,
    section_count  INTEGER NOT NULL,
    chunk_count    INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    retained       INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant, source_id, version),
    FOREIGN KEY (tenant, source_id) REFERENCES sources(tenant, source_id)
);
""",
    "chunks": """
CREATE TABLE IF NOT EXISTS {name} (
    rowid            INTEGER PRIMARY KEY,
    chunk_id         TEXT NOT NULL UNIQUE,
    tenant           TEXT NOT NULL,
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
    units            TEXT,                  -- quotable units cut at ingest (JSON), or NULL
    FOREIGN KEY (tenant, source_id, version)
        REFERENCES source_versions(tenant, source_id, version)
);
""",
}


def library_table(table: str, name: str) -> str:
    """The CREATE statement of ``table`` (a key of ``LIBRARY_TABLES``) named ``name``."""
    return LIBRARY_TABLES[table].replace("{name}", name)


SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
    + library_table("sources", "sources")
    + """CREATE INDEX IF NOT EXISTS sources_tenant ON sources(tenant, deleted);
CREATE INDEX IF NOT EXISTS sources_origin ON sources(tenant, origin);
"""
    + library_table("source_versions", "source_versions")
    + """CREATE INDEX IF NOT EXISTS versions_hash ON source_versions(content_sha256);
"""
    + library_table("chunks", "chunks")
    + """CREATE INDEX IF NOT EXISTS chunks_version ON chunks(tenant, source_id, version, ordinal);
-- Vectors by the hash of the text they embed, per model: a cache that makes
-- re-ingesting unchanged text free. float32 little-endian blobs.
CREATE TABLE IF NOT EXISTS embeddings (
    key    TEXT NOT NULL,
    model  TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (key, model)
) WITHOUT ROWID;
-- Where sources were before: a canonical URL or origin that a move, a metadata change
-- or a new version replaced (so a stale link can be told from an invented one).
-- New in place: CREATE IF NOT EXISTS adds it to older files.
CREATE TABLE IF NOT EXISTS source_locations (
    tenant    TEXT NOT NULL,
    source_id TEXT NOT NULL,
    kind      TEXT NOT NULL,                -- 'url' or 'origin'
    location  TEXT NOT NULL,
    PRIMARY KEY (tenant, source_id, kind, location)
) WITHOUT ROWID;
-- Users and the sha256 of their API tokens (never the tokens). Names are unique
-- across tenants; user_groups is a JSON list; status is 'active' or 'disabled'.
CREATE TABLE IF NOT EXISTS users (
    name         TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    role         TEXT NOT NULL,
    user_groups  TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS users_tenant ON users(tenant, name);
-- Browser sessions signed out before they expired (the id is a hash of the session's
-- random CSRF secret, so it reveals nothing); kept until they would have expired.
-- New in place: CREATE IF NOT EXISTS adds it to older files of schema 4.
CREATE TABLE IF NOT EXISTS ended_sessions (
    session_id TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
-- OpenID identities: the (issuer, subject) a provider signs a user in as (never an
-- email). One-time sign-in links: the sha256 of each link's secret, until it is used
-- or expires. New in place: CREATE IF NOT EXISTS adds them to older files.
CREATE TABLE IF NOT EXISTS user_identities (
    issuer  TEXT NOT NULL,
    subject TEXT NOT NULL,
    name    TEXT NOT NULL REFERENCES users(name),
    PRIMARY KEY (issuer, subject)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS signin_links (
    link_sha256 TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;
-- The FTS5 index is one table per tenant (fts_table below, made by the first
-- write of the tenant's chunks), so BM25's statistics are the tenant's own. Only
-- current versions of live sources are indexed; rowid = chunks.rowid. `access`
-- holds the scope and filter tokens of access.py (weight 0 in bm25).
-- The audit log: append-only (triggers refuse edits and deletions through SQL),
-- hash-chained (citadel.domain.audit); its head (count, last hash) is in meta.
CREATE TABLE IF NOT EXISTS audit_log (
    seq       INTEGER PRIMARY KEY,
    answer_id TEXT NOT NULL UNIQUE,
    body      TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""
)


FTS_PREFIX = "fts_"
_FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5("
    "title, headings, body, access, tokenize = 'porter unicode61 remove_diacritics 2')"
)


def fts_table(tenant: str) -> str:
    """The name of ``tenant``'s FTS5 table (a hash: any tenant name is a safe identifier)."""
    digest = hashlib.blake2b(tenant.encode("utf-8", "surrogatepass"), digest_size=16)
    return FTS_PREFIX + digest.hexdigest()


def ensure_fts(conn: sqlite3.Connection, tenant: str) -> str:
    """``tenant``'s FTS5 table, made if missing (inside the caller's transaction)."""
    name = fts_table(tenant)
    conn.execute(_FTS_DDL.format(name=name))
    return name


def fts_exists(conn: sqlite3.Connection, tenant: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (fts_table(tenant),)
        ).fetchone()
        is not None
    )
