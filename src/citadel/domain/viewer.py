"""Signed viewer links: short-lived, bound to one reader and one cited span.

A viewer link is minted at display time for a reader who may see the source
now. Its token carries the user, source, version and chunk (the chunk names
an exact span of that version's text) and an expiry at most five minutes
ahead; an HMAC-SHA256 over those fields proves the application made it. The
token is never stored — not in caches, manifests or the audit log — and the
viewer refuses it when it is expired, altered or presented by someone else.

Expiries are rounded up to the next whole minute, so displaying the same
answer to the same reader twice within a minute yields the same link.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from urllib.parse import quote

from citadel.domain.errors import InvalidValue

MAX_TTL_S = 300


class ViewerRefusal(enum.StrEnum):
    MALFORMED = "malformed"
    TAMPERED = "tampered"
    EXPIRED = "expired"
    WRONG_READER = "wrong_reader"
    WRONG_TARGET = "wrong_target"


class ViewerLinkRefused(InvalidValue):
    def __init__(self, reason: ViewerRefusal) -> None:
        super().__init__(f"viewer link refused: {reason.value}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ViewerGrant:
    """What a valid token lets its holder see, and until when (Unix seconds)."""

    user_id: str
    source_id: str
    version: int
    chunk_id: str
    expires: int
    span: tuple[int, int] | None = None
    """A quotation's ``[start, end)`` in the chunk's text, to highlight rather than the
    whole chunk; None highlights the chunk."""


class ViewerSigner:
    def __init__(self, secret: bytes, ttl_s: int = MAX_TTL_S) -> None:
        if len(secret) < 32:
            raise InvalidValue("the viewer link secret needs at least 32 bytes")
        if not 60 <= ttl_s <= MAX_TTL_S:
            raise InvalidValue(f"viewer links live between 60 and {MAX_TTL_S} seconds")
        self._secret = secret
        self._ttl_s = ttl_s

    def mint(
        self,
        user_id: str,
        source_id: str,
        version: int,
        chunk_id: str,
        now: float,
        span: tuple[int, int] | None = None,
    ) -> str:
        # The next whole minute plus ttl - 60: the same minute gives the same link, and
        # a link lives between ttl - 60 and ttl seconds.
        expires = (math.floor(now / 60) + 1) * 60 + self._ttl_s - 60
        fields: dict[str, object] = {
            "u": user_id,
            "s": source_id,
            "v": version,
            "c": chunk_id,
            "e": expires,
        }
        if span is not None:
            fields["h"] = [span[0], span[1]]
        body = _b64(
            json.dumps(
                fields,
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=True,
            ).encode("ascii")
        )
        return f"{body}.{_b64(self._mac(body))}"

    def verify(
        self, token: str, *, user_id: str, source_id: str, version: int, now: float
    ) -> ViewerGrant:
        """The grant, if ``token`` is genuine, unexpired, this reader's and for this version."""
        body, dot, mac = token.partition(".")
        if not dot or not body or not mac or len(token) > 2048:
            raise ViewerLinkRefused(ViewerRefusal.MALFORMED)
        try:
            given = _unb64(mac)
        except ValueError:
            raise ViewerLinkRefused(ViewerRefusal.MALFORMED) from None
        if not hmac.compare_digest(given, self._mac(body)):
            raise ViewerLinkRefused(ViewerRefusal.TAMPERED)
        try:
            fields = json.loads(_unb64(body))
            grant = ViewerGrant(
                user_id=str(fields["u"]),
                source_id=str(fields["s"]),
                version=int(fields["v"]),
                chunk_id=str(fields["c"]),
                expires=int(fields["e"]),
                span=_span(fields.get("h")),
            )
        except (ValueError, KeyError, TypeError):
            raise ViewerLinkRefused(ViewerRefusal.MALFORMED) from None
        if now >= grant.expires:
            raise ViewerLinkRefused(ViewerRefusal.EXPIRED)
        if grant.user_id != user_id:
            raise ViewerLinkRefused(ViewerRefusal.WRONG_READER)
        if (grant.source_id, grant.version) != (source_id, version):
            raise ViewerLinkRefused(ViewerRefusal.WRONG_TARGET)
        return grant

    def href(
        self,
        user_id: str,
        source_id: str,
        version: int,
        chunk_id: str,
        now: float,
        span: tuple[int, int] | None = None,
    ) -> str:
        """The viewer route for the cited span, with a fresh token for this reader."""
        token = self.mint(user_id, source_id, version, chunk_id, now, span)
        return (
            f"/v1/sources/{quote(source_id, safe='')}/versions/{version}/view"
            f"?chunk={quote(chunk_id, safe='')}&token={token}"
        )

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._secret, body.encode("ascii"), hashlib.sha256).digest()


def _span(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(type(v) is int for v in value)
        or not 0 <= value[0] < value[1]
    ):
        raise ValueError("a highlighted span is [start, end) with 0 <= start < end")
    return (value[0], value[1])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc
