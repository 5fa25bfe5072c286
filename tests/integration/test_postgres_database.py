"""The PostgreSQL Database: the fixture's server, the schema bootstrap, the generation."""

from __future__ import annotations

import threading

import psycopg
import pytest

from citadel.adapters.postgres.database import (
    Database,
    DatabaseUnavailable,
    SchemaMismatch,
    redacted,
)
from citadel.adapters.postgres.library import PostgresLibrary
from citadel.adapters.postgres.schema import SCHEMA_VERSION
from tests import postgres
from tests.builders import Passage, commit
from tests.contract.test_storage_contract import source


def test_each_test_gets_an_empty_database_of_its_own(postgres_url: str) -> None:
    other = postgres.server().fresh_database()
    assert other != postgres_url
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE mine (x int)")
    with psycopg.connect(other, autocommit=True) as conn:
        found = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'mine'").fetchone()
    assert found == (0,)


def test_the_vector_extension_computes_cosine_distance(postgres_url: str) -> None:
    db = Database(postgres_url)
    try:
        with db.read() as conn:
            row = conn.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector").fetchone()
            version = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
        assert row is not None
        assert row[0] == pytest.approx(1.0)
        assert version is not None
        assert tuple(int(p) for p in version[0].split(".")[:2]) >= (0, 8)
    finally:
        db.close()


def test_the_schema_version_is_recorded_and_a_second_open_keeps_it(postgres_url: str) -> None:
    first = Database(postgres_url)
    second = Database(postgres_url)
    try:
        assert first.schema_version() == SCHEMA_VERSION
        assert second.schema_version() == SCHEMA_VERSION
    finally:
        first.close()
        second.close()


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    Database(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
    with pytest.raises(SchemaMismatch, match="upgrade citadel"):
        Database(postgres_url)


def test_a_schema_1_database_gains_the_stored_units_column(postgres_url: str) -> None:
    library = PostgresLibrary(postgres_url)
    try:
        _, _, chunks = commit(library, source(), [Passage("Alpha."), Passage("Beta.")])
    finally:
        library.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # as schema 1 made it
        conn.execute("ALTER TABLE chunks DROP COLUMN units")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    library = PostgresLibrary(postgres_url)
    try:
        found = library.passages([c.chunk_id for c in chunks])
        assert [found[c.chunk_id].chunk for c in chunks] == chunks  # every row kept
        assert [found[c.chunk_id].chunk.units for c in chunks] == [None, None]
        with psycopg.connect(postgres_url) as conn:
            (version,) = conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone() or ("",)
        assert version == str(SCHEMA_VERSION) == "3"
    finally:
        library.close()


def test_a_schema_2_database_gains_the_originals_tables(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # as schema 2 made it
        conn.execute("DROP TABLE original_parts")
        conn.execute("DROP TABLE originals")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db = Database(postgres_url)
    try:
        assert db.schema_version() == SCHEMA_VERSION == 3
        with db.read() as conn:
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_name IN ('originals', 'original_parts') ORDER BY table_name"
            ).fetchall()
            storage = conn.execute(
                "SELECT attstorage FROM pg_attribute"
                " WHERE attrelid = 'original_parts'::regclass AND attname = 'data'"
            ).fetchone()
        assert tables == [("original_parts",), ("originals",)]
        assert storage == ("e",), "parts are stored out of line, uncompressed"
    finally:
        db.close()


def test_library_writes_bump_the_generation_and_record_writes_do_not(postgres_url: str) -> None:
    db = Database(postgres_url)
    other = Database(postgres_url)  # another server on the same database
    try:
        before = other.generation()
        with db.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS scratch (x int)")
        assert other.generation() == before + 1
        with db.transaction(library=False) as conn:
            conn.execute("INSERT INTO scratch VALUES (1)")
        assert other.generation() == before + 1
    finally:
        db.close()
        other.close()


def test_a_failed_transaction_leaves_nothing_behind(postgres_url: str) -> None:
    db = Database(postgres_url)
    try:
        with db.transaction() as conn:
            conn.execute("CREATE TABLE scratch (x int)")
        before = db.generation()

        def half_way() -> None:
            with db.transaction() as conn:
                conn.execute("INSERT INTO scratch VALUES (1)")
                raise RuntimeError("half-way")

        with pytest.raises(RuntimeError):
            half_way()
        with db.read() as conn:
            assert conn.execute("SELECT count(*) FROM scratch").fetchone() == (0,)
        assert db.generation() == before
    finally:
        db.close()


def test_concurrent_library_writes_are_serialised(postgres_url: str) -> None:
    db = Database(postgres_url, pool_size=4)
    try:
        with db.transaction() as conn:
            conn.execute("CREATE TABLE counter (n int)")
            conn.execute("INSERT INTO counter VALUES (0)")
        start = db.generation()

        def bump() -> None:
            for _ in range(10):
                with db.transaction() as conn:
                    (n,) = conn.execute("SELECT n FROM counter").fetchone() or (0,)
                    conn.execute("UPDATE counter SET n = %s", (n + 1,))

        threads = [threading.Thread(target=bump) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with db.read() as conn:
            assert conn.execute("SELECT n FROM counter").fetchone() == (40,)
        assert db.generation() == start + 40
    finally:
        db.close()


def test_an_unreachable_server_is_a_clear_error() -> None:
    url = "postgresql://citadel:secret@/nowhere?host=/nonexistent-dir&connect_timeout=1"
    with pytest.raises(DatabaseUnavailable, match="cannot connect") as raised:
        Database(url, timeout_s=1.0)
    assert "secret" not in str(raised.value)


def test_redacted_hides_only_the_password() -> None:
    assert redacted("postgresql://u:pw@db.example:5432/x") == "postgresql://u:***@db.example:5432/x"
    assert redacted("postgresql://u@db.example/x") == "postgresql://u@db.example/x"
