"""Where kept originals live: chosen by the database the library is on.

On PostgreSQL they are in the database itself (``adapters/postgres/originals.py``),
so every server on it shows, and deletes, the same ones; each server keeps only a
cache of copies under its home. The embedded SQLite library is one server's, and
keeps them as files in its home beside the database file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from citadel.adapters.pages import FileOriginals
from citadel.app.ports.pages import OriginalStore

if TYPE_CHECKING:
    from citadel.adapters.postgres.library import PostgresLibrary
    from citadel.adapters.sqlite.library import SqliteLibrary

CACHE_FOLDER = "originals-cache"


def kept_originals(
    library: SqliteLibrary | PostgresLibrary, home: Path, cache_bytes: int
) -> OriginalStore:
    """The original store beside ``library``: its database's on PostgreSQL (with a cache
    of at most ``cache_bytes`` in ``home``), else files in ``home``."""
    from citadel.adapters.sqlite.library import SqliteLibrary

    if isinstance(library, SqliteLibrary):
        return FileOriginals(home / "originals")
    from citadel.adapters.pages.original_cache import OriginalCache
    from citadel.adapters.postgres.originals import PostgresOriginals

    return PostgresOriginals(library.database, OriginalCache(home / CACHE_FOLDER, cache_bytes))
