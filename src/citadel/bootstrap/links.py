"""The link policy at registration and at display, and the viewer links' key."""

from __future__ import annotations

from citadel.adapters import key_files
from citadel.config import ConfigError, Settings
from citadel.domain.errors import InvalidValue
from citadel.domain.links import Link, LinkPolicy


def link_policy(settings: Settings) -> LinkPolicy:
    try:
        return LinkPolicy.parse(settings.link_allowed_hosts)
    except InvalidValue as exc:
        raise ConfigError(f"CITADEL_LINK_ALLOWED_HOSTS: {exc}") from None


def safe_href(policy: LinkPolicy, url: str) -> str | None:
    """At display: the URL as the policy normalises it, or None (policies change)."""
    verdict = policy.evaluate(url)
    return verdict.url if isinstance(verdict, Link) else None


def registered_url(policy: LinkPolicy, url: str) -> str:
    """At registration: the normalised URL, or a clear refusal."""
    verdict = policy.evaluate(url)
    if isinstance(verdict, Link):
        return verdict.url
    allowed = ", ".join(policy.allowed_hosts) or "none (set CITADEL_LINK_ALLOWED_HOSTS)"
    raise InvalidValue(f"the URL is refused ({verdict.value}); allowed hosts: {allowed}")


def viewer_secret(settings: Settings) -> bytes:
    """CITADEL_LINK_SECRET, else a random key created once in the data directory (0600)."""
    if settings.link_secret:
        return settings.link_secret.get_secret_value().encode("utf-8")
    path = settings.home / "viewer.key"
    secret = key_files.read_or_create(path, 32)
    if len(secret) < 32:
        raise ConfigError(f"{path} holds fewer than 32 bytes; remove it to make a new key")
    return secret
