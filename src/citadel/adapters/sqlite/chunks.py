"""Chunk rows in SQLite: written with their FTS5 entry, read back by version or by id.

Each tenant's chunks are indexed in an FTS5 table of its own (``schema.fts_table``): BM25's
collection statistics (how many chunks, how many hold a term, their lengths) are
then the tenant's alone, so no tenant's scores or ranking depend on, or reveal,
what another tenant's library holds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.schema import ensure_fts
from citadel.adapters.storage.access import access_text
from citadel.adapters.storage.rows import (
    CHUNK_COLUMNS,
    SOURCE_COLUMNS,
    chunk_from_row,
    section_key,
    source_from_row,
)
from citadel.app.ports import StoredPassage
from citadel.domain.document import Chunk
from citadel.domain.source import Source


class SqliteChunks:
    """The ``ChunkStore`` port on the library's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def chunks(self, tenant: str, source_id: str, version: int) -> Sequence[Chunk]:
        rows = self._db.reader.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c"
            " WHERE c.tenant = ? AND c.source_id = ? AND c.version = ? ORDER BY c.ordinal",
            (tenant, source_id, version),
        ).fetchall()
        return [chunk_from_row(row) for row in rows]

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self._db.reader.execute(
            f"SELECT {CHUNK_COLUMNS}, {SOURCE_COLUMNS} FROM chunks c"
            " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
            f" WHERE c.chunk_id IN ({marks})",
            tuple(chunk_ids),
        ).fetchall()
        width = len(CHUNK_COLUMNS.split(","))
        out: dict[str, StoredPassage] = {}
        for row in rows:
            chunk = chunk_from_row(row[:width])
            out[chunk.chunk_id] = StoredPassage(chunk=chunk, source=source_from_row(row[width:]))
        return out

    def chunks_without_units(self, limit: int) -> Sequence[tuple[str, str]]:
        rows = self._db.reader.execute(
            "SELECT chunk_id, text FROM chunks WHERE units IS NULL ORDER BY rowid LIMIT ?",
            (limit,),
        ).fetchall()
        return [(str(chunk_id), str(text)) for chunk_id, text in rows]

    def store_units(self, units: Mapping[str, str]) -> int:
        # No cache derives from the units: the generation (and the dense matrix) stays.
        with self._db.transaction(library=False) as conn:
            return conn.executemany(
                "UPDATE chunks SET units = ? WHERE chunk_id = ? AND units IS NULL",
                [(form, chunk_id) for chunk_id, form in units.items()],
            ).rowcount


def insert_chunks(
    conn: sqlite3.Connection,
    source: Source,
    chunks: Sequence[Chunk],
    embed_keys: Sequence[str] | None,
) -> None:
    """Each chunk's row (which says its source's tenant) and its entry in the tenant's
    FTS5 table (title, headings, body, access tokens)."""
    fts = ensure_fts(conn, source.tenant)
    for index, chunk in enumerate(chunks):
        cursor = conn.execute(
            "INSERT INTO chunks(chunk_id, tenant, source_id, version, ordinal, text, sha256,"
            " section_path, chapter, section, page_start, page_end, page_label_start,"
            " page_label_end, char_start, char_end, location, section_key, embed_key, units)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                chunk.chunk_id,
                source.tenant,
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
                embed_keys[index] if embed_keys is not None else None,
                chunk.units,
            ),
        )
        conn.execute(
            f"INSERT INTO {fts}(rowid, title, headings, body, access) VALUES (?, ?, ?, ?, ?)",
            (
                cursor.lastrowid,
                source.title,
                " / ".join(chunk.section_path),
                chunk.text,
                access_text(source, chunk),
            ),
        )
