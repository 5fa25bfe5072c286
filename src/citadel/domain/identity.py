"""Who an OpenID provider says a person is: an ``ExternalIdentity`` mapped from the
claims of a verified ID token (``map_claims``), pure and without I/O.

A person is the pair (issuer, subject): the provider's own stable identifier,
never an email address (an email can change hands, or be claimed at a second
provider). Groups and tenant come from claims whose names are configured, since
every provider puts them elsewhere: ``groups`` at one, ``realm_access.roles`` (a
dotted path into nested objects) at another. Claims never carry a role: what a
signed-in person may do beyond reading is granted in citadel, not by the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from citadel.domain.errors import InvalidValue
from citadel.domain.users import check_groups, check_name


@dataclass(frozen=True, slots=True)
class ExternalIdentity:
    issuer: str
    subject: str
    email: str
    """Empty when the provider sent none; shown, never used to find the user."""
    name: str
    """A name to register the user under (the preferred username, else the email's
    local part, else the subject); taken names get a suffix (``UserService``)."""
    groups: frozenset[str]
    tenant: str
    """The tenant claim's value, or the configured default tenant without one."""


@dataclass(frozen=True, slots=True)
class ClaimNames:
    """Where the groups and the tenant are in the provider's claims (dotted paths)."""

    groups: str = "groups"
    tenant: str = ""
    """Empty: every user of this provider is in ``default_tenant``."""
    default_tenant: str = "default"


def claim(claims: Mapping[str, object], path: str) -> object:
    """The value at a dotted ``path`` (``realm_access.roles``); None when absent.

    A claim whose own name holds a dot (``https://example.com/groups``) is found
    whole first, so URL-named claims work unchanged."""
    if not path:
        return None
    if path in claims:
        return claims[path]
    value: object = claims
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _groups(value: object) -> frozenset[str]:
    """Groups from a claim: a list of strings, or one string; names citadel cannot hold
    (whitespace, commas, more than 64 characters) are left out, not refused: a
    provider's odd group must not lock its members out."""
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return frozenset()
    kept: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            continue
        name = item.lstrip("/")  # Keycloak's group paths (/team) read as the group
        try:
            kept |= check_groups([name])
        except InvalidValue:
            continue
    return frozenset(kept)


def _text(claims: Mapping[str, object], key: str) -> str:
    value = claims.get(key)
    return value.strip() if isinstance(value, str) else ""


def map_claims(claims: Mapping[str, object], names: ClaimNames) -> ExternalIdentity:
    """The identity a verified claim set stands for; ``InvalidValue`` without an issuer
    or subject, or with a tenant citadel cannot hold."""
    issuer, subject = _text(claims, "iss"), _text(claims, "sub")
    if not issuer or not subject:
        raise InvalidValue("an ID token needs an issuer (iss) and a subject (sub)")
    email = _text(claims, "email")
    tenant_value = claim(claims, names.tenant)
    if isinstance(tenant_value, list) and len(tenant_value) == 1:
        tenant_value = tenant_value[0]
    tenant = tenant_value.strip() if isinstance(tenant_value, str) else ""
    tenant = check_name("tenant", tenant or names.default_tenant)
    preferred = _text(claims, "preferred_username") or email.partition("@")[0] or subject
    return ExternalIdentity(
        issuer=issuer,
        subject=subject,
        email=email,
        name=preferred,
        groups=_groups(claim(claims, names.groups)),
        tenant=tenant,
    )


@dataclass(frozen=True, slots=True)
class SignInFlow:
    """One browser's sign-in at a provider, between leaving and coming back: kept by the
    browser (a signed cookie), never by the server. ``state`` ties the callback to
    this browser, ``nonce`` the ID token to this request, ``verifier`` is the PKCE
    secret whose hash went out with the request; ``next`` is where to land."""

    state: str
    nonce: str
    verifier: str
    next: str = "/"
