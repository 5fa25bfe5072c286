"""User use cases: register users with an API token, disable them, and turn a token
or a name into the actor requests run for.

A token is shown once, when the user is added; the store keeps only its
sha256. Names are unique across tenants: a name alone identifies a user.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence

from citadel.app.errors import InvalidRequest, NotFound, Unauthenticated, UserDisabled, UserExists
from citadel.app.ports import Clock, UserStore
from citadel.domain.errors import InvalidValue
from citadel.domain.model import Actor, Role, UserStatus
from citadel.domain.user import User

TOKEN_PREFIX = "ctd_"  # noqa: S105 - a public marker, not a secret
"""Marks citadel API tokens, so a leaked one is recognisable (and secret scanners can match it)."""

_TOKEN_BYTES = 32


def token_sha256(token: str) -> str:
    """The stored form of a token.

    A plain sha256 is enough here, unlike for passwords: every token is 32
    random bytes (256 bits) from ``secrets``, so there is nothing to guess or
    look up in a dictionary, and a slow or salted hash would add no strength —
    while a deterministic hash lets a token be found by an indexed lookup.
    """
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class UserService:
    def __init__(self, store: UserStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def add(
        self, name: str, role: Role, tenant: str, groups: Iterable[str] = ()
    ) -> tuple[User, str]:
        """Register a user; return it and its API token, which is never available again."""
        try:
            user = User(
                name=name,
                tenant=tenant,
                role=role,
                groups=frozenset(groups),
                status=UserStatus.ACTIVE,
                created_at=self._clock.now_iso(),
            )
        except InvalidValue as exc:
            raise InvalidRequest(str(exc)) from None
        token = TOKEN_PREFIX + secrets.token_urlsafe(_TOKEN_BYTES)
        if not self._store.add(user, token_sha256(token)):
            raise UserExists(f"a user named {name} already exists")
        return user, token

    def disable(self, name: str) -> User:
        """Disable a user: its token and name no longer act (disabling twice is harmless)."""
        try:
            return self._store.set_status(name, UserStatus.DISABLED)
        except KeyError:
            raise NotFound(f"no user {name}") from None

    def get(self, name: str) -> User:
        user = self._store.get(name)
        if user is None:
            raise NotFound(f"no user {name}")
        return user

    def list(self, tenant: str | None = None) -> Sequence[User]:
        """Users (of ``tenant``, or all), by name; tokens are never part of a user."""
        return self._store.list(tenant)

    def authenticate(self, token: str) -> Actor:
        """The actor an API token stands for; unknown tokens and disabled users are refused."""
        digest = token_sha256(token)
        record = self._store.by_token(digest) if token.startswith(TOKEN_PREFIX) else None
        # The store found the record by its hash; comparing again in constant time keeps
        # the final decision independent of how (or how fast) the store matched it.
        if record is None or not hmac.compare_digest(record.token_sha256, digest):
            raise Unauthenticated("unknown API token")
        return self._active(record.user)

    def actor(self, name: str) -> Actor:
        """The actor for ``--as NAME``; unknown and disabled users are refused."""
        user = self._store.get(name)
        if user is None:
            raise Unauthenticated(f"no user {name}")
        return self._active(user)

    @staticmethod
    def _active(user: User) -> Actor:
        if not user.active:
            raise UserDisabled(f"user {user.name} is disabled")
        return user.actor()
