"""The SQLite side of ``citadel db migrate``: the library file read in one snapshot.

The file is opened read-only and at this citadel's schema (an older one is refused:
opening it with a library first upgrades it in place); its rows come out table by
table as PostgreSQL stores them (booleans, text without NUL, vectors as arrays).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from citadel.adapters.sqlite.schema import SCHEMA_VERSION as SQLITE_SCHEMA
from citadel.adapters.sqlite.schema import fts_table
from citadel.app.errors import AppError
from citadel.domain.audit_chain import AuditHead, MalformedHead, parse_head

# Table -> its columns, in the order foreign keys need them filled.
TABLES: dict[str, list[str]] = {
    "sources": (
        "tenant source_id title authors year tags acl_groups canonical_url origin"
        " current_version deleted revision"
    ).split(),
    "source_versions": (
        "tenant source_id version content_sha256 parser chunker page_count section_count"
        " chunk_count created_at retained"
    ).split(),
    # The URLs and origins sources had before a move or a new version (shadow mode).
    "source_locations": ["tenant", "source_id", "kind", "location"],
    "chunks": (
        "rowid chunk_id tenant source_id version ordinal text sha256 section_path chapter"
        " section page_start page_end page_label_start page_label_end char_start char_end"
        " location section_key embed_key units"
    ).split(),
    "embeddings": ["key", "model", "vector"],
    "users": "name tenant role user_groups status created_at token_sha256".split(),
    "ended_sessions": ["session_id", "expires_at"],
    "audit_log": ["seq", "answer_id", "body", "prev_hash", "hash"],
}
_BOOLEANS = {("sources", "deleted"), ("source_versions", "retained")}
# PostgreSQL's text holds no NUL: chunk text is stored with U+FFFD, as ingest does.
_NUL_FREE = {("chunks", name) for name in ("text", "chapter", "section", "section_key")}
BATCH = 1000


class MigrationRefused(AppError):
    """The copy was not started, or was rolled back: the target is as it was."""


def _normalise(table: str, row: Sequence[object]) -> tuple[object, ...]:
    out: list[object] = []
    for name, stored in zip(TABLES[table], row, strict=True):
        value = stored
        if (table, name) in _BOOLEANS:
            value = bool(stored)
        elif (table, name) in _NUL_FREE and isinstance(stored, str):
            value = stored.replace("\x00", "\ufffd")
        elif name == "vector" and isinstance(stored, bytes):
            value = np.frombuffer(stored, dtype="<f4")
        out.append(value)
    return tuple(out)


def open_sqlite(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise MigrationRefused(f"there is no library at {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    found = int(row[0]) if row is not None else 0
    if found != SQLITE_SCHEMA:
        conn.close()
        raise MigrationRefused(
            f"{path} has schema {found}, not {SQLITE_SCHEMA}: open it once with this citadel"
            " (any command, e.g. `citadel sources list`) to upgrade it first"
        )
    conn.execute("BEGIN")  # one snapshot for the whole copy
    return conn


# Tables a library file of the current schema may still lack: they are made when a
# library opens the file, and the copy opens it read-only. A missing one holds no rows.
_ADDED_IN_PLACE = frozenset({"source_locations"})


def _missing(conn: sqlite3.Connection, table: str) -> bool:
    return (
        table in _ADDED_IN_PLACE
        and not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
    )


def sqlite_rows(conn: sqlite3.Connection, table: str) -> Iterator[tuple[object, ...]]:
    if _missing(conn, table):
        return
    cursor = conn.execute(f"SELECT {', '.join(TABLES[table])} FROM {table}")
    while batch := cursor.fetchmany(BATCH):
        for row in batch:
            yield _normalise(table, row)


def count(conn: sqlite3.Connection, table: str) -> int:
    if _missing(conn, table):
        return 0
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def indexed_rowids(conn: sqlite3.Connection) -> list[int]:
    """The chunks SQLite's FTS5 tables index (current versions of live sources)."""
    rowids: list[int] = []
    for (tenant,) in conn.execute("SELECT DISTINCT tenant FROM sources").fetchall():
        name = fts_table(tenant)
        held = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        if held is not None:
            rowids += [r for (r,) in conn.execute(f"SELECT rowid FROM {name}")]
    return sorted(rowids)


def sqlite_head(conn: sqlite3.Connection) -> AuditHead | MalformedHead | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()
    if row is None:
        return None
    try:
        return parse_head(row[0])
    except MalformedHead as exc:
        return exc
