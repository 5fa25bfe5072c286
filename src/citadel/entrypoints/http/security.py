"""Browser sessions, CSRF tokens, per-user rate limits and who the client is (stdlib only).

Sessions are signed cookies: ``base64url(json).base64url(hmac)``
over the user's name, an expiry, a per-session CSRF secret and a stamp of the
API token the user signed in with. The user is looked up again on every
request: a disabled user's sessions stop acting at once (and act again if it is
enabled before they expire); replacing the token (``users rotate``) ends them
for good. Signing out ends one session for good too: its id (derived from its
CSRF secret) is kept in the user store until the session would have expired.
Form posts carry the CSRF token in a hidden field: signed in, it must
equal the session's secret (a synchronizer token); before signing in, it
must equal the signed ``citadel_csrf`` cookie (a signed double submit).
Both cookies are ``HttpOnly`` and ``SameSite=Strict``, and ``Secure`` unless
the request came over plain http to loopback and the settings allow that.

The client's address (what failed authentications are charged to) is the
peer's, unless the peer is a configured trusted proxy: only then is
``X-Forwarded-For`` believed (``TrustedProxies``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request
from starlette.responses import Response

SESSION_COOKIE = "citadel_session"
CSRF_COOKIE = "citadel_csrf"
CSRF_FIELD = "csrf_token"


@dataclass(frozen=True, slots=True)
class Session:
    user: str
    expires: int
    csrf: str
    stamp: str
    """The session stamp of the token the user signed in with (``citadel.app.users``)."""

    @property
    def id(self) -> str:
        """This session's identity for revocation: a hash of its CSRF secret (random per
        sign-in), so a list of revoked ids reveals no secret."""
        return hashlib.sha256(f"session-id\n{self.csrf}".encode()).hexdigest()[:32]


class SessionSigner:
    def __init__(self, secret: bytes, ttl_s: int, now: Callable[[], float] = time.time) -> None:
        if len(secret) < 32:
            raise ValueError("the session secret needs at least 32 bytes")
        self._secret = secret
        self._ttl_s = ttl_s
        self._now = now

    def issue(self, user: str, stamp: str) -> tuple[str, Session]:
        session = Session(user, int(self._now()) + self._ttl_s, secrets.token_urlsafe(32), stamp)
        body = _b64(
            json.dumps(
                {"u": session.user, "e": session.expires, "c": session.csrf, "s": stamp},
                separators=(",", ":"),
                ensure_ascii=True,
            ).encode("ascii")
        )
        return f"{body}.{_b64(self._mac('session', body))}", session

    def read(self, cookie: str | None) -> Session | None:
        """The session a cookie holds, or None when absent, altered, malformed or expired."""
        if not cookie or len(cookie) > 4096:
            return None
        body, _, mac = cookie.partition(".")
        try:
            if not hmac.compare_digest(_unb64(mac), self._mac("session", body)):
                return None
            fields = json.loads(_unb64(body))
            session = Session(
                str(fields["u"]), int(fields["e"]), str(fields["c"]), str(fields["s"])
            )
        except (ValueError, KeyError, TypeError):
            return None
        return session if self._now() < session.expires else None

    def seal(self, purpose: str, fields: dict[str, str], ttl_s: int) -> str:
        """A short-lived signed value for ``purpose`` (a sign-in flow kept by the browser):
        readable by the browser, but any change to it is refused by ``unseal``."""
        body = _b64(
            json.dumps(
                {**fields, "_e": int(self._now()) + ttl_s},
                separators=(",", ":"),
                ensure_ascii=True,
            ).encode("ascii")
        )
        return f"{body}.{_b64(self._mac(purpose, body))}"

    def unseal(self, purpose: str, cookie: str | None) -> dict[str, str] | None:
        """What ``seal`` sealed for the same purpose; None when absent, altered or expired."""
        if not cookie or len(cookie) > 4096:
            return None
        body, _, mac = cookie.partition(".")
        try:
            if not hmac.compare_digest(_unb64(mac), self._mac(purpose, body)):
                return None
            fields = json.loads(_unb64(body))
            expires = int(fields.pop("_e"))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        if self._now() >= expires or not all(isinstance(v, str) for v in fields.values()):
            return None
        return {str(k): str(v) for k, v in fields.items()}

    def anonymous_csrf(self) -> str:
        """A fresh pre-sign-in CSRF token: a nonce and its MAC (for the double submit)."""
        nonce = secrets.token_urlsafe(24)
        return f"{nonce}.{_b64(self._mac('csrf', nonce))}"

    def valid_anonymous_csrf(self, token: str | None) -> bool:
        if not token or len(token) > 256:
            return False
        nonce, _, mac = token.partition(".")
        try:
            return hmac.compare_digest(_unb64(mac), self._mac("csrf", nonce))
        except ValueError:
            return False

    def _mac(self, purpose: str, body: str) -> bytes:
        message = f"{purpose}\n{body}".encode("ascii", "replace")
        return hmac.new(self._secret, message, hashlib.sha256).digest()


class SessionEnds(Protocol):
    """Where signed-out sessions are kept: the user store (``UserService``)."""

    def end_session(self, session_id: str, expires_at: int, now: int) -> None: ...

    def session_ended(self, session_id: str) -> bool: ...


class RevokedSessions:
    """Sessions ended by signing out, each kept until it would have expired anyway.

    Kept in the user store, so every process sharing the library (a configured
    ``CITADEL_HTTP_SESSION_SECRET`` makes their cookies interchangeable) refuses a
    signed-out cookie, and so does this one after a restart. Records past their
    session's expiry are dropped as new ones arrive; live ones never are (that
    would revive a session).
    """

    def __init__(self, store: SessionEnds, now: Callable[[], float] = time.time) -> None:
        self._store = store
        self._now = now

    def revoke(self, session: Session) -> None:
        self._store.end_session(session.id, session.expires, int(self._now()))

    def revoked(self, session: Session) -> bool:
        return self._store.session_ended(session.id)


def csrf_matches(expected: str | None, given: str | None) -> bool:
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))


def cookie_secure(request: Request, policy: str) -> bool:
    """``Secure`` unless plain http to and from loopback is allowed (``auto``) and this is it."""
    if policy != "auto" or request.url.scheme == "https":
        return True
    host = request.url.hostname or ""
    client = request.client.host if request.client else ""
    return not (_loopback(host) and _loopback(client))


def set_cookie(response: Response, request: Request, name: str, value: str, policy: str) -> None:
    response.set_cookie(
        name,
        value,
        httponly=True,
        samesite="strict",
        secure=cookie_secure(request, policy),
        path="/",
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class TrustedProxies:
    """The reverse proxies whose forwarded headers are believed (default: none).

    Behind them the client is the right-most ``X-Forwarded-For`` address that is
    not itself a trusted proxy (what each proxy appended of its own peer), the
    same rule as uvicorn's ``forwarded_allow_ips``; from anyone else the
    header is ignored, so a client cannot pick the address it is charged to.
    """

    def __init__(self, entries: Sequence[str] = ()) -> None:
        self.entries = tuple(entries)
        self._networks = tuple(ipaddress.ip_network(e, strict=False) for e in entries)

    def __bool__(self) -> bool:
        return bool(self._networks)

    def trusts(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return False
        return any(address in network for network in self._networks)

    def client(self, peer: str, forwarded_for: Sequence[str]) -> str:
        """The client's address, given the peer's and the ``X-Forwarded-For`` headers."""
        if not self.trusts(peer):
            return peer
        hops = [_host(h) for value in forwarded_for for h in value.split(",")]
        hops = [h for h in hops if h]
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop
        return hops[0] if hops else peer


def _host(hop: str) -> str:
    """An ``X-Forwarded-For`` entry without its port, if it has one."""
    hop = hop.strip()
    if hop.startswith("["):
        return hop[1 : hop.find("]")] if "]" in hop else hop
    if hop.count(":") == 1:
        return hop.partition(":")[0]
    return hop


def client_address(request: Request, proxies: TrustedProxies) -> str:
    """The address of whoever sent ``request`` (see ``TrustedProxies``)."""
    peer = request.client.host if request.client else "unknown"
    return proxies.client(peer, request.headers.getlist("x-forwarded-for"))


class RateLimiter:
    """A token bucket per key: ``rate_per_minute`` tokens a minute, bursts up to as many."""

    def __init__(self, rate_per_minute: int, now: Callable[[], float] = time.monotonic) -> None:
        self._capacity = float(rate_per_minute)
        self._per_second = rate_per_minute / 60.0
        self._now = now
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> int:
        """0 when a request may go ahead, else the whole seconds until one may (Retry-After)."""
        with self._lock:
            now = self._now()
            tokens, then = self._buckets.get(key, (self._capacity, now))
            tokens = min(self._capacity, tokens + (now - then) * self._per_second)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0
            self._buckets[key] = (tokens, now)
            if len(self._buckets) > 100_000:
                self._forget_full(now)
            return max(1, math.ceil((1.0 - tokens) / self._per_second))

    def _forget_full(self, now: float) -> None:
        # Buckets that have refilled are the same as absent ones: drop them to bound memory.
        full = [
            key
            for key, (tokens, then) in self._buckets.items()
            if tokens + (now - then) * self._per_second >= self._capacity
        ]
        for key in full:
            del self._buckets[key]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc
