"""PostgreSQL users: the ``users``, ``user_identities``, ``signin_links`` and
``ended_sessions`` tables (``schema_records.py``).

The same store as SQLite's (``adapters/sqlite/users.py``): only the sha256 of a
token is stored, and user writes leave the library generation alone (no library
cache derives from users). Every server reads the tables afresh on each call, so a
user disabled, a token replaced or a session ended through one server is seen by
every other on its next request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import psycopg

from citadel.adapters.postgres.database import Database
from citadel.app.ports import UserRecord
from citadel.domain.users import Role, User, UserStatus

_COLUMNS = "name, tenant, role, user_groups, status, created_at"
_QUALIFIED = ", ".join(f"users.{c}" for c in _COLUMNS.split(", "))


def _values(user: User) -> tuple[str, ...]:
    groups = json.dumps(sorted(user.groups))
    return (user.name, user.tenant, user.role.value, groups, user.status.value, user.created_at)


# Byte order, as SQLite sorts: the database's own collation may follow a locale.
_BY_NAME = ' ORDER BY name COLLATE "C"'


def _user(row: tuple[object, ...]) -> User:
    name, tenant, role, groups, status, created_at = row[:6]
    return User(
        name=str(name),
        tenant=str(tenant),
        role=Role(str(role)),
        groups=frozenset(json.loads(str(groups))),
        status=UserStatus(str(status)),
        created_at=str(created_at),
    )


def _record(row: tuple[object, ...] | None) -> UserRecord | None:
    return UserRecord(_user(row), str(row[6])) if row else None


class PostgresUsers:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, user: User, token_sha256: str) -> bool:
        with self._db.transaction(library=False) as conn:
            cursor = conn.execute(
                f"INSERT INTO users({_COLUMNS}, token_sha256)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (*_values(user), token_sha256),
            )
            return cursor.rowcount == 1

    def get(self, name: str) -> User | None:
        with self._db.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM users WHERE name = %s", (name,)).fetchone()
        return _user(row) if row else None

    def by_token(self, token_sha256: str) -> UserRecord | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS}, token_sha256 FROM users WHERE token_sha256 = %s",
                (token_sha256,),
            ).fetchone()
        return _record(row)

    def set_status(self, name: str, status: UserStatus) -> User:
        with self._db.transaction(library=False) as conn:
            row = conn.execute(
                f"UPDATE users SET status = %s WHERE name = %s RETURNING {_COLUMNS}",
                (status.value, name),
            ).fetchone()
        if row is None:
            raise KeyError(name)
        return _user(row)

    def record(self, name: str) -> UserRecord | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS}, token_sha256 FROM users WHERE name = %s", (name,)
            ).fetchone()
        return _record(row)

    def set_token(self, name: str, token_sha256: str) -> User:
        try:
            with self._db.transaction(library=False) as conn:
                row = conn.execute(
                    f"UPDATE users SET token_sha256 = %s WHERE name = %s RETURNING {_COLUMNS}",
                    (token_sha256, name),
                ).fetchone()
        except psycopg.errors.UniqueViolation:
            raise ValueError("token hash already registered") from None
        if row is None:
            raise KeyError(name)
        return _user(row)

    def end_session(self, session_id: str, expires_at: int, now: int) -> None:
        with self._db.transaction(library=False) as conn:
            conn.execute("DELETE FROM ended_sessions WHERE expires_at <= %s", (now,))
            conn.execute(
                "INSERT INTO ended_sessions(session_id, expires_at) VALUES (%s, %s)"
                " ON CONFLICT (session_id) DO UPDATE SET expires_at = EXCLUDED.expires_at",
                (session_id, expires_at),
            )

    def session_ended(self, session_id: str) -> bool:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT 1 FROM ended_sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
        return row is not None

    def by_identity(self, issuer: str, subject: str) -> User | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_QUALIFIED} FROM users JOIN user_identities i ON i.name = users.name"
                " WHERE i.issuer = %s AND i.subject = %s",
                (issuer, subject),
            ).fetchone()
        return _user(row) if row else None

    def add_external(self, user: User, token_sha256: str, issuer: str, subject: str) -> bool:
        with self._db.transaction(library=False) as conn:
            cursor = conn.execute(
                f"INSERT INTO users({_COLUMNS}, token_sha256)"
                " SELECT %s, %s, %s, %s, %s, %s, %s WHERE NOT EXISTS (SELECT 1 FROM"
                " user_identities WHERE issuer = %s AND subject = %s)"
                " ON CONFLICT (name) DO NOTHING",
                (*_values(user), token_sha256, issuer, subject),
            )
            if cursor.rowcount != 1:
                return False
            identity = conn.execute(
                "INSERT INTO user_identities(issuer, subject, name) VALUES (%s, %s, %s)"
                " ON CONFLICT (issuer, subject) DO NOTHING",
                (issuer, subject, user.name),
            )
            if identity.rowcount != 1:
                # Another server linked the identity meanwhile: undo this user too.
                conn.execute("DELETE FROM users WHERE name = %s", (user.name,))
                return False
            return True

    def set_membership(self, name: str, tenant: str, groups: frozenset[str]) -> User:
        with self._db.transaction(library=False) as conn:
            row = conn.execute(
                f"UPDATE users SET tenant = %s, user_groups = %s WHERE name = %s"
                f" RETURNING {_COLUMNS}",
                (tenant, json.dumps(sorted(groups)), name),
            ).fetchone()
        if row is None:
            raise KeyError(name)
        return _user(row)

    def add_signin_link(self, link_sha256: str, name: str, expires_at: int) -> None:
        with self._db.transaction(library=False) as conn:
            conn.execute(
                "INSERT INTO signin_links(link_sha256, name, expires_at) VALUES (%s, %s, %s)",
                (link_sha256, name, expires_at),
            )

    def take_signin_link(self, link_sha256: str, now: int) -> str | None:
        with self._db.transaction(library=False) as conn:
            conn.execute("DELETE FROM signin_links WHERE expires_at <= %s", (now,))
            row = conn.execute(
                "DELETE FROM signin_links WHERE link_sha256 = %s RETURNING name",
                (link_sha256,),
            ).fetchone()
            if row is None:
                return None
            known = conn.execute("SELECT 1 FROM users WHERE name = %s", (row[0],)).fetchone()
        return str(row[0]) if known else None

    def list(self, tenant: str | None = None) -> Sequence[User]:
        with self._db.read() as conn:
            if tenant is None:
                rows = conn.execute(f"SELECT {_COLUMNS} FROM users{_BY_NAME}").fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM users WHERE tenant = %s{_BY_NAME}", (tenant,)
                ).fetchall()
        return [_user(row) for row in rows]
