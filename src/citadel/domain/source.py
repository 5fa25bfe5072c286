"""Sources in the registry: stable identity, versions, and who may read them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from citadel.domain.errors import InvalidValue
from citadel.domain.users import Actor, Role

MAX_SOURCE_ID_CHARS = 128
_SOURCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_source_id(value: str) -> str:
    """``value`` when it can name a source; else ``InvalidValue``.

    A source id travels in URL paths (viewer links, citation routes) and in
    reports, so it is one path segment that needs no escaping: 1 to 128 ASCII
    letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit
    (so never ``.`` or ``..``).
    """
    if not value or len(value) > MAX_SOURCE_ID_CHARS:
        raise InvalidValue(f"a source id has 1 to {MAX_SOURCE_ID_CHARS} characters")
    if not _SOURCE_ID.fullmatch(value):
        raise InvalidValue(
            "a source id is ASCII letters, digits, '.', '_' and '-', starting with a"
            " letter or digit"
        )
    return value


def valid_source_id(value: str) -> bool:
    try:
        check_source_id(value)
    except InvalidValue:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Source:
    """A document's stable identity and its trusted metadata (never taken from model output)."""

    source_id: str
    tenant: str
    title: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    tags: tuple[str, ...] = ()
    acl_groups: frozenset[str] = frozenset()
    canonical_url: str | None = None
    origin: str = ""
    current_version: int = 0
    deleted: bool = False
    revision: int = field(default=0, compare=False)
    """Counts every change to the source (a new version, its metadata or ACL, a move,
    deletion); the store owns it, so anything derived from the source can tell it is stale.
    Not part of equality: two records of one source compare by their metadata."""

    def __post_init__(self) -> None:
        if not self.source_id.strip():
            raise InvalidValue("a source needs an id")
        if not self.tenant.strip():
            raise InvalidValue("a source belongs to a tenant")

    @property
    def author(self) -> str:
        return ", ".join(self.authors)


@dataclass(frozen=True, slots=True)
class SourceVersion:
    source_id: str
    version: int
    content_sha256: str
    parser: str
    chunker: str
    page_count: int
    section_count: int
    chunk_count: int
    created_at: str
    retained: bool = True
    """False once retention dropped this version's chunks; its record stays."""

    def __post_init__(self) -> None:
        if self.version < 1:
            raise InvalidValue("versions start at 1")


@dataclass(frozen=True, slots=True)
class AccessScope:
    """What an actor may read: one tenant, and sources whose ACL meets its groups."""

    tenant: str
    groups: frozenset[str]
    unrestricted: bool = False

    @classmethod
    def of(cls, actor: Actor) -> AccessScope:
        return cls(actor.tenant, actor.groups, unrestricted=actor.role is Role.ADMIN)

    def allows(self, source: Source) -> bool:
        if source.deleted or source.tenant != self.tenant:
            return False
        return self.unrestricted or not source.acl_groups or bool(source.acl_groups & self.groups)
