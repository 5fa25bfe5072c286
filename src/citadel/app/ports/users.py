"""Users and the hashes of their tokens, the OpenID identities they sign in with,
one-time sign-in links, and signed-out sessions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from citadel.domain.users import User, UserStatus

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.


@dataclass(frozen=True, slots=True)
class UserRecord:
    """A stored user with the sha256 (hex) of its API token; never leaves the app layer."""

    user: User
    token_sha256: str


class UserStore(Protocol):
    """Registered users and the hashes of their API tokens (never the tokens)."""

    def add(self, user: User, token_sha256: str) -> bool:
        """Register ``user``; False (and nothing written) when its name is taken."""
        ...

    def get(self, name: str) -> User | None:
        """The user of that name, disabled or not; None when there is none."""
        ...

    def by_token(self, token_sha256: str) -> UserRecord | None:
        """The user whose token has this hash, disabled or not; None when there is none."""
        ...

    def set_status(self, name: str, status: UserStatus) -> User:
        """Change a user's status and return the user as stored; ``KeyError`` when unknown."""
        ...

    def record(self, name: str) -> UserRecord | None:
        """The user of that name with its token's hash; None when there is none."""
        ...

    def set_token(self, name: str, token_sha256: str) -> User:
        """Replace a user's token hash: the old token stops acting at once.

        ``KeyError`` when the user is unknown; ``ValueError`` when another user
        has that hash (nothing changes).
        """
        ...

    def list(self, tenant: str | None = None) -> Sequence[User]:
        """Users (of ``tenant``, or all), by name."""
        ...

    def end_session(self, session_id: str, expires_at: int, now: int) -> None:
        """Remember that a browser session was signed out, until it would have expired
        (``expires_at``, Unix seconds); forget records already past theirs at ``now``."""
        ...

    def session_ended(self, session_id: str) -> bool:
        """Whether that session was signed out (and has not expired since)."""
        ...

    def by_identity(self, issuer: str, subject: str) -> User | None:
        """The user an OpenID identity (issuer, subject) signs in as; None when none."""
        ...

    def add_external(self, user: User, token_sha256: str, issuer: str, subject: str) -> bool:
        """Register ``user`` with its OpenID identity, both or neither; False (nothing
        written) when the name or the identity is taken."""
        ...

    def set_membership(self, name: str, tenant: str, groups: frozenset[str]) -> User:
        """Replace a user's tenant and groups (from its provider's claims) and return the
        user as stored; ``KeyError`` when unknown. Role and status stay."""
        ...

    def add_signin_link(self, link_sha256: str, name: str, expires_at: int) -> None:
        """Keep a one-time sign-in link (its hash) for ``name`` until ``expires_at``
        (Unix seconds)."""
        ...

    def take_signin_link(self, link_sha256: str, now: int) -> str | None:
        """The user a link signs in, removing the link (it is used once); None when it
        is unknown, used or past its expiry at ``now`` (expired links are dropped)."""
        ...
