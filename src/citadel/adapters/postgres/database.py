"""The PostgreSQL database: a connection pool, transactions, the schema and a generation.

The same discipline as the SQLite ``Database``, for any number of servers on one
database: ``read()`` lends a pooled connection for reads (``snapshot=True``: one
REPEATABLE READ transaction, one snapshot for every statement in the block);
``transaction()`` is one write transaction, committed whole or rolled back. A
library write (``library=True``, the default) first bumps the generation row in
``meta``: the row lock serialises library writers across every server, as SQLite's
single writer does, and the new number becomes visible with the commit, which lets
each server's in-memory indexes notice any server's change. ``library=False`` is
for writes no library cache derives from (users, the audit log).

On open the schema is created or upgraded (``schema.py``; the record tables are in
``schema_records.py``) under an advisory lock, so servers starting together agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from citadel.adapters.postgres.schema import BASE_DDL, LIBRARY_DDL, MIGRATIONS, SCHEMA_VERSION
from citadel.adapters.postgres.schema_records import RECORDS_DDL
from citadel.adapters.postgres.vectors import register_vector
from citadel.app.errors import AppError

Connection = psycopg.Connection[tuple[Any, ...]]
Cursor = psycopg.Cursor[tuple[Any, ...]]

# Any fixed number: servers opening the same database take it before touching the schema.
_SCHEMA_LOCK = 0x63_69_74_61_64_65_6C  # "citadel"
DEFAULT_POOL_SIZE = 8
DEFAULT_TIMEOUT_S = 10.0


def _configure(conn: Connection) -> None:
    """Each new pooled connection: pgvector's type in binary (when the extension exists)."""
    register_vector(conn)


class SchemaMismatch(AppError):
    """The database was made by a newer version of citadel's schema."""


class DatabaseUnavailable(AppError):
    """PostgreSQL could not be reached (or refused the connection)."""


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class Database:
    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.url = url
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=_configure,
            timeout=timeout_s,
            open=False,
            name="citadel",
        )
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except PoolTimeout as error:
            self._pool.close()
            raise DatabaseUnavailable(
                f"cannot connect to PostgreSQL at {redacted(url)} within {timeout_s:g} s"
            ) from error
        try:
            self._bootstrap()
        except BaseException:
            self._pool.close()
            raise

    def _bootstrap(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in BASE_DDL:
                conn.execute(statement.encode())
            register_vector(conn)  # a connection made before the extension existed
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            found = SCHEMA_VERSION if row is None else int(row[0])
            if found > SCHEMA_VERSION:
                raise SchemaMismatch(
                    f"{redacted(self.url)} has schema {found}, this citadel knows up to"
                    f" {SCHEMA_VERSION}: upgrade citadel"
                )
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS.get(version, ()):
                    conn.execute(statement.encode())
            # One round trip: without parameters, several statements go as one query.
            conn.execute(";\n".join((*LIBRARY_DDL, *RECORDS_DDL)).encode())
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (str(SCHEMA_VERSION),),
            )
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('generation', '0')"
                " ON CONFLICT (key) DO NOTHING"
            )

    @contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[Connection]:
        """A pooled connection for reads; ``snapshot``: one REPEATABLE READ transaction, so
        every statement in the block sees the same committed state (reading an index).
        Without it each statement sees what was committed when it began."""
        with self._pool.connection() as conn:
            if not snapshot:
                # Autocommit: each statement is atomic, with no BEGIN and COMMIT to wait for.
                yield conn
                return
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield conn

    @contextmanager
    def transaction(self, *, library: bool = True, pipeline: bool = False) -> Iterator[Connection]:
        """One write transaction; a library write bumps the generation in it first.

        Bumping first takes the generation row's lock, so library writes from every
        server run one at a time (and a compare-and-swap inside one sees the rows
        the previous writer committed). ``pipeline``: statements are sent without
        waiting for each result (psycopg's pipeline mode; a fetch waits for what it
        needs, ``rowcount`` needs ``conn.pipeline().sync()`` first, COPY is refused).
        """
        with (
            self._pool.connection() as conn,
            conn.pipeline() if pipeline else nullcontext(),
            conn.transaction(),
        ):
            if library:
                conn.execute(
                    "UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation'"
                )
            yield conn

    def generation(self) -> int:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        assert row is not None, "the schema bootstrap writes the generation row"
        return int(row[0])

    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert row is not None, "the schema bootstrap writes the schema_version row"
        return int(row[0])

    def close(self) -> None:
        self._pool.close()
