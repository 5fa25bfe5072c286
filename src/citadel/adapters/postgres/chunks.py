"""Chunk rows in PostgreSQL, written with their lexical row; read back by version or by id.

A chunk's lexical row holds FTS5's tokens of the four columns SQLite's FTS5 table
indexes (title, headings, body, access: ``adapters/storage/tokens.py``), so BM25
over them is SQLite's ranking. The tenant is on every lexical row: each tenant's
statistics are its own, as with SQLite's table per tenant.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence

from citadel.adapters.postgres.database import Connection, Database
from citadel.adapters.storage.access import access_text
from citadel.adapters.storage.rows import (
    CHUNK_COLUMNS,
    SOURCE_COLUMNS,
    chunk_from_row,
    section_key,
    source_from_row,
)
from citadel.adapters.storage.tokens import DocumentTokens
from citadel.app.ports import StoredPassage
from citadel.domain.document import Chunk
from citadel.domain.source import Source

LEXICAL_COLUMNS = 4  # title, headings, body, access


@functools.cache
def _tokenizer() -> DocumentTokens:
    return DocumentTokens(LEXICAL_COLUMNS)


class PostgresChunks:
    """The ``ChunkStore`` port on the library's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def chunks(self, tenant: str, source_id: str, version: int) -> Sequence[Chunk]:
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks c"
                " WHERE c.tenant = %s AND c.source_id = %s AND c.version = %s"
                " ORDER BY c.ordinal",
                (tenant, source_id, version),
            ).fetchall()
        return [chunk_from_row(row) for row in rows]

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        if not chunk_ids:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS}, {SOURCE_COLUMNS} FROM chunks c"
                " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
                " WHERE c.chunk_id = ANY(%s)",
                (list(chunk_ids),),
            ).fetchall()
        width = len(CHUNK_COLUMNS.split(","))
        out: dict[str, StoredPassage] = {}
        for row in rows:
            chunk = chunk_from_row(row[:width])
            out[chunk.chunk_id] = StoredPassage(chunk=chunk, source=source_from_row(row[width:]))
        return out

    def chunks_without_units(self, limit: int) -> Sequence[tuple[str, str]]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT chunk_id, text FROM chunks WHERE units IS NULL ORDER BY rowid LIMIT %s",
                (limit,),
            ).fetchall()
        return [(str(chunk_id), str(text)) for chunk_id, text in rows]

    def store_units(self, units: Mapping[str, str]) -> int:
        if not units:
            return 0
        # No cache derives from the units: the generation (and every server's indexes)
        # stays as it is.
        with self._db.transaction(library=False) as conn:
            cursor = conn.execute(
                "UPDATE chunks c SET units = u.form"
                " FROM unnest(%s::text[], %s::text[]) AS u(chunk_id, form)"
                " WHERE c.chunk_id = u.chunk_id AND c.units IS NULL",
                (list(units), list(units.values())),
            )
            return cursor.rowcount


def lexical_tokens(source: Source, chunks: Sequence[Chunk]) -> list[tuple[str, str, str, str]]:
    """Each chunk's four lexical columns as FTS5 tokenises them, space-separated."""
    documents = [
        (source.title, " / ".join(c.section_path), c.text, access_text(source, c)) for c in chunks
    ]
    out = []
    for title, headings, body, access in _tokenizer()(documents):
        out.append((" ".join(title), " ".join(headings), " ".join(body), " ".join(access)))
    return out


def insert_chunks(
    conn: Connection,
    source: Source,
    chunks: Sequence[Chunk],
    embed_keys: Sequence[str] | None,
    rowids: Sequence[int],
) -> None:
    """Each chunk's row (which says its source's tenant) and its lexical row, under the
    given rowids (ascending; from ``chunk_rowids``). Batched statements, not COPY, so
    that a pipelined transaction sends them without waiting (``registry.py``)."""
    if not chunks:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO chunks(rowid, chunk_id, tenant, source_id, version, ordinal, text,"
            " sha256, section_path, chapter, section, page_start, page_end, page_label_start,"
            " page_label_end, char_start, char_end, location, section_key, embed_key, units)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " %s, %s, %s)",
            [
                (
                    rowids[index],
                    chunk.chunk_id,
                    source.tenant,
                    chunk.source_id,
                    chunk.version,
                    chunk.ordinal,
                    _text(chunk.text),
                    chunk.sha256,
                    json.dumps(list(chunk.section_path), ensure_ascii=False),
                    _text(chunk.chapter),
                    _text(chunk.section),
                    chunk.page_start,
                    chunk.page_end,
                    chunk.page_label_start,
                    chunk.page_label_end,
                    chunk.char_start,
                    chunk.char_end,
                    chunk.location,
                    _text(section_key(chunk.section_path)),
                    embed_keys[index] if embed_keys is not None else None,
                    chunk.units,
                )
                for index, chunk in enumerate(chunks)
            ],
        )
        cursor.executemany(
            "INSERT INTO lexical(rowid, tenant, title, headings, body, access)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (rowid, source.tenant, *columns)
                for rowid, columns in zip(rowids, lexical_tokens(source, chunks), strict=True)
            ],
        )


def retitle(conn: Connection, source: Source) -> None:
    """The title and access tokens of ``source``'s indexed chunks follow the source."""
    rows = conn.execute(
        f"SELECT l.rowid, {CHUNK_COLUMNS} FROM chunks c JOIN lexical l ON l.rowid = c.rowid"
        " WHERE c.tenant = %s AND c.source_id = %s ORDER BY l.rowid",
        (source.tenant, source.source_id),
    ).fetchall()
    if not rows:
        return
    chunks = [chunk_from_row(row[1:]) for row in rows]
    tokens = lexical_tokens(source, chunks)
    conn.execute(
        "UPDATE lexical l SET title = u.title, access = u.access"
        " FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS u(rowid, title, access)"
        " WHERE l.rowid = u.rowid",
        ([row[0] for row in rows], [t[0] for t in tokens], [t[3] for t in tokens]),
    )


def _text(value: str) -> str:
    # PostgreSQL's text holds no NUL (SQLite's does): the NUL becomes U+FFFD, which
    # tokenises as FTS5 tokenises a NUL (a separator).
    return value.replace("\x00", "\ufffd")
