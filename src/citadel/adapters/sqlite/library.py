"""SQLite library: source registry, chunk store and FTS5 lexical index in one file.

Reads use one connection per thread; writes go through one connection under
a lock, each version in a single transaction, so a crash never leaves a
partial version visible (WAL mode).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from citadel.adapters.sqlite.schema import SCHEMA, SCHEMA_VERSION
from citadel.app.ports import LexicalHit, StoredPassage
from citadel.domain.document import Chunk
from citadel.domain.model import SearchFilters
from citadel.domain.source import AccessScope, Source, SourceVersion

# bm25() column weights: title, headings (section path), body.
DEFAULT_WEIGHTS = (4.0, 2.0, 1.0)
_BUSY_TIMEOUT_S = 30.0


class SqliteLibrary:
    def __init__(self, path: Path, *, weights: tuple[float, float, float] = DEFAULT_WEIGHTS):
        self._path = path
        self._weights = weights
        self._local = threading.local()
        self._write_lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        with self._write_lock:
            self._writer.executescript(SCHEMA)
            self._writer.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            self._writer.commit()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    @property
    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def close(self) -> None:
        self._writer.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- SourceRegistry -------------------------------------------------------------

    def get(self, source_id: str) -> Source | None:
        row = self._reader.execute(
            f"SELECT {_SOURCE_COLUMNS} FROM sources s WHERE s.source_id = ?", (source_id,)
        ).fetchone()
        return _source(row) if row else None

    def find(self, tenant: str, *, content_sha256: str = "", origin: str = "") -> Source | None:
        if content_sha256:
            row = self._reader.execute(
                f"SELECT {_SOURCE_COLUMNS} FROM sources s JOIN source_versions v"
                " ON v.source_id = s.source_id AND v.version = s.current_version"
                " WHERE s.tenant = ? AND s.deleted = 0 AND v.content_sha256 = ?"
                " ORDER BY s.source_id LIMIT 1",
                (tenant, content_sha256),
            ).fetchone()
        elif origin:
            row = self._reader.execute(
                f"SELECT {_SOURCE_COLUMNS} FROM sources s"
                " WHERE s.tenant = ? AND s.deleted = 0 AND s.origin = ?"
                " ORDER BY s.source_id LIMIT 1",
                (tenant, origin),
            ).fetchone()
        else:
            return None
        return _source(row) if row else None

    def versions(self, source_id: str) -> Sequence[SourceVersion]:
        rows = self._reader.execute(
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
        sql = f"SELECT {_SOURCE_COLUMNS} FROM sources s WHERE s.deleted = 0"
        args: tuple[str, ...] = ()
        if tenant is not None:
            sql += " AND s.tenant = ?"
            args = (tenant,)
        rows = self._reader.execute(sql + " ORDER BY s.title, s.source_id", args).fetchall()
        return [_source(row) for row in rows]

    def commit_version(
        self, source: Source, version: SourceVersion, chunks: Sequence[Chunk]
    ) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO sources(source_id, tenant, title, authors, year, tags, acl_groups,"
                " canonical_url, origin, current_version, deleted)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
                " ON CONFLICT(source_id) DO UPDATE SET tenant = excluded.tenant,"
                " title = excluded.title, authors = excluded.authors, year = excluded.year,"
                " tags = excluded.tags, acl_groups = excluded.acl_groups,"
                " canonical_url = excluded.canonical_url, origin = excluded.origin,"
                " current_version = excluded.current_version, deleted = 0",
                (
                    source.source_id,
                    source.tenant,
                    source.title,
                    json.dumps(list(source.authors)),
                    source.year,
                    json.dumps(list(source.tags)),
                    json.dumps(sorted(source.acl_groups)),
                    source.canonical_url,
                    source.origin,
                    version.version,
                ),
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
            for chunk in chunks:
                cursor = conn.execute(
                    "INSERT INTO chunks(chunk_id, source_id, version, ordinal, text, sha256,"
                    " section_path, chapter, section, page_start, page_end, page_label_start,"
                    " page_label_end, char_start, char_end, location)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    ),
                )
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, headings, body) VALUES (?, ?, ?, ?)",
                    (cursor.lastrowid, source.title, " / ".join(chunk.section_path), chunk.text),
                )

    def update(self, source: Source) -> None:
        with self._transaction() as conn:
            changed = conn.execute(
                "UPDATE sources SET title = ?, authors = ?, year = ?, tags = ?, acl_groups = ?,"
                " canonical_url = ?, origin = ? WHERE source_id = ? AND deleted = 0",
                (
                    source.title,
                    json.dumps(list(source.authors)),
                    source.year,
                    json.dumps(list(source.tags)),
                    json.dumps(sorted(source.acl_groups)),
                    source.canonical_url,
                    source.origin,
                    source.source_id,
                ),
            ).rowcount
            if not changed:
                raise KeyError(source.source_id)
            conn.execute(
                "UPDATE chunks_fts SET title = ? WHERE rowid IN"
                " (SELECT rowid FROM chunks WHERE source_id = ?)",
                (source.title, source.source_id),
            )

    def delete(self, source_id: str) -> None:
        with self._transaction() as conn:
            changed = conn.execute(
                "UPDATE sources SET deleted = 1 WHERE source_id = ? AND deleted = 0", (source_id,)
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
        with self._transaction() as conn:
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
        rows = self._reader.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.source_id = ? AND c.version = ?"
            " ORDER BY c.ordinal",
            (source_id, version),
        ).fetchall()
        return [_chunk(row) for row in rows]

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self._reader.execute(
            f"SELECT {_CHUNK_COLUMNS}, {_SOURCE_COLUMNS} FROM chunks c"
            f" JOIN sources s ON s.source_id = c.source_id WHERE c.chunk_id IN ({marks})",
            tuple(chunk_ids),
        ).fetchall()
        width = len(_CHUNK_COLUMNS.split(","))
        out: dict[str, StoredPassage] = {}
        for row in rows:
            chunk = _chunk(row[:width])
            out[chunk.chunk_id] = StoredPassage(chunk=chunk, source=_source(row[width:]))
        return out

    # -- LexicalIndex ---------------------------------------------------------------

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        if not terms:
            return []
        match = " OR ".join(_fts_string(term) for term in terms)
        weights = ", ".join(str(float(w)) for w in self._weights)
        sql = (
            f"SELECT c.chunk_id, -bm25(chunks_fts, {weights}) AS score FROM chunks_fts"
            " JOIN chunks c ON c.rowid = chunks_fts.rowid"
            " JOIN sources s ON s.source_id = c.source_id"
            " WHERE chunks_fts MATCH ? AND s.deleted = 0 AND s.tenant = ?"
        )
        args: list[object] = [match, scope.tenant]
        if not scope.unrestricted:
            group_marks = ",".join("?" * len(scope.groups)) or "NULL"
            sql += (
                " AND (s.acl_groups = '[]' OR EXISTS (SELECT 1 FROM json_each(s.acl_groups) g"
                f" WHERE g.value IN ({group_marks})))"
            )
            args.extend(sorted(scope.groups))
        if filters.source_ids:
            sql += f" AND c.source_id IN ({','.join('?' * len(filters.source_ids))})"
            args.extend(sorted(filters.source_ids))
        sql += " ORDER BY score DESC, c.chunk_id LIMIT ?"
        args.append(limit)
        rows = self._reader.execute(sql, args).fetchall()
        return [LexicalHit(chunk_id=row[0], score=float(row[1])) for row in rows]


def _fts_string(term: str) -> str:
    # A term becomes an FTS5 string literal, so nothing in it is query syntax. A NUL
    # would end the literal early and a lone surrogate cannot be bound, so both become
    # separators rather than errors.
    term = term.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
    return '"' + term.replace('"', '""') + '"'


_SOURCE_COLUMNS = ", ".join(
    f"s.{name}"
    for name in (
        "source_id",
        "tenant",
        "title",
        "authors",
        "year",
        "tags",
        "acl_groups",
        "canonical_url",
        "origin",
        "current_version",
        "deleted",
    )
)
_CHUNK_COLUMNS = ", ".join(
    f"c.{name}"
    for name in (
        "chunk_id",
        "source_id",
        "version",
        "ordinal",
        "text",
        "sha256",
        "section_path",
        "chapter",
        "section",
        "page_start",
        "page_end",
        "page_label_start",
        "page_label_end",
        "char_start",
        "char_end",
        "location",
    )
)


def _source(row: Sequence[object]) -> Source:
    (sid, tenant, title, authors, year, tags, acl, url, origin, current, deleted) = row
    return Source(
        source_id=str(sid),
        tenant=str(tenant),
        title=str(title),
        authors=tuple(json.loads(str(authors))),
        year=int(str(year)) if year is not None else None,
        tags=tuple(json.loads(str(tags))),
        acl_groups=frozenset(json.loads(str(acl))),
        canonical_url=str(url) if url is not None else None,
        origin=str(origin),
        current_version=int(str(current)),
        deleted=bool(deleted),
    )


def _chunk(row: Sequence[object]) -> Chunk:
    (cid, sid, version, ordinal, text, sha, path, chapter, section, ps, pe, ls, le, cs, ce, loc) = (
        row
    )
    return Chunk(
        chunk_id=str(cid),
        source_id=str(sid),
        version=int(str(version)),
        ordinal=int(str(ordinal)),
        text=str(text),
        sha256=str(sha),
        section_path=tuple(json.loads(str(path))),
        chapter=str(chapter),
        section=str(section),
        page_start=int(str(ps)) if ps is not None else None,
        page_end=int(str(pe)) if pe is not None else None,
        page_label_start=str(ls) if ls is not None else None,
        page_label_end=str(le) if le is not None else None,
        char_start=int(str(cs)),
        char_end=int(str(ce)),
        location=str(loc) if loc is not None else None,
    )
