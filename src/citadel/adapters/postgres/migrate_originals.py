"""The kept originals' part of ``citadel db migrate``: files of the home, into the database.

An embedded library keeps its PDF originals as files (``FileOriginals``, under
``CITADEL_HOME/originals``); on PostgreSQL they are rows (``originals.py``). Each
retained version of a live source whose original is kept is streamed into the
migration's transaction, then read back from it and checked against the sha256 and
size the copy computed, so a copy that does not read back whole rolls everything back.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

from citadel.adapters.pages.originals import FileOriginals
from citadel.adapters.postgres.database import Connection
from citadel.adapters.postgres.migrate_source import MigrationRefused
from citadel.adapters.postgres.originals import original_parts, write_original


def copy_originals(
    conn: Connection,
    source: sqlite3.Connection,
    root: Path,
    report: Callable[[str, int, int], None],
) -> int:
    """Copy the originals kept under ``root`` of ``source``'s retained versions; how many."""
    versions = source.execute(
        "SELECT v.tenant, v.source_id, v.version FROM source_versions v"
        " JOIN sources s ON s.tenant = v.tenant AND s.source_id = v.source_id"
        " WHERE v.retained AND NOT s.deleted ORDER BY 1, 2, 3"
    ).fetchall()
    files = FileOriginals(root)
    kept = [(t, s, int(v), p) for t, s, v in versions if (p := files.find(t, s, int(v)))]
    for done, (tenant, source_id, version, path) in enumerate(kept, 1):
        sha256, size = write_original(conn, tenant, source_id, version, path)
        digest, read = hashlib.sha256(), 0
        for part in original_parts(conn, tenant, source_id, version):
            digest.update(part)
            read += len(part)
        if (digest.hexdigest(), read) != (sha256, size):
            raise MigrationRefused(
                f"the original of {source_id} version {version} differs after the copy"
            )
        report("originals", done, len(kept))
    return len(kept)
