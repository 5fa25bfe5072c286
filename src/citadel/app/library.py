"""Library use cases: list, inspect, move, re-permission and delete sources, scoped to the actor.

A source id names a source within its tenant, so every lookup by id is of the
actor's tenant: another tenant's source of the same id is, to this actor, not there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from citadel.app.errors import (
    Forbidden,
    InvalidRequest,
    NotFound,
    ServiceUnavailable,
    VersionConflict,
)
from citadel.app.names import NameRegister
from citadel.app.ports import ChunkStore, SourceRegistry
from citadel.app.ports.pages import OriginalStore
from citadel.domain.document import Chunk
from citadel.domain.errors import InvalidValue
from citadel.domain.source import AccessScope, Source, SourceVersion, valid_source_id
from citadel.domain.users import Actor, Role, check_groups

_CHANGE_ATTEMPTS = 5
_HEADINGS_KEPT = 256


@dataclass(frozen=True, slots=True)
class SourceDetails:
    source: Source
    versions: tuple[SourceVersion, ...]


@dataclass(frozen=True, slots=True)
class Shelved:
    """A source as the library's list shows it: its current version's record (None when
    the registry has none) and when its first version was ingested."""

    source: Source
    current: SourceVersion | None
    first_ingested: str


@dataclass(frozen=True, slots=True)
class SourcePassage:
    """One passage of a version, with the source it belongs to."""

    source: Source
    chunk: Chunk


class LibraryService:
    def __init__(
        self,
        registry: SourceRegistry,
        chunks: ChunkStore,
        originals: OriginalStore | None = None,
        names: NameRegister | None = None,
    ) -> None:
        """``originals``: the kept uploaded files, dropped with their source; ``names``:
        the names users and sources hold (by default, the sources' only)."""
        self._names = names or NameRegister(sources=registry)
        self._registry = registry
        self._chunks = chunks
        self._originals = originals
        # A version's headings never change: kept per (tenant, source, version).
        self._headings: dict[tuple[str, str, int], tuple[str, ...]] = {}

    def list(self, actor: Actor) -> Sequence[Source]:
        """Live sources ``actor`` may read."""
        scope = AccessScope.of(actor)
        return [s for s in self._registry.list(actor.tenant) if scope.allows(s)]

    def shelf(self, actor: Actor) -> tuple[Shelved, ...]:
        """``list``, each source with its current version and first ingest date."""
        shelved: tuple[Shelved, ...] = ()
        for source in self.list(actor):
            versions = self._registry.versions(actor.tenant, source.source_id)
            current = next((v for v in versions if v.version == source.current_version), None)
            first = min((v.created_at for v in versions), default="")
            shelved += (Shelved(source, current, first),)
        return shelved

    def headings(self, source_id: str, actor: Actor) -> tuple[str, ...]:
        """The section headings of the current version in reading order, each once (none
        when its text is past retention); read once per version, then remembered."""
        source = self._readable(source_id, actor)
        key = (actor.tenant, source_id, source.current_version)
        known = self._headings.get(key)
        if known is not None:
            return known
        try:
            chunks = self.chunks(source_id, actor)
        except NotFound:
            return ()
        found = tuple(dict.fromkeys(c.section_path[-1] for c in chunks if c.section_path))
        if len(self._headings) >= _HEADINGS_KEPT:
            self._headings.pop(next(iter(self._headings)))
        self._headings[key] = found
        return found

    def show(self, source_id: str, actor: Actor) -> SourceDetails:
        source = self._readable(source_id, actor)
        return SourceDetails(source, tuple(self._registry.versions(actor.tenant, source_id)))

    def chunks(self, source_id: str, actor: Actor, version: int | None = None) -> Sequence[Chunk]:
        """A version's chunks in reading order (the current version by default)."""
        source = self._readable(source_id, actor)
        wanted = version or source.current_version
        known = {v.version: v for v in self._registry.versions(actor.tenant, source_id)}
        if wanted not in known:
            raise NotFound(f"source {source_id} has no version {wanted}")
        if not known[wanted].retained:
            raise NotFound(f"version {wanted} of {source_id} is past retention")
        return self._chunks.chunks(actor.tenant, source_id, wanted)

    def passage(self, source_id: str, version: int, chunk_id: str, actor: Actor) -> SourcePassage:
        """Passage ``chunk_id`` of that version: ``Forbidden`` or ``NotFound`` unless
        ``actor`` may read that version now (as ``show`` and ``chunks`` read it: tenant,
        groups, deletion, retention)."""
        source = self._readable(source_id, actor)
        chunk = next(
            (c for c in self.chunks(source_id, actor, version) if c.chunk_id == chunk_id), None
        )
        if chunk is None:
            raise NotFound(f"version {version} of {source_id} has no passage {chunk_id}")
        return SourcePassage(source, chunk)

    def found_passage(self, chunk_id: str, actor: Actor) -> SourcePassage:
        """A passage by the chunk id a search gave (its ``evidence_id``), if ``actor`` may
        read it now (``passage``). One that does not exist and one the actor may not read
        are refused alike (``NotFound``), so the refusal says nothing of the source."""
        refused = NotFound(f"no passage {chunk_id} that you may read")
        stored = self._chunks.passages([chunk_id]).get(chunk_id)
        if stored is None or stored.source.tenant != actor.tenant:
            raise refused
        chunk = stored.chunk
        try:
            return self.passage(chunk.source_id, chunk.version, chunk.chunk_id, actor)
        except (NotFound, Forbidden):
            raise refused from None

    def move(self, source_id: str, origin: str, actor: Actor) -> Source:
        """Record a new location; identity, versions and citations are unchanged."""
        if not origin.strip():
            raise InvalidRequest("the new location is empty")
        return self._change(source_id, actor, lambda source: replace(source, origin=origin))

    def set_acl(self, source_id: str, groups: Iterable[str], actor: Actor) -> Source:
        """Replace the groups that may read a source; no groups means the whole tenant."""
        require_librarian(actor)
        try:
            acl = check_groups(groups)
        except InvalidValue as exc:
            raise InvalidRequest(str(exc)) from None
        self._names.check_groups(actor.tenant, acl)
        return self._change(source_id, actor, lambda source: replace(source, acl_groups=acl))

    def _change(self, source_id: str, actor: Actor, change: Callable[[Source], Source]) -> Source:
        """Read, check the write right, change, and write back by compare-and-swap: a
        concurrent ingest, move or ACL change is never lost, it is read again."""
        for _ in range(_CHANGE_ATTEMPTS):
            changed = change(writable(self._lookup(source_id, actor), source_id, actor))
            try:
                self._registry.update(changed)
            except VersionConflict:
                continue
            except KeyError:
                raise NotFound(f"source {source_id} was deleted") from None
            return changed
        raise ServiceUnavailable(f"source {source_id} kept changing; try again")

    def delete(self, source_id: str, actor: Actor) -> None:
        """Delete the text and leave a tombstone, so old citations resolve to "deleted";
        the source's kept original files go too, whichever entrypoint asked."""
        writable(self._lookup(source_id, actor), source_id, actor)
        try:
            self._registry.delete(actor.tenant, source_id)
        except KeyError:
            raise NotFound(f"source {source_id} was deleted") from None
        if self._originals is not None:
            self._originals.forget(actor.tenant, source_id)

    def _readable(self, source_id: str, actor: Actor) -> Source:
        return readable(self._lookup(source_id, actor), source_id, actor)

    def _lookup(self, source_id: str, actor: Actor) -> Source | None:
        """The actor's tenant's source of that id (an id no source could have is none)."""
        if not valid_source_id(source_id):
            return None
        return self._registry.get(actor.tenant, source_id)


def readable(source: Source | None, source_id: str, actor: Actor) -> Source:
    """``source`` (the registry's record of ``source_id`` in ``actor``'s tenant) when
    ``actor`` may read it.

    An id no source could have and a missing one look the same (``NotFound``); the
    registry is asked only within the actor's tenant, and a record of another tenant
    is refused here too, so no existence leaks across tenants.
    """
    if source is None or source.tenant != actor.tenant or not valid_source_id(source_id):
        raise NotFound(f"no source {source_id}")
    if source.deleted:
        raise NotFound(f"source {source_id} was deleted")
    if not AccessScope.of(actor).allows(source):
        raise Forbidden(f"you may not read source {source_id}")
    return source


def writable(source: Source | None, source_id: str, actor: Actor) -> Source:
    """``source`` when ``actor`` may change it: re-permission it, move or delete it, or
    write a version of it. One rule for every write, whichever entrypoint asks: a
    librarian or admin of its tenant who may read it."""
    require_librarian(actor)
    return readable(source, source_id, actor)


def require_librarian(actor: Actor) -> None:
    if actor.role not in {Role.LIBRARIAN, Role.ADMIN}:
        raise Forbidden("only librarians and admins change the library")
