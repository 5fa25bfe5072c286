"""Sources in the registry: stable identity, versions, and who may read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from citadel.domain.errors import InvalidValue
from citadel.domain.model import Actor, Role


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
