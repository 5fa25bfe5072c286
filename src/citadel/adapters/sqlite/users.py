"""SQLite users: the ``users`` table, beside the library in the same file, with the
OpenID identities users sign in as (``user_identities``) and one-time sign-in links.

Only the sha256 of a token is stored (see ``citadel.app.users``). User writes
do not bump the library generation: no library cache is derived from users.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from citadel.adapters.sqlite.database import Database
from citadel.app.ports import UserRecord
from citadel.domain.users import Role, User, UserStatus

_COLUMNS = "name, tenant, role, user_groups, status, created_at"
_QUALIFIED = ", ".join(f"users.{c}" for c in _COLUMNS.split(", "))


def _values(user: User) -> tuple[str, ...]:
    groups = json.dumps(sorted(user.groups))
    return (user.name, user.tenant, user.role.value, groups, user.status.value, user.created_at)


def _user(row: sqlite3.Row | tuple[object, ...]) -> User:
    name, tenant, role, groups, status, created_at = row[:6]
    return User(
        name=str(name),
        tenant=str(tenant),
        role=Role(str(role)),
        groups=frozenset(json.loads(str(groups))),
        status=UserStatus(str(status)),
        created_at=str(created_at),
    )


class SqliteUsers:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, user: User, token_sha256: str) -> bool:
        with self._db.transaction(library=False) as conn:
            cursor = conn.execute(
                f"INSERT INTO users({_COLUMNS}, token_sha256) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(name) DO NOTHING",
                (*_values(user), token_sha256),
            )
            return cursor.rowcount == 1

    def get(self, name: str) -> User | None:
        row = self._db.reader.execute(
            f"SELECT {_COLUMNS} FROM users WHERE name = ?", (name,)
        ).fetchone()
        return _user(row) if row else None

    def by_token(self, token_sha256: str) -> UserRecord | None:
        row = self._db.reader.execute(
            f"SELECT {_COLUMNS}, token_sha256 FROM users WHERE token_sha256 = ?",
            (token_sha256,),
        ).fetchone()
        return UserRecord(_user(row), str(row[6])) if row else None

    def set_status(self, name: str, status: UserStatus) -> User:
        with self._db.transaction(library=False) as conn:
            row = conn.execute(
                f"UPDATE users SET status = ? WHERE name = ? RETURNING {_COLUMNS}",
                (status.value, name),
            ).fetchone()
        if row is None:
            raise KeyError(name)
        return _user(row)

    def record(self, name: str) -> UserRecord | None:
        row = self._db.reader.execute(
            f"SELECT {_COLUMNS}, token_sha256 FROM users WHERE name = ?", (name,)
        ).fetchone()
        return UserRecord(_user(row), str(row[6])) if row else None

    def set_token(self, name: str, token_sha256: str) -> User:
        try:
            with self._db.transaction(library=False) as conn:
                row = conn.execute(
                    f"UPDATE users SET token_sha256 = ? WHERE name = ? RETURNING {_COLUMNS}",
                    (token_sha256, name),
                ).fetchone()
        except sqlite3.IntegrityError:
            raise ValueError("token hash already registered") from None
        if row is None:
            raise KeyError(name)
        return _user(row)

    def end_session(self, session_id: str, expires_at: int, now: int) -> None:
        with self._db.transaction(library=False) as conn:
            conn.execute("DELETE FROM ended_sessions WHERE expires_at <= ?", (now,))
            conn.execute(
                "INSERT OR REPLACE INTO ended_sessions(session_id, expires_at) VALUES (?, ?)",
                (session_id, expires_at),
            )

    def session_ended(self, session_id: str) -> bool:
        row = self._db.reader.execute(
            "SELECT 1 FROM ended_sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return row is not None

    def by_identity(self, issuer: str, subject: str) -> User | None:
        row = self._db.reader.execute(
            f"SELECT {_QUALIFIED} FROM users JOIN user_identities i ON i.name = users.name"
            " WHERE i.issuer = ? AND i.subject = ?",
            (issuer, subject),
        ).fetchone()
        return _user(row) if row else None

    def add_external(self, user: User, token_sha256: str, issuer: str, subject: str) -> bool:
        with self._db.transaction(library=False) as conn:
            taken = conn.execute(
                "SELECT 1 FROM users WHERE name = ? UNION ALL"
                " SELECT 1 FROM user_identities WHERE issuer = ? AND subject = ?",
                (user.name, issuer, subject),
            ).fetchone()
            if taken:
                return False
            conn.execute(
                f"INSERT INTO users({_COLUMNS}, token_sha256) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*_values(user), token_sha256),
            )
            conn.execute(
                "INSERT INTO user_identities(issuer, subject, name) VALUES (?, ?, ?)",
                (issuer, subject, user.name),
            )
            return True

    def set_membership(self, name: str, tenant: str, groups: frozenset[str]) -> User:
        with self._db.transaction(library=False) as conn:
            row = conn.execute(
                f"UPDATE users SET tenant = ?, user_groups = ? WHERE name = ? RETURNING {_COLUMNS}",
                (tenant, json.dumps(sorted(groups)), name),
            ).fetchone()
        if row is None:
            raise KeyError(name)
        return _user(row)

    def add_signin_link(self, link_sha256: str, name: str, expires_at: int) -> None:
        with self._db.transaction(library=False) as conn:
            conn.execute(
                "INSERT INTO signin_links(link_sha256, name, expires_at) VALUES (?, ?, ?)",
                (link_sha256, name, expires_at),
            )

    def take_signin_link(self, link_sha256: str, now: int) -> str | None:
        with self._db.transaction(library=False) as conn:
            conn.execute("DELETE FROM signin_links WHERE expires_at <= ?", (now,))
            row = conn.execute(
                "DELETE FROM signin_links WHERE link_sha256 = ? RETURNING name", (link_sha256,)
            ).fetchone()
            if row is None:
                return None
            known = conn.execute("SELECT 1 FROM users WHERE name = ?", (row[0],)).fetchone()
        return str(row[0]) if known else None

    def list(self, tenant: str | None = None) -> Sequence[User]:
        if tenant is None:
            rows = self._db.reader.execute(f"SELECT {_COLUMNS} FROM users ORDER BY name")
        else:
            rows = self._db.reader.execute(
                f"SELECT {_COLUMNS} FROM users WHERE tenant = ? ORDER BY name", (tenant,)
            )
        return [_user(row) for row in rows.fetchall()]
