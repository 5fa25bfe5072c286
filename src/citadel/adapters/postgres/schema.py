"""The PostgreSQL schema, applied idempotently on open under an advisory lock.

One ``schema_version`` row in ``meta`` names the schema a database has; ``MIGRATIONS``
holds the statements that take a database from one version to the next (2 adds
``chunks.units``, 3 the kept originals' tables). The library's tables are here; the
record tables (users, sessions, audit) are in ``schema_records.py``. ``meta`` also
holds the generation, a number every library write bumps in its own transaction
(``database.py``).
"""

from collections.abc import Mapping, Sequence

SCHEMA_VERSION = 3

# Every statement is idempotent: a new server on an existing database runs them all.
BASE_DDL: tuple[str, ...] = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    """CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
)""",
)

# The library's tables, as SQLite's (adapters/sqlite/schema.py): a source id names a
# source within its tenant, JSON lists are TEXT (adapters/storage/rows.py maps both).
LIBRARY_DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS sources (
    tenant          TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    title           TEXT NOT NULL,
    authors         TEXT NOT NULL,
    year            INTEGER,
    tags            TEXT NOT NULL,
    acl_groups      TEXT NOT NULL,
    canonical_url   TEXT,
    origin          TEXT NOT NULL,
    current_version INTEGER NOT NULL,
    deleted         BOOLEAN NOT NULL DEFAULT false,
    revision        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, source_id)
)""",
    "CREATE INDEX IF NOT EXISTS sources_origin ON sources(tenant, origin)",
    """CREATE TABLE IF NOT EXISTS source_versions (
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
    retained       BOOLEAN NOT NULL DEFAULT true,
    PRIMARY KEY (tenant, source_id, version),
    FOREIGN KEY (tenant, source_id) REFERENCES sources(tenant, source_id)
)""",
    "CREATE INDEX IF NOT EXISTS versions_hash ON source_versions(content_sha256)",
    # Canonical URLs and origins a move, a metadata change or a new version replaced.
    """CREATE TABLE IF NOT EXISTS source_locations (
    tenant    TEXT NOT NULL,
    source_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    location  TEXT NOT NULL,
    PRIMARY KEY (tenant, source_id, kind, location)
)""",
    # Row numbers in insertion order, as SQLite's rowid: ties in a ranking go to the lower.
    "CREATE SEQUENCE IF NOT EXISTS chunk_rowids",
    """CREATE TABLE IF NOT EXISTS chunks (
    rowid            BIGINT PRIMARY KEY DEFAULT nextval('chunk_rowids'),
    chunk_id         TEXT NOT NULL UNIQUE,
    tenant           TEXT NOT NULL,
    source_id        TEXT NOT NULL,
    version          INTEGER NOT NULL,
    ordinal          INTEGER NOT NULL,
    text             TEXT NOT NULL,
    sha256           TEXT NOT NULL,
    section_path     TEXT NOT NULL,
    chapter          TEXT NOT NULL,
    section          TEXT NOT NULL,
    page_start       INTEGER,
    page_end         INTEGER,
    page_label_start TEXT,
    page_label_end   TEXT,
    char_start       INTEGER NOT NULL,
    char_end         INTEGER NOT NULL,
    location         TEXT,
    section_key      TEXT NOT NULL,
    embed_key        TEXT,
    units            TEXT,
    FOREIGN KEY (tenant, source_id, version)
        REFERENCES source_versions(tenant, source_id, version)
)""",
    "CREATE INDEX IF NOT EXISTS chunks_version ON chunks(tenant, source_id, version, ordinal)",
    # Vectors by the hash of the text they embed, per model (pgvector, any dimension).
    """CREATE TABLE IF NOT EXISTS embeddings (
    key    TEXT NOT NULL,
    model  TEXT NOT NULL,
    vector vector NOT NULL,
    PRIMARY KEY (key, model)
)""",
    # The lexical index: FTS5's tokens (adapters/storage/tokens.py) of each indexed
    # chunk's columns, space-separated in order. Only current versions of live sources
    # are indexed, as in SQLite's FTS5 tables; BM25 ranks from memory (lexical.py).
    """CREATE TABLE IF NOT EXISTS lexical (
    rowid    BIGINT PRIMARY KEY REFERENCES chunks(rowid) ON DELETE CASCADE,
    tenant   TEXT NOT NULL,
    title    TEXT NOT NULL,
    headings TEXT NOT NULL,
    body     TEXT NOT NULL,
    access   TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS lexical_tenant ON lexical(tenant, rowid)",
)

# The original files of PDF versions, for the viewer's page images (``originals.py``):
# one row per version, its bytes in 1 MiB parts. A part is stored as it is (STORAGE
# EXTERNAL, PostgreSQL 16+: out of line, not compressed; a PDF's streams already are).
ORIGINALS_DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS originals (
    tenant    TEXT NOT NULL,
    source_id TEXT NOT NULL,
    version   INTEGER NOT NULL,
    sha256    TEXT NOT NULL,
    size      BIGINT NOT NULL,
    PRIMARY KEY (tenant, source_id, version)
)""",
    "CREATE INDEX IF NOT EXISTS originals_sha256 ON originals(sha256)",
    """CREATE TABLE IF NOT EXISTS original_parts (
    tenant    TEXT NOT NULL,
    source_id TEXT NOT NULL,
    version   INTEGER NOT NULL,
    part      INTEGER NOT NULL,
    data      BYTEA STORAGE EXTERNAL NOT NULL,
    PRIMARY KEY (tenant, source_id, version, part),
    FOREIGN KEY (tenant, source_id, version)
        REFERENCES originals(tenant, source_id, version) ON DELETE CASCADE
)""",
)
LIBRARY_DDL += ORIGINALS_DDL

# version -> the statements that upgrade a database of version - 1 to it.
MIGRATIONS: Mapping[int, Sequence[str]] = {
    # 2: each chunk's quotable units, cut at ingest (NULL for the chunks stored before).
    2: ("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS units TEXT",),
    # 3: the kept originals (made by LIBRARY_DDL on every open; named here as the step).
    3: ORIGINALS_DDL,
}
