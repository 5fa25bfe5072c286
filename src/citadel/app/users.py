"""User use cases: register users with an API token, disable and enable them,
replace a token, and turn a token or a name into the actor requests run for.

A token is shown once, when the user is added or the token replaced; the
store keeps only its sha256. Names are unique across tenants: a name alone
identifies a user. A browser session carries a stamp of the token it signed
in with, so replacing a token (a leaked one, say) also ends those sessions.

A service that is told who the user is — the gRPC services, whose callers
assert an actor in metadata — does not take the caller's word for it:
:meth:`UserService.confirm` checks the asserted actor against the store. Its
mutual-TLS certificate proves which service is calling; the store decides who
the user is, so a stolen service key does not read every tenant. Only users of
the store can be asserted: the CLI's local administrator (``user_id="local"``,
never in the store) and the evaluation actor exist only inside one process and
are refused over gRPC.

People can also sign in through an OpenID provider (``sign_in_external``): the
user is found by the provider's (issuer, subject), created on first sign-in as a
reader with a token no one is shown (its stamp still ends sessions on rotate),
and its tenant and groups follow the provider's claims on every sign-in; its
role never does. A one-time sign-in link (``issue_link``) lets a user added from
the CLI sign in without pasting the token; the store keeps only its hash.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime

from citadel.app.errors import (
    AppError,
    Forbidden,
    InvalidRequest,
    LastAdmin,
    LookalikeName,
    NotFound,
    Unauthenticated,
    UserDisabled,
    UserExists,
)
from citadel.app.names import NameRegister
from citadel.app.ports import Clock, UserStore
from citadel.domain.errors import InvalidValue
from citadel.domain.identity import ExternalIdentity
from citadel.domain.users import (
    Actor,
    Role,
    User,
    UserStatus,
    check_new_user_name,
)

TOKEN_PREFIX = "ctd_"  # noqa: S105 - a public marker, not a secret
"""Marks citadel API tokens, so a leaked one is recognisable (and secret scanners can match it)."""

_TOKEN_BYTES = 32
LINK_TTL_S = 15 * 60
"""How long a one-time sign-in link works unless used first."""
_NAME_TRIES = 50


def session_stamp(token_hash: str) -> str:
    """What a browser session remembers of the token it signed in with: 64 bits of a
    hash of its hash, enough to notice the token was replaced, useless to recover it."""
    return hashlib.sha256(f"session-stamp\n{token_hash}".encode("ascii")).hexdigest()[:16]


def token_sha256(token: str) -> str:
    """The stored form of a token.

    A plain sha256 is enough here, unlike for passwords: every token is 32
    random bytes (256 bits) from ``secrets``, so there is nothing to guess or
    look up in a dictionary, and a slow or salted hash would add no strength —
    while a deterministic hash lets a token be found by an indexed lookup.
    """
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class UserService:
    def __init__(self, store: UserStore, clock: Clock, names: NameRegister | None = None) -> None:
        """``names``: the names users and sources hold (by default, the users' only)."""
        self._store = store
        self._clock = clock
        self._names = names or NameRegister(store)

    def add(
        self, name: str, role: Role, tenant: str, groups: Iterable[str] = ()
    ) -> tuple[User, str]:
        """Register a user; return it and its API token, which is never available again.

        A new name must be addressable and unmistakable (``check_new_user_name``), and
        must not look like an existing user's (``ADAM`` or ``IibA`` beside ``adam`` and
        ``libA``); a new tenant or group must not look like an existing one (``g1``,
        ``ɡ1``, ``ｇ1``): ``NameRegister``."""
        try:
            check_new_user_name(name)
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
        try:
            self._names.check_user(name)
        except LookalikeName as exc:
            raise UserExists(str(exc)) from None
        self._names.check_tenant(tenant)
        self._names.check_groups(tenant, user.groups)
        token = _new_token()
        if not self._store.add(user, token_sha256(token)):
            raise UserExists(f"a user named {name} already exists")
        return user, token

    def rotate(self, name: str) -> tuple[User, str]:
        """Replace a user's API token; return the user and the new token, shown once.

        The old token, and browser sessions signed in with it, stop acting at
        once. A disabled user stays disabled (its new token acts when enabled).
        """
        try:
            return self._store.set_token(name, token_sha256(token := _new_token())), token
        except KeyError:
            raise NotFound(f"no user {name}") from None

    def enable(self, name: str) -> User:
        """Enable a disabled user again, with the token it had (enabling twice is harmless)."""
        try:
            return self._store.set_status(name, UserStatus.ACTIVE)
        except KeyError:
            raise NotFound(f"no user {name}") from None

    def disable(self, name: str, *, by: Actor | None = None) -> User:
        """Disable a user: its token and name no longer act (disabling twice is harmless).

        A tenant never loses its last enabled admin this way (``LastAdmin``), whoever
        asks: no one of the tenant could then manage its users. An admin acting
        through an interface (``by``: the API's caller) may not disable itself either,
        even beside other admins; another admin does it. Whoever runs the server can
        always recover a tenant from the CLI (``citadel users add --role admin``,
        ``users enable``), which needs no admin of the tenant.
        """
        user = self.get(name)
        if by is not None and by.user_id == user.name:
            raise LastAdmin(f"you cannot disable yourself ({name}); another admin can")
        if user.active and user.role is Role.ADMIN and self._enabled_admins(user.tenant) <= 1:
            raise LastAdmin(
                f"{name} is the last enabled admin of tenant {user.tenant}: add or enable"
                " another admin first"
            )
        try:
            disabled = self._store.set_status(name, UserStatus.DISABLED)
        except KeyError:
            raise NotFound(f"no user {name}") from None
        if user.active and user.role is Role.ADMIN and self._enabled_admins(user.tenant) == 0:
            # Another admin was disabled at the same time (another request, another
            # server): both checks passed, so undo this one and leave the tenant its admin.
            self._store.set_status(name, UserStatus.ACTIVE)
            raise LastAdmin(
                f"{name} was the last enabled admin of tenant {user.tenant} once another"
                " was disabled at the same time: nothing changed"
            )
        return disabled

    def _enabled_admins(self, tenant: str) -> int:
        return sum(1 for u in self._store.list(tenant) if u.active and u.role is Role.ADMIN)

    def end_session(self, session_id: str, expires_at: int, now: int) -> None:
        """Sign a browser session out for good: every process sharing the user store
        refuses it from now on, restarts included, until it would have expired."""
        self._store.end_session(session_id, expires_at, now)

    def session_ended(self, session_id: str) -> bool:
        return self._store.session_ended(session_id)

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

    def stamp(self, token: str) -> str:
        """The session stamp of a token (see ``session_stamp``), for a browser sign-in."""
        return session_stamp(token_sha256(token))

    def session_actor(self, name: str, stamp: str) -> Actor:
        """The actor of a browser session; refused when the user is unknown, disabled,
        or its token was replaced since the session began."""
        record = self._store.record(name)
        if record is None or not hmac.compare_digest(session_stamp(record.token_sha256), stamp):
            raise Unauthenticated("the session ended: unknown user or replaced token")
        return self._active(record.user)

    def actor(self, name: str) -> Actor:
        """The actor for ``--as NAME``; unknown and disabled users are refused."""
        user = self._store.get(name)
        if user is None:
            raise Unauthenticated(f"no user {name}")
        return self._active(user)

    def reader(self, name: str) -> Actor | None:
        """The actor of ``name`` as the store has it now; ``None`` when the user is
        unknown or disabled (the readers the shadow and golden-citation checks judge for)."""
        try:
            return self.actor(name)
        except AppError:
            return None

    def confirm(self, asserted: Actor) -> Actor:
        """The actor a call runs for when a caller asserts ``asserted``; ``Forbidden`` unless
        the store agrees.

        Refused: a user the store does not have, a user the store has disabled
        (whatever status was asserted), and any claim beyond what the store
        grants — another tenant, another role, a group the user is not in. An
        actor claiming fewer groups than the user has runs with those (least
        privilege: never more than the caller asked for or the store grants).
        """
        user = self._store.get(asserted.user_id)
        name = asserted.user_id
        if user is None:
            raise Forbidden(f"user {name} is not registered here; nothing runs on its behalf")
        if not user.active or asserted.status is not UserStatus.ACTIVE:
            raise Forbidden(f"user {name} is disabled; nothing runs on its behalf")
        if asserted.tenant != user.tenant:
            raise Forbidden(f"user {name} does not belong to tenant {asserted.tenant}")
        if asserted.role is not user.role:
            raise Forbidden(f"user {name} does not have role {asserted.role.value}")
        beyond = asserted.groups - user.groups
        if beyond:
            raise Forbidden(f"user {name} is not in group(s) {', '.join(sorted(beyond))}")
        return Actor(
            user_id=user.name,
            tenant=user.tenant,
            role=user.role,
            status=user.status,
            groups=asserted.groups,
        )

    def sign_in_external(self, identity: ExternalIdentity) -> Actor:
        """The actor an identity verified by an OpenID provider signs in as.

        Found by (issuer, subject) only, never by email. First sign-in: a new
        reader, under the identity's name (``ada``, else ``ada-2`` and so on when
        taken or not a valid new name). Later sign-ins: tenant and groups are
        those of the claims now; role and status stay the store's (a disabled user
        is refused, ``UserDisabled``)."""
        user = self._store.by_identity(identity.issuer, identity.subject)
        if user is None:
            user = self._register_external(identity)
        elif (user.tenant, user.groups) != (identity.tenant, identity.groups):
            if user.tenant != identity.tenant:
                self._names.check_tenant(identity.tenant)
            self._names.check_groups(identity.tenant, identity.groups)
            user = self._store.set_membership(user.name, identity.tenant, identity.groups)
        return self._active(user)

    def _register_external(self, identity: ExternalIdentity) -> User:
        self._names.check_tenant(identity.tenant)
        self._names.check_groups(identity.tenant, identity.groups)
        base = identity.name[:56]
        for attempt in range(1, _NAME_TRIES + 1):
            name = base if attempt == 1 else f"{base}-{attempt}"
            try:
                check_new_user_name(name)
                self._names.check_user(name)
            except (InvalidValue, LookalikeName):
                if attempt == 1:
                    base = "user"
                continue
            user = User(
                name=name,
                tenant=identity.tenant,
                role=Role.READER,
                groups=identity.groups,
                status=UserStatus.ACTIVE,
                created_at=self._clock.now_iso(),
            )
            # A token no one is shown: the user signs in through its provider only.
            hidden = token_sha256(_new_token())
            if self._store.add_external(user, hidden, identity.issuer, identity.subject):
                return user
            linked = self._store.by_identity(identity.issuer, identity.subject)
            if linked is not None:  # another request registered it meanwhile
                return linked
        raise UserExists(f"no free user name for {identity.name}")

    def session_stamp_of(self, name: str) -> str:
        """The session stamp of a user's current token (a sign-in without the token)."""
        record = self._store.record(name)
        if record is None:
            raise NotFound(f"no user {name}")
        return session_stamp(record.token_sha256)

    def issue_link(self, name: str, ttl_s: int = LINK_TTL_S) -> str:
        """A one-time sign-in secret for ``name``, good for ``ttl_s`` seconds; only its
        hash is kept."""
        self.get(name)
        secret = secrets.token_urlsafe(_TOKEN_BYTES)
        self._store.add_signin_link(token_sha256(secret), name, self._now_s() + ttl_s)
        return secret

    def use_link(self, secret: str) -> Actor:
        """The actor a one-time sign-in secret signs in, spending it; refused when unknown,
        used, expired, or its user disabled."""
        name = self._store.take_signin_link(token_sha256(secret), self._now_s())
        if name is None:
            raise Unauthenticated("this sign-in link is unknown, used or expired")
        return self.actor(name)

    def _now_s(self) -> int:
        return int(datetime.fromisoformat(self._clock.now_iso()).timestamp())

    @staticmethod
    def _active(user: User) -> Actor:
        if not user.active:
            raise UserDisabled(f"user {user.name} is disabled")
        return user.actor()


def _new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(_TOKEN_BYTES)
