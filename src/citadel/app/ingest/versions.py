"""The version decision: what a parsed document is to the library, for the actor writing it.

A new source, the next version of a stored one, or unchanged (then perhaps
moved, or given the ACL said explicitly). Only a source the actor may write
is a candidate (``citadel.app.library.writable``, the rule of ``sources acl``);
content or an origin matching another source is, to this actor, not there.
Source ids are scoped to the tenant: a named id is looked up in the ingest's
tenant only, so another tenant's source of that id is never touched or revealed.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePath

from citadel.app.errors import Forbidden, IngestError, NotFound, VersionConflict
from citadel.app.ingest.options import IngestOptions
from citadel.app.library import writable
from citadel.app.ports import Clock, SourceRegistry
from citadel.domain.chunking import CHUNKER_VERSION, ChunkingPolicy, canonical_text, chunk_blocks
from citadel.domain.document import Chunk, ParsedDocument
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.users import Actor


@dataclass(frozen=True, slots=True)
class IngestReport:
    path: str
    source_id: str
    version: int
    status: str
    """``created`` (new source), ``updated`` (new version) or ``unchanged`` (no-op)."""
    title: str
    pages: int
    sections: int
    chunks: int
    warnings: tuple[str, ...] = ()
    """What the parser noticed but read past (a repaired PDF, a file left out of a
    folder), one line each, in citadel's words."""


@dataclass(frozen=True, slots=True)
class PreparedVersion:
    """A new version, parsed and chunked, not yet embedded or committed."""

    shown: str
    status: str
    source: Source
    version: SourceVersion
    chunks: tuple[Chunk, ...]
    unique_in: AccessScope | None
    """Set when the caller named no source: the content may not have appeared in
    another source this actor writes meanwhile (else it is that source's, unchanged)."""
    document: ParsedDocument
    options: IngestOptions
    origin: str


_DECISIONS = 5
"""Rounds of deciding when other writers keep changing the source in between."""


class VersionPlanner:
    """Decides each document's version from what the registry holds now; writes only
    the metadata of an unchanged source (its new origin, an explicit ACL)."""

    def __init__(
        self,
        registry: SourceRegistry,
        clock: Clock,
        chunking: ChunkingPolicy | None = None,
        units: Callable[[str], str] | None = None,
    ) -> None:
        self._registry = registry
        self._clock = clock
        self._chunking = chunking or ChunkingPolicy()
        self._units = units

    def plan(
        self,
        document: ParsedDocument,
        options: IngestOptions,
        actor: Actor,
        origin: str,
        shown: str,
    ) -> PreparedVersion | IngestReport:
        """Chunk ``document`` as the next version of its source, or report a no-op.
        ``options`` were checked already; run again after a lost commit race.

        An unchanged source whose metadata must change (a move, an explicit ACL) is
        updated by compare-and-swap; when another writer changed or deleted it in
        between, the decision is taken again from what is stored then."""
        for _ in range(_DECISIONS):
            try:
                return self._plan_once(document, options, actor, origin, shown)
            except (VersionConflict, KeyError):
                continue
        raise IngestError(
            shown, "busy", "the source kept changing while this file was ingested; retry"
        )

    def _plan_once(
        self,
        document: ParsedDocument,
        options: IngestOptions,
        actor: Actor,
        origin: str,
        shown: str,
    ) -> PreparedVersion | IngestReport:
        if not any(block.text.strip() for block in document.blocks):
            raise IngestError(shown, "no_text", "no body text could be extracted")
        content_sha = hashlib.sha256(canonical_text(document.blocks).text.encode()).hexdigest()
        existing = self._existing(options, actor, content_sha, origin, shown)
        if existing is not None and self._current_hash(existing) == content_sha:
            changed = existing
            if origin and existing.origin != origin:
                # Same content at a new place: the file moved; remember where it is now.
                changed = replace(changed, origin=origin)
            if options.acl_groups is not None and options.acl_groups != existing.acl_groups:
                # Said explicitly, so it applies though the text is the same.
                changed = replace(changed, acl_groups=options.acl_groups)
            if changed != existing:
                self._registry.update(changed)
            return self.report(
                shown, changed, changed.current_version, "unchanged", document.warnings
            )

        version_no = existing.current_version + 1 if existing else 1
        source_id = existing.source_id if existing else options.source_id or _new_source_id()
        _, chunks = chunk_blocks(
            document.blocks, source_id, version_no, self._chunking, tenant=options.tenant
        )
        if not chunks:
            raise IngestError(shown, "no_text", "no body text could be extracted")
        if self._units is not None:
            cut = self._units
            chunks = tuple(replace(chunk, units=cut(chunk.text)) for chunk in chunks)
        if options.acl_groups is not None:
            acl = options.acl_groups
        else:
            # A new version never widens (or narrows) who may read the source.
            acl = existing.acl_groups if existing else frozenset()
        source = Source(
            source_id=source_id,
            tenant=options.tenant,
            title=options.title or document.title or PurePath(origin or shown).stem,
            authors=options.authors if options.authors is not None else document.authors,
            year=options.year if options.year is not None else document.year,
            tags=options.tags if options.tags is not None else document.tags,
            acl_groups=acl,
            canonical_url=options.url,
            origin=origin,
            current_version=version_no,
            # What the decision was read from: the commit refuses if it changed since.
            revision=existing.revision if existing else 0,
        )
        if existing is not None and options.url is None:
            source = replace(source, canonical_url=existing.canonical_url)
        if existing is not None and not origin:
            source = replace(source, origin=existing.origin)  # an upload has no place
        version = SourceVersion(
            source_id=source_id,
            version=version_no,
            content_sha256=content_sha,
            parser=document.parser,
            chunker=CHUNKER_VERSION,
            page_count=document.page_count,
            section_count=len({c.section_path for c in chunks}),
            chunk_count=len(chunks),
            created_at=self._clock.now_iso(),
        )
        status = "updated" if existing else "created"
        unique_in = None if options.source_id else AccessScope.of(actor)
        return PreparedVersion(
            shown, status, source, version, chunks, unique_in, document, options, origin
        )

    def report(
        self,
        path: str,
        source: Source,
        version_no: int,
        status: str,
        warnings: tuple[str, ...] = (),
    ) -> IngestReport:
        """The report of ``source`` at ``version_no``, with that version's stored counts."""
        counts = next(
            (
                v
                for v in self._registry.versions(source.tenant, source.source_id)
                if v.version == version_no
            ),
            None,
        )
        return IngestReport(
            path=path,
            source_id=source.source_id,
            version=version_no,
            status=status,
            title=source.title,
            pages=counts.page_count if counts else 0,
            sections=counts.section_count if counts else 0,
            chunks=counts.chunk_count if counts else 0,
            warnings=warnings,
        )

    def _existing(
        self, options: IngestOptions, actor: Actor, content_sha: str, origin: str, shown: str
    ) -> Source | None:
        """The stored source this file is a version of, if any, and only if ``actor``
        may write it (the rule of ``sources acl``).

        A named id is looked up in the ingest's tenant only: another tenant's source of
        that id is, to this actor, not there (a new source of the id is made in this
        tenant). A deleted one of this tenant (its tombstone keeps old citations
        resolving as "deleted") or one this actor may not read gets one refusal that
        does not say which. Matching content or origin counts only among sources the
        actor may write: others are, to it, not there.
        """
        if options.source_id:
            found = self._registry.get(options.tenant, options.source_id)
            if found is None:
                return None
            try:
                return writable(found, options.source_id, actor)
            except (NotFound, Forbidden):
                raise IngestError(
                    shown,
                    "id_unavailable",
                    f"source id {options.source_id} cannot be used here; choose another",
                ) from None
        scope = AccessScope.of(actor)
        for key in ({"content_sha256": content_sha}, {"origin": origin}):
            for candidate in self._registry.matching(options.tenant, **key):
                if scope.allows(candidate):
                    return candidate
        return None

    def _current_hash(self, source: Source) -> str:
        for version in self._registry.versions(source.tenant, source.source_id):
            if version.version == source.current_version:
                return version.content_sha256
        return ""


def _new_source_id() -> str:
    # Random, not derived from content: the same text may be a distinct source
    # in another tenant, or re-ingested after a delete left a tombstone.
    return "s" + uuid.uuid4().hex[:15]
