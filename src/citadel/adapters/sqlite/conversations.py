"""SQLite conversations: the ``conversations`` and ``conversation_turns`` tables, beside
the library in the same file.

The tables are this store's own, created when it opens (``IF NOT EXISTS``, so an
older library gains them untouched). Conversation writes leave the library
generation alone: no library cache derives from them. A turn's answer is the
``AnswerResponse`` message (``adapters/storage/recorded_turns.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from citadel.adapters.sqlite.database import Database
from citadel.adapters.storage.recorded_turns import (
    CONVERSATION_COLUMNS,
    TURN_COLUMNS,
    turn_of_values,
    turn_row,
)
from citadel.domain.conversation import Conversation, Turn

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
    answer          BLOB NOT NULL,
    created         TEXT NOT NULL,
    PRIMARY KEY (conversation_id, number)
)""",
    "CREATE INDEX IF NOT EXISTS conversation_turns_answer ON conversation_turns(answer_id)",
)

_OWNED = "tenant = ? AND owner = ? AND conversation_id = ?"


def _conversation(row: sqlite3.Row | tuple[object, ...]) -> Conversation:
    conversation_id, owner, tenant, title, created = row[:5]
    return Conversation(str(conversation_id), str(owner), str(tenant), str(title), str(created))


class SqliteConversations:
    def __init__(self, db: Database) -> None:
        self._db = db
        with db.transaction(library=False) as conn:
            for statement in SCHEMA:
                conn.execute(statement)

    def create(self, conversation: Conversation) -> None:
        c = conversation
        try:
            with self._db.transaction(library=False) as conn:
                conn.execute(
                    f"INSERT INTO conversations({CONVERSATION_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                    (c.conversation_id, c.owner, c.tenant, c.title, c.created),
                )
        except sqlite3.IntegrityError:
            raise ValueError("conversation id taken") from None

    def get(self, tenant: str, owner: str, conversation_id: str) -> Conversation | None:
        row = self._db.reader.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE {_OWNED}",
            (tenant, owner, conversation_id),
        ).fetchone()
        return _conversation(row) if row else None

    def list(self, tenant: str, owner: str) -> Sequence[Conversation]:
        rows = self._db.reader.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE tenant = ? AND owner = ?"
            " ORDER BY created DESC, conversation_id DESC",
            (tenant, owner),
        ).fetchall()
        return [_conversation(row) for row in rows]

    def add_turn(self, tenant: str, owner: str, turn: Turn) -> None:
        row = turn_row(turn)
        with self._db.transaction(library=False) as conn:
            owned = conn.execute(
                f"SELECT 1 FROM conversations WHERE {_OWNED}", (tenant, owner, row.conversation_id)
            ).fetchone()
            if owned is None:
                raise KeyError(row.conversation_id)
            try:
                conn.execute(
                    f"INSERT INTO conversation_turns({TURN_COLUMNS})"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
            except sqlite3.IntegrityError:
                raise ValueError(f"turn {row.number} is there already") from None

    def turns(self, tenant: str, owner: str, conversation_id: str) -> Sequence[Turn]:
        rows = self._db.reader.execute(
            f"SELECT {', '.join('t.' + c for c in TURN_COLUMNS.split(', '))}"
            " FROM conversation_turns t JOIN conversations c USING (conversation_id)"
            " WHERE c.tenant = ? AND c.owner = ? AND c.conversation_id = ? ORDER BY t.number",
            (tenant, owner, conversation_id),
        ).fetchall()
        return [turn_of_values(row) for row in rows]

    def turn_of_answer(self, tenant: str, owner: str, answer_id: str) -> Turn | None:
        row = self._db.reader.execute(
            f"SELECT {', '.join('t.' + c for c in TURN_COLUMNS.split(', '))}"
            " FROM conversation_turns t JOIN conversations c USING (conversation_id)"
            " WHERE c.tenant = ? AND c.owner = ? AND t.answer_id = ?",
            (tenant, owner, answer_id),
        ).fetchone()
        return turn_of_values(row) if row else None

    def delete(self, tenant: str, owner: str, conversation_id: str) -> bool:
        with self._db.transaction(library=False) as conn:
            owned = conn.execute(
                f"SELECT 1 FROM conversations WHERE {_OWNED}", (tenant, owner, conversation_id)
            ).fetchone()
            if owned is None:
                return False
            conn.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = ?", (conversation_id,)
            )
            conn.execute("DELETE FROM conversations WHERE conversation_id = ?", (conversation_id,))
            return True
