"""The HTTP edge's settings of ``settings_table`` (``citadel serve``): rate limits,
cookies and sessions, the request deadline, body size, trusted proxies.

``SETTINGS`` splices them in at their place, so the README's table keeps its order.
"""

from __future__ import annotations

from citadel.domain.secrets import SecretStr
from citadel.setting_kinds import Addresses, Choice, Integer, Number, Secret, Setting

COOKIE_SECURITY = ("auto", "always")
_MIB = 1024 * 1024

HTTP_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_HTTP_RATE_LIMIT",
        "http.rate_per_minute",
        Integer(),
        120,
        "requests per user per minute (a token bucket, bursts up to the same number; 429 past it)",
    ),
    Setting(
        "CITADEL_HTTP_COOKIE_SECURE",
        "http.cookie_secure",
        Choice(COOKIE_SECURITY, empty_is_default=True),
        "auto",
        "`auto`: cookies `Secure` except over plain http on loopback (local development);"
        " `always`: `Secure` everywhere",
    ),
    Setting(
        "CITADEL_HTTP_SESSION_SECRET",
        "http.session_secret",
        Secret(),
        SecretStr(""),
        "signs session cookies (at least 32 bytes; set it to keep sessions across restarts)",
        secret=True,
        shown="a random key per process",
    ),
    Setting(
        "CITADEL_HTTP_SESSION_TTL_S",
        "http.session_ttl_s",
        Integer(),
        8 * 3600,
        "how long a browser session lasts",
    ),
    Setting(
        "CITADEL_HTTP_DEADLINE_S",
        "http.deadline_s",
        Number(),
        60.0,
        "each answer request's own deadline, the generator's inside it (504 past it)",
    ),
    Setting(
        "CITADEL_HTTP_MAX_JSON_BYTES",
        "http.max_json_bytes",
        Integer(bytes=True),
        _MIB,
        "the largest JSON body under `/v1`: 413 as soon as `Content-Length` says more or more"
        " bytes arrive (chunked bodies too); read only after the token is accepted",
    ),
    Setting(
        "CITADEL_HTTP_TRUSTED_PROXIES",
        "http.trusted_proxies",
        Addresses(),
        (),
        "comma-separated addresses or networks (`10.0.0.1,10.1.0.0/16`) of reverse proxies"
        " whose `X-Forwarded-For`/`X-Forwarded-Proto` are believed (client address for rate"
        " limits, https for cookies); from anyone else they are ignored",
        note="(trust none)",
    ),
)
