"""The PostgreSQL schema, applied idempotently on open under an advisory lock.

One ``schema_version`` row in ``meta`` names the schema a database has; ``MIGRATIONS``
holds the statements that take a database from one version to the next (none yet:
version 1 is the first). The library's tables are here; the record tables (users,
sessions, audit) are in ``schema_records.py``. ``meta`` also holds the generation, a
number every library write bumps in its own transaction (``database.py``).
"""

from collections.abc import Mapping, Sequence

SCHEMA_VERSION = 1

# Every statement is idempotent: a new server on an existing database runs them all.
BASE_DDL: tuple[str, ...] = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    """CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
)""",
)

# The library's tables (sources, versions, chunks, vectors, the lexical tokens).
LIBRARY_DDL: tuple[str, ...] = ()

# version -> the statements that upgrade a database of version - 1 to it.
MIGRATIONS: Mapping[int, Sequence[str]] = {}
