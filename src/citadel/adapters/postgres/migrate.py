"""Copying an embedded (SQLite) library into PostgreSQL, whole or not at all.

The two schemas hold the same rows (``schema.py`` mirrors SQLite's), so the copy is
a bulk one: every table is read from the SQLite file in one read transaction (one
snapshot) and written to PostgreSQL with COPY (vectors by batched binary INSERT), in
ONE PostgreSQL transaction. The lexical rows are made from the copied chunks as
PostgreSQL's own ingest makes them, for exactly the chunks SQLite's FTS5 tables
index. Before the commit, inside the same transaction, the target is checked: the
row count of every table, an order-free digest of every table's rows (the chunks'
text and hashes, the versions' content hashes, the vectors' bytes, the users, the
audit records), every chunk's text against its sha256, and the audit chain under
the audit key (``verify_chain``). Any failure rolls the whole copy back, so the
target holds either the complete, verified library or what it held before.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg

from citadel.adapters.key_files import AuditKeyFile
from citadel.adapters.postgres.chunks import lexical_tokens
from citadel.adapters.postgres.database import Connection, Database
from citadel.adapters.postgres.migrate_originals import copy_originals
from citadel.adapters.postgres.migrate_source import (
    BATCH,
    TABLES,
    MigrationRefused,
    count,
    indexed_rowids,
    open_sqlite,
    sqlite_head,
    sqlite_rows,
)
from citadel.adapters.storage.rows import (
    CHUNK_COLUMNS,
    SOURCE_COLUMNS,
    chunk_from_row,
    source_from_row,
)
from citadel.domain.audit_chain import AuditEntry, AuditHead, AuditKey, MalformedHead, parse_head
from citadel.domain.audit_verify import ChainReport, verify_chain
from citadel.domain.document import Chunk

Progress = Callable[[str, int, int], None]
"""``(stage, done, total)``: rows of the stage done so far."""


@dataclass(frozen=True, slots=True)
class MigrationReport:
    rows: dict[str, int]
    """Rows copied per table (and ``lexical``: the index rows made)."""
    chain: ChainReport
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per stage: read+write per table, lexical, verify."""


def _row_digest(row: Sequence[object]) -> int:
    parts: list[bytes] = []
    for value in row:
        if isinstance(value, np.ndarray):
            parts.append(b"v" + np.asarray(value, dtype="<f4").tobytes())
        elif isinstance(value, bool):
            parts.append(b"b1" if value else b"b0")
        else:
            parts.append(repr(value).encode("utf-8", "surrogatepass"))
    return int.from_bytes(hashlib.sha256(b"\x1f".join(parts)).digest(), "big")


class _Digest:
    """An order-free digest of a multiset of rows (the per-row sha256s summed)."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def add(self, row: Sequence[object]) -> None:
        self.count += 1
        self.total = (self.total + _row_digest(row)) % (1 << 256)


def target_rows(db: Database) -> dict[str, int]:
    """The target's tables that hold rows, and how many."""
    with db.read() as conn:
        found = {t: _pg_count(conn, t) for t in TABLES}
    return {table: n for table, n in found.items() if n}


def _pg_count(conn: Connection, table: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0]) if row is not None else 0


def migrate(
    sqlite_path: Path,
    db: Database,
    key_file: Path,
    *,
    force: bool = False,
    progress: Progress | None = None,
    originals: Path | None = None,
) -> MigrationReport:
    """Copy the library at ``sqlite_path`` into ``db`` and verify it, in one transaction.

    ``force``: copy into a target that already holds rows (a clash of keys fails the
    whole copy; two audit chains cannot be merged, so a target with audit records
    takes no source records). ``key_file``: the audit key both chains are under.
    ``originals``: the folder of the embedded library's kept originals (the home's),
    copied into the database in the same transaction (``migrate_originals.py``).
    """
    report = progress or (lambda stage, done, total: None)
    source = open_sqlite(sqlite_path)
    try:
        counts = {table: count(source, table) for table in TABLES}
        held = target_rows(db)
        if held and not force:
            listed = ", ".join(f"{t} {n}" for t, n in held.items())
            raise MigrationRefused(
                f"the target is not empty ({listed} rows): pass --force to copy into it anyway"
            )
        if held.get("audit_log") and counts["audit_log"]:
            raise MigrationRefused("both libraries hold an audit chain: two chains cannot merge")
        key = AuditKeyFile(key_file).read()
        source_chain = verify_chain(
            (AuditEntry(*row) for row in sqlite_rows(source, "audit_log")),  # type: ignore[arg-type]
            sqlite_head(source),
            key,
        )
        if not source_chain.intact:
            raise MigrationRefused(
                "the source's audit chain does not verify (nothing copied): "
                + "; ".join(source_chain.problems[:5])
            )
        seconds: dict[str, float] = {}
        try:
            with db.transaction() as conn:
                digests: dict[str, _Digest] = {}
                for table in TABLES:
                    started = time.perf_counter()
                    digests[table] = _copy_table(conn, source, table, counts[table], report)
                    seconds[table] = time.perf_counter() - started
                _copy_head(conn, source)
                conn.execute(
                    "SELECT setval('chunk_rowids', (SELECT max(rowid) FROM chunks))"
                    " WHERE EXISTS (SELECT 1 FROM chunks)"
                )
                started = time.perf_counter()
                lexical = _build_lexical(conn, indexed_rowids(source), report)
                seconds["lexical"] = time.perf_counter() - started
                started = time.perf_counter()
                kept = 0 if originals is None else copy_originals(conn, source, originals, report)
                seconds["originals"] = time.perf_counter() - started
                started = time.perf_counter()
                chain = _verify_target(conn, digests, held, key, report)
                seconds["verify"] = time.perf_counter() - started
        except psycopg.Error as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise MigrationRefused(f"the copy failed and was rolled back: {message}") from exc
        return MigrationReport({**counts, "lexical": lexical, "originals": kept}, chain, seconds)
    finally:
        source.close()


def _copy_head(conn: Connection, source: sqlite3.Connection) -> None:
    row = source.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()
    if row is not None:
        conn.execute("INSERT INTO meta(key, value) VALUES ('audit_head', %s)", (row[0],))


def _copy_table(
    conn: Connection, source: sqlite3.Connection, table: str, total: int, report: Progress
) -> _Digest:
    digest = _Digest()
    columns = ", ".join(TABLES[table])
    rows = sqlite_rows(source, table)
    if table == "embeddings":
        # The vector type's binary dumper is registered per class, which COPY cannot use.
        placeholders = ", ".join(["%s"] * len(TABLES[table]))
        with conn.cursor() as cursor:
            for batch in _batches(rows):
                cursor.executemany(
                    f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", batch
                )
                for row in batch:
                    digest.add(row)
                report(table, digest.count, total)
    else:
        with conn.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                digest.add(row)
                if digest.count % BATCH == 0:
                    report(table, digest.count, total)
    report(table, digest.count, total)
    return digest


def _batches(rows: Iterable[tuple[object, ...]]) -> Iterator[list[tuple[object, ...]]]:
    batch: list[tuple[object, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _build_lexical(conn: Connection, rowids: list[int], report: Progress) -> int:
    """The lexical rows of ``rowids``, tokenised as ingest tokenises them."""
    sources: dict[tuple[str, str], object] = {}
    done = 0
    with conn.cursor() as cursor:
        for at in range(0, len(rowids), BATCH):
            rows = cursor.execute(
                f"SELECT c.rowid, c.tenant, {CHUNK_COLUMNS} FROM chunks c"
                " WHERE c.rowid = ANY(%s) ORDER BY c.tenant, c.source_id, c.rowid",
                (rowids[at : at + BATCH],),
            ).fetchall()
            groups: dict[tuple[str, str], list[tuple[int, Chunk]]] = {}
            for row in rows:
                chunk = chunk_from_row(row[2:])
                groups.setdefault((str(row[1]), chunk.source_id), []).append((int(row[0]), chunk))
            out: list[tuple[object, ...]] = []
            for (tenant, source_id), members in groups.items():
                if (tenant, source_id) not in sources:
                    found = cursor.execute(
                        f"SELECT {SOURCE_COLUMNS} FROM sources s"
                        " WHERE s.tenant = %s AND s.source_id = %s",
                        (tenant, source_id),
                    ).fetchone()
                    assert found is not None, "a chunk's source is copied before it"
                    sources[(tenant, source_id)] = source_from_row(found)
                owner = sources[(tenant, source_id)]
                tokens = lexical_tokens(owner, [c for _, c in members])  # type: ignore[arg-type]
                out += [(r, tenant, *t) for (r, _), t in zip(members, tokens, strict=True)]
            with cursor.copy(
                "COPY lexical (rowid, tenant, title, headings, body, access) FROM STDIN"
            ) as copy:
                for values in out:
                    copy.write_row(values)
            done += len(out)
            report("lexical", done, len(rowids))
    if done != len(rowids):
        raise MigrationRefused(f"{len(rowids) - done} indexed chunks were not copied")
    return done


def _verify_target(
    conn: Connection,
    digests: dict[str, _Digest],
    held: dict[str, int],
    key: AuditKey,
    report: Progress,
) -> ChainReport:
    """Counts and digests of every table read back in the transaction, each chunk's
    text against its sha256, and the audit chain; a failure raises (rollback)."""
    total = sum(d.count for d in digests.values())
    done = 0
    for table, expected in digests.items():
        if held.get(table):
            # --force into a table with rows: its count is the sum; rows are not compared.
            count = _pg_count(conn, table)
            if count != held[table] + expected.count:
                raise MigrationRefused(f"{table}: {count} rows, expected {held[table]} + copied")
            done += expected.count
            continue
        found = _Digest()
        with conn.cursor(name=f"verify_{table}", binary=True) as cursor:
            cursor.execute(f"SELECT {', '.join(TABLES[table])} FROM {table}")
            while batch := cursor.fetchmany(BATCH):
                for row in batch:
                    found.add(row)
                    if table == "chunks":
                        _check_chunk(row)
                done += len(batch)
                report("verify", done, total)
        if (found.count, found.total) != (expected.count, expected.total):
            raise MigrationRefused(
                f"{table} differs after the copy ({found.count} rows read back,"
                f" {expected.count} written): rolled back"
            )
    report("verify", total, total)
    rows = conn.execute("SELECT seq, answer_id, body, prev_hash, hash FROM audit_log ORDER BY seq")
    head_row = conn.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()
    head: AuditHead | MalformedHead | None = None
    if head_row is not None:
        try:
            head = parse_head(head_row[0])
        except MalformedHead as exc:
            head = exc
    chain = verify_chain((AuditEntry(*r) for r in rows.fetchall()), head, key)
    if not chain.intact:
        raise MigrationRefused(
            "the audit chain does not verify on the target: " + "; ".join(chain.problems[:5])
        )
    return chain


def _check_chunk(row: Sequence[object]) -> None:
    columns = TABLES["chunks"]
    text, sha = row[columns.index("text")], row[columns.index("sha256")]
    if isinstance(text, str) and "\ufffd" not in text:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest != sha:
            chunk_id = row[columns.index("chunk_id")]
            raise MigrationRefused(f"chunk {chunk_id}: its text does not hash to its sha256")
