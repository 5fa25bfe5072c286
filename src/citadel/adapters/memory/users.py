"""The in-memory user store: users, token hashes, OpenID identities, one-time sign-in
links and ended sessions in dictionaries."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

from citadel.app.ports import UserRecord
from citadel.domain.users import User, UserStatus


class InMemoryUsers:
    """Users and token hashes in dictionaries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[str, User] = {}
        self._tokens: dict[str, str] = {}
        """token sha256 -> user name"""
        self._ended: dict[str, int] = {}
        """signed-out session id -> when it would have expired"""
        self._identities: dict[tuple[str, str], str] = {}
        """(issuer, subject) -> user name"""
        self._links: dict[str, tuple[str, int]] = {}
        """sign-in link sha256 -> (user name, expiry)"""

    def add(self, user: User, token_sha256: str) -> bool:
        with self._lock:
            if user.name in self._users:
                return False
            if token_sha256 in self._tokens:
                raise ValueError("token hash already registered")
            self._users[user.name] = user
            self._tokens[token_sha256] = user.name
            return True

    def get(self, name: str) -> User | None:
        return self._users.get(name)

    def by_token(self, token_sha256: str) -> UserRecord | None:
        with self._lock:
            name = self._tokens.get(token_sha256)
            return UserRecord(self._users[name], token_sha256) if name is not None else None

    def set_status(self, name: str, status: UserStatus) -> User:
        with self._lock:
            if name not in self._users:
                raise KeyError(name)
            user = self._users[name] = replace(self._users[name], status=status)
            return user

    def record(self, name: str) -> UserRecord | None:
        with self._lock:
            if name not in self._users:
                return None
            digest = next(h for h, owner in self._tokens.items() if owner == name)
            return UserRecord(self._users[name], digest)

    def set_token(self, name: str, token_sha256: str) -> User:
        with self._lock:
            if name not in self._users:
                raise KeyError(name)
            if self._tokens.get(token_sha256, name) != name:
                raise ValueError("token hash already registered")
            self._tokens = {h: n for h, n in self._tokens.items() if n != name}
            self._tokens[token_sha256] = name
            return self._users[name]

    def list(self, tenant: str | None = None) -> Sequence[User]:
        users = [u for u in self._users.values() if tenant in (None, u.tenant)]
        return sorted(users, key=lambda u: u.name)

    def end_session(self, session_id: str, expires_at: int, now: int) -> None:
        with self._lock:
            self._ended = {k: v for k, v in self._ended.items() if v > now}
            self._ended[session_id] = expires_at

    def session_ended(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._ended

    def by_identity(self, issuer: str, subject: str) -> User | None:
        with self._lock:
            name = self._identities.get((issuer, subject))
            return self._users[name] if name is not None else None

    def add_external(self, user: User, token_sha256: str, issuer: str, subject: str) -> bool:
        with self._lock:
            if user.name in self._users or (issuer, subject) in self._identities:
                return False
            if token_sha256 in self._tokens:
                raise ValueError("token hash already registered")
            self._users[user.name] = user
            self._tokens[token_sha256] = user.name
            self._identities[(issuer, subject)] = user.name
            return True

    def set_membership(self, name: str, tenant: str, groups: frozenset[str]) -> User:
        with self._lock:
            if name not in self._users:
                raise KeyError(name)
            user = replace(self._users[name], tenant=tenant, groups=groups)
            self._users[name] = user
            return user

    def add_signin_link(self, link_sha256: str, name: str, expires_at: int) -> None:
        with self._lock:
            self._links[link_sha256] = (name, expires_at)

    def take_signin_link(self, link_sha256: str, now: int) -> str | None:
        with self._lock:
            self._links = {k: v for k, v in self._links.items() if v[1] > now}
            found = self._links.pop(link_sha256, None)
            return found[0] if found is not None and found[0] in self._users else None
