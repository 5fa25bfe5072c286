"""PostgreSQL conversations: the same store as SQLite's (``adapters/sqlite/conversations.py``).

The two tables are this store's own, created when it opens under an advisory lock
(several servers may start at once); every server reads them afresh on each call,
so a conversation deleted through one server is gone from all of them at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from citadel.adapters.postgres.database import Database
from citadel.adapters.storage.recorded_turns import (
    CONVERSATION_COLUMNS,
    TURN_COLUMNS,
    turn_of_values,
    turn_row,
)
from citadel.domain.conversation import Conversation, Turn

_LOCK = 0x63697461_636F6E76  # "citaconv": one server creates the tables at a time

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS conversations (
    conversation_id TEXT PRIMARY KEY,
    owner           TEXT NOT NULL,
    tenant          TEXT NOT NULL,
    title           TEXT NOT NULL,
    created         TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS conversations_owner ON conversations(tenant, owner, created)",
    """CREATE TABLE IF NOT EXISTS conversation_turns (
    conversation_id TEXT NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
    number          INTEGER NOT NULL,
    question        TEXT NOT NULL,
    query           TEXT NOT NULL,
    rewrite         TEXT NOT NULL,
    answer_id       TEXT NOT NULL,
    answer          BYTEA NOT NULL,
    created         TEXT NOT NULL,
    PRIMARY KEY (conversation_id, number)
)""",
    "CREATE INDEX IF NOT EXISTS conversation_turns_answer ON conversation_turns(answer_id)",
)

_OWNED = "tenant = %s AND owner = %s AND conversation_id = %s"
_TURN_SELECT = (
    f"SELECT {', '.join('t.' + c for c in TURN_COLUMNS.split(', '))}"
    " FROM conversation_turns t JOIN conversations c USING (conversation_id)"
)


def _conversation(row: tuple[object, ...]) -> Conversation:
    conversation_id, owner, tenant, title, created = row[:5]
    return Conversation(str(conversation_id), str(owner), str(tenant), str(title), str(created))


class PostgresConversations:
    def __init__(self, db: Database) -> None:
        self._db = db
        with db.transaction(library=False) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            for statement in SCHEMA:
                conn.execute(statement.encode())

    def create(self, conversation: Conversation) -> None:
        c = conversation
        try:
            with self._db.transaction(library=False) as conn:
                conn.execute(
                    f"INSERT INTO conversations({CONVERSATION_COLUMNS})"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (c.conversation_id, c.owner, c.tenant, c.title, c.created),
                )
        except psycopg.errors.UniqueViolation:
            raise ValueError("conversation id taken") from None

    def get(self, tenant: str, owner: str, conversation_id: str) -> Conversation | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE {_OWNED}",
                (tenant, owner, conversation_id),
            ).fetchone()
        return _conversation(row) if row else None

    def list(self, tenant: str, owner: str) -> Sequence[Conversation]:
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations"
                " WHERE tenant = %s AND owner = %s"
                ' ORDER BY created COLLATE "C" DESC, conversation_id COLLATE "C" DESC',
                (tenant, owner),
            ).fetchall()
        return [_conversation(row) for row in rows]

    def add_turn(self, tenant: str, owner: str, turn: Turn) -> None:
        row = turn_row(turn)
        try:
            with self._db.transaction(library=False) as conn:
                owned = conn.execute(
                    f"SELECT 1 FROM conversations WHERE {_OWNED} FOR SHARE",
                    (tenant, owner, row.conversation_id),
                ).fetchone()
                if owned is None:
                    raise KeyError(row.conversation_id)
                conn.execute(
                    f"INSERT INTO conversation_turns({TURN_COLUMNS})"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        row.conversation_id,
                        row.number,
                        row.question,
                        row.query,
                        row.rewrite,
                        row.answer_id,
                        row.answer,
                        row.created,
                    ),
                )
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"turn {row.number} is there already") from None

    def turns(self, tenant: str, owner: str, conversation_id: str) -> Sequence[Turn]:
        with self._db.read() as conn:
            rows = conn.execute(
                f"{_TURN_SELECT} WHERE c.tenant = %s AND c.owner = %s"
                " AND c.conversation_id = %s ORDER BY t.number",
                (tenant, owner, conversation_id),
            ).fetchall()
        return [turn_of_values(row) for row in rows]

    def turn_of_answer(self, tenant: str, owner: str, answer_id: str) -> Turn | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"{_TURN_SELECT} WHERE c.tenant = %s AND c.owner = %s AND t.answer_id = %s",
                (tenant, owner, answer_id),
            ).fetchone()
        return turn_of_values(row) if row else None

    def delete(self, tenant: str, owner: str, conversation_id: str) -> bool:
        with self._db.transaction(library=False) as conn:
            cursor = conn.execute(
                f"DELETE FROM conversations WHERE {_OWNED}", (tenant, owner, conversation_id)
            )
            return cursor.rowcount == 1
