"""Who is asking: bearer API tokens for the API, signed session cookies for the browser.

Every authenticated request is charged to its user's rate-limit bucket;
failed authentications are charged to the client's address (a forwarded one
only from a trusted proxy), so guessing tokens is slow too. Roles are checked
per endpoint with ``require``. Authentication reads headers only: a request
body is read after its sender is known (``bodies``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from citadel.app.answer import Answering
from citadel.app.errors import AppError, Forbidden, Unauthenticated
from citadel.bootstrap import Services
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http.errors import RateLimited, SignInRequired
from citadel.entrypoints.http.image_limits import ReaderImages
from citadel.entrypoints.http.original_work import OriginalWork
from citadel.entrypoints.http.recent import RecentQuestions
from citadel.entrypoints.http.security import (
    SESSION_COOKIE,
    RateLimiter,
    RevokedSessions,
    Session,
    SessionSigner,
    TrustedProxies,
    client_address,
)


@dataclass(frozen=True, slots=True)
class RecentIngest:
    """One upload's outcome on the library page."""

    user: str
    """Who uploaded it."""
    file: str
    status: str
    detail: str
    source_id: str | None = None
    """The source it made or changed; None when it was refused."""


@dataclass
class Edge:
    """The HTTP layer's state: the services and what the edge keeps in memory."""

    services: Services
    sessions: SessionSigner
    limiter: RateLimiter
    cookie_policy: str
    answering: Answering
    """Who answers: the in-process AnswerService, or a remote Answer service (split mode)."""
    proxies: TrustedProxies = field(default_factory=TrustedProxies)
    recent_ingests: dict[str, list[RecentIngest]] = field(default_factory=dict)
    counting: threading.Lock = field(default_factory=threading.Lock)
    """Held while /readyz counts vector coverage: one count at a time, however many probes."""
    questions: RecentQuestions = field(default_factory=RecentQuestions)
    """Each reader's recent questions on the ask page (this process only)."""
    images: ReaderImages = field(default_factory=ReaderImages)
    """Each reader's page images being drawn and asked for (this process only)."""
    originals: OriginalWork = field(default_factory=OriginalWork)
    """Fetching and hashing kept originals, on threads of its own (original_work.py)."""
    probes: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(2, thread_name_prefix="readyz")
    )
    """/readyz's store read and vector count: threads no request can hold."""

    @property
    def revoked(self) -> RevokedSessions:
        """Signed-out sessions, kept in the user store (shared by every process)."""
        return RevokedSessions(self.services.users)

    def remember(self, tenant: str, entry: RecentIngest) -> None:
        """Keep the tenant's last uploads' outcomes for the library page (this process only)."""
        kept = self.recent_ingests.setdefault(tenant, [])
        kept.insert(0, entry)
        del kept[20:]

    def recent_for(self, actor: Actor, readable: Collection[str]) -> list[RecentIngest]:
        """The recent uploads ``actor`` may know of: its own, and those of sources in
        ``readable`` (the ids its library listing shows: the same access rule)."""
        return [
            entry
            for entry in self.recent_ingests.get(actor.tenant, [])
            if entry.user == actor.user_id
            or (entry.source_id is not None and entry.source_id in readable)
        ]


def edge(request: Request) -> Edge:
    found: Edge = request.app.state.edge
    return found


def bearer_token(request: Request) -> str | None:
    """The request's bearer token, None without one; more than one ``Authorization``
    header is refused (a proxy and the server could each read a different one)."""
    headers = request.headers.getlist("authorization")
    if not headers:
        return None
    if len(headers) > 1:
        raise Unauthenticated("send one Authorization header, not several")
    header = headers[0]
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <API token>'")
    return token.strip()


def authenticate_token(request: Request, token: str) -> Actor:
    state = edge(request)
    try:
        actor = state.services.users.authenticate(token)
    except Unauthenticated:
        charge(request, f"address:{_client(request)}")
        raise
    admit(request, actor)
    return actor


# Declared so the OpenAPI document names the schemes on every operation that
# authenticates; they never refuse anything themselves (the functions below do).
BEARER = HTTPBearer(
    scheme_name="bearer",
    description="An API token (`citadel users add`, or POST /v1/users as an admin).",
    auto_error=False,
)
SESSION = APIKeyCookie(
    name=SESSION_COOKIE,
    scheme_name="session",
    description="The web UI's signed session (sign in at /signin).",
    auto_error=False,
)
_Declared = HTTPAuthorizationCredentials | None


def api_actor(request: Request, _: Annotated[_Declared, Depends(BEARER)] = None) -> Actor:
    """The API's caller, from ``Authorization: Bearer <token>`` only (no cookies: no CSRF)."""
    token = bearer_token(request)
    if token is None:
        raise SignInRequired(
            "sign in: send 'Authorization: Bearer <API token>' (tokens come from"
            " `citadel users add`)"
        )
    return authenticate_token(request, token)


def session_of(request: Request) -> Session | None:
    """The request's session, or None when it has none, or one that was signed out."""
    state = edge(request)
    session = state.sessions.read(request.cookies.get(SESSION_COOKIE))
    if session is None or state.revoked.revoked(session):
        return None
    return session


def browser_actor(request: Request) -> Actor | None:
    """The signed-in browser user, looked up now, or None: a disabled user, or one whose
    token was replaced since signing in, is signed out."""
    session = session_of(request)
    if session is None:
        return None
    try:
        actor = edge(request).services.users.session_actor(session.user, session.stamp)
    except AppError:
        return None
    admit(request, actor)
    return actor


def reader_actor(
    request: Request,
    _: Annotated[_Declared, Depends(BEARER)] = None,
    __: Annotated[str | None, Depends(SESSION)] = None,
) -> Actor:
    """A bearer token when one is sent, else the browser session (for links people follow)."""
    token = bearer_token(request)
    if token is not None:
        return authenticate_token(request, token)
    actor = browser_actor(request)
    if actor is None:
        raise SignInRequired("sign in first (at /signin) or send a bearer API token")
    return actor


def admit(request: Request, actor: Actor) -> None:
    request.state.user = actor.user_id
    charge(request, f"user:{actor.tenant}:{actor.user_id}")


def charge(request: Request, key: str) -> None:
    limiter: RateLimiter = edge(request).limiter
    wait = limiter.take(key)
    if wait:
        raise RateLimited(wait)


def require(*roles: Role) -> Callable[[Actor], Actor]:
    """A dependency: the API caller, when its role is one of ``roles``."""
    allowed = frozenset(roles)

    def check(actor: Annotated[Actor, Depends(api_actor)]) -> Actor:
        if actor.role not in allowed:
            names = " or ".join(sorted(r.value for r in allowed))
            raise Forbidden(f"this needs the {names} role; you are a {actor.role.value}")
        return actor

    return check


def _client(request: Request) -> str:
    return client_address(request, edge(request).proxies)


ApiActor = Annotated[Actor, Depends(api_actor)]
ReaderActor = Annotated[Actor, Depends(reader_actor)]
Librarian = Annotated[Actor, Depends(require(Role.LIBRARIAN, Role.ADMIN))]
