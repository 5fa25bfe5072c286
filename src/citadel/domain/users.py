"""Users and actors: who may act in a tenant, with which role and groups.

A user's name is its identity everywhere (``Actor.user_id``), so names are
unique across tenants. Names, tenants and groups are short printable tokens:
they are typed on command lines, compared exactly and shown in audit records.
"""

from __future__ import annotations

import enum
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from citadel.domain.errors import InvalidValue
from citadel.domain.names import check_new_name

MAX_NAME_CHARS = 64


class Role(enum.StrEnum):
    READER = "reader"
    LIBRARIAN = "librarian"
    ADMIN = "admin"


class UserStatus(enum.StrEnum):
    ACTIVE = "active"
    DISABLED = "disabled"


@dataclass(frozen=True, slots=True)
class Actor:
    """The authenticated principal a request runs for; never taken from a request body."""

    user_id: str
    tenant: str
    role: Role = Role.READER
    status: UserStatus = UserStatus.ACTIVE
    groups: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.user_id.strip():
            raise InvalidValue("actor needs a non-empty user id")
        if not self.tenant.strip():
            raise InvalidValue("actor needs a non-empty tenant")


def check_name(kind: str, value: str) -> str:
    """``value`` when it is a valid user name, tenant or group; else ``InvalidValue``.

    Valid: 1 to 64 characters, none of them whitespace or control (or other
    invisible format) characters. ``kind`` names the value in the message.
    """
    if not value:
        raise InvalidValue(f"a {kind} needs a non-empty name")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidValue(f"a {kind} name has at most {MAX_NAME_CHARS} characters")
    for char in value:
        if char.isspace() or unicodedata.category(char).startswith(("C", "Z")):
            raise InvalidValue(
                f"a {kind} name may not contain whitespace or control characters"
                f" (found U+{ord(char):04X})"
            )
    return value


_UNADDRESSABLE = frozenset({".", "..", "-"})
"""Names a URL path cannot carry as one segment (``/v1/users/{name}``), and the logs'
"no user" placeholder."""


def check_new_user_name(name: str) -> str:
    """``name`` when a new user may take it: a valid name (``check_name``) that the HTTP
    API can address and no one can mistake for another's. Refused: a ``/``, ``\\`` or
    ``%`` (a path segment that would not round-trip), ``.``, ``..`` and ``-``; a name
    not in Unicode NFKC (two spellings of one look); letters of several scripts
    (``аdam`` with a Cyrillic a): ``domain.names``. Names made before keep working."""
    check_name("user", name)
    if name in _UNADDRESSABLE or any(char in "/\\%" for char in name):
        raise InvalidValue(f"a user name may not be {name!r} or contain '/', '\\' or '%'")
    return check_new_name("user", name)


def check_groups(groups: Iterable[str]) -> frozenset[str]:
    """Valid group names as a set; a comma is refused too (group lists are comma-separated)."""
    checked = frozenset(check_name("group", group) for group in groups)
    for group in checked:
        if "," in group:
            raise InvalidValue("a group name may not contain a comma")
    return checked


@dataclass(frozen=True, slots=True)
class User:
    """A registered principal. Its API token lives in the store, only as a hash."""

    name: str
    tenant: str
    role: Role
    groups: frozenset[str]
    status: UserStatus
    created_at: str

    def __post_init__(self) -> None:
        check_name("user", self.name)
        check_name("tenant", self.tenant)
        check_groups(self.groups)

    @property
    def active(self) -> bool:
        return self.status is UserStatus.ACTIVE

    def actor(self) -> Actor:
        """The principal requests run for when this user acts."""
        return Actor(
            user_id=self.name,
            tenant=self.tenant,
            role=self.role,
            status=self.status,
            groups=self.groups,
        )
