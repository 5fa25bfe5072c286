"""Where the library, the users, the conversations and the audit log are kept: SQLite
or PostgreSQL (``CITADEL_DB``), and ``citadel db migrate`` from the one to the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citadel.adapters.sqlite.audit import SqliteAuditLog
from citadel.adapters.sqlite.conversations import SqliteConversations
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.adapters.sqlite.users import SqliteUsers
from citadel.app.ports import AuditLog, UserStore
from citadel.app.ports.conversations import ConversationStore
from citadel.config import Settings

if TYPE_CHECKING:
    from citadel.adapters.postgres.library import PostgresLibrary
    from citadel.adapters.postgres.migrate import MigrationReport

    Library = SqliteLibrary | PostgresLibrary


@dataclass(frozen=True, slots=True)
class Stores:
    library: Library
    users: UserStore
    audit: AuditLog
    conversations: ConversationStore


def stores(settings: Settings, serving: bool) -> Stores:
    """The stores on the database ``CITADEL_DB`` names: a SQLite file (the default) or
    PostgreSQL. The audit chain's key is a file beside viewer.key, never in the
    database: split mode's services and the HTTP edge share CITADEL_HOME, so they
    share the key (as do several servers on one PostgreSQL)."""
    key_file = settings.home / "audit.key"
    if settings.postgres_url is not None:
        from citadel.adapters.postgres.audit import PostgresAuditLog
        from citadel.adapters.postgres.conversations import PostgresConversations
        from citadel.adapters.postgres.library import PostgresLibrary
        from citadel.adapters.postgres.users import PostgresUsers

        shared = PostgresLibrary(
            settings.postgres_url,
            weights=settings.bm25_weights,
            max_term_share=settings.max_term_share,
            hnsw_min_vectors=settings.hnsw_min_vectors,
            hnsw_background=serving,
        )
        return Stores(
            shared,
            PostgresUsers(shared.database),
            PostgresAuditLog(shared.database, key_file),
            PostgresConversations(shared.database),
        )
    library = SqliteLibrary(
        settings.db_path,
        weights=settings.bm25_weights,
        max_term_share=settings.max_term_share,
        hnsw_min_vectors=settings.hnsw_min_vectors,
        hnsw_background=serving,
    )
    return Stores(
        library,
        SqliteUsers(library.database),
        SqliteAuditLog(library.database, key_file),
        SqliteConversations(library.database),
    )


def migrate_library(
    settings: Settings,
    target_url: str,
    *,
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> MigrationReport:
    """``citadel db migrate``: copy the SQLite library ``settings`` names into the
    PostgreSQL database at ``target_url``, verified, in one transaction
    (``adapters/postgres/migrate.py``); the audit key is CITADEL_HOME's."""
    from citadel.adapters.postgres.database import Database
    from citadel.adapters.postgres.migrate import migrate

    db = Database(target_url)
    try:
        return migrate(
            settings.db_path,
            db,
            settings.home / "audit.key",
            force=force,
            progress=progress,
            originals=settings.home / "originals",
        )
    finally:
        db.close()
