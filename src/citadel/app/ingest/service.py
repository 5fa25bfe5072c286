"""The ingest use case: check the request, decide the version, embed, commit with retry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from citadel.app.errors import Forbidden, IngestError, LookalikeName, VersionConflict
from citadel.app.ingest.embedding import ChunkEmbedding
from citadel.app.ingest.metering import metered
from citadel.app.ingest.options import IngestOptions
from citadel.app.ingest.originals import keep_original
from citadel.app.ingest.versions import IngestReport, PreparedVersion, VersionPlanner
from citadel.app.library import require_librarian
from citadel.app.names import NameRegister
from citadel.app.ports import (
    ChunkVectors,
    Clock,
    DocumentMetadata,
    Embedder,
    IncomingDocument,
    OperationMetrics,
    ProgressCallback,
    SourceRegistry,
    VectorIndex,
)
from citadel.app.ports.pages import OriginalStore
from citadel.domain.chunking import ChunkingPolicy
from citadel.domain.document import ParsedDocument, without_controls
from citadel.domain.errors import InvalidValue
from citadel.domain.integers import YEAR_MAX, YEAR_MIN, check_int
from citadel.domain.source import check_source_id
from citadel.domain.users import Actor, check_groups, check_name

_COMMIT_ATTEMPTS = 5
"""Decide-and-commit rounds when other writers keep winning the race for a source."""


DEFAULT_RETAIN_VERSIONS = 5
"""Versions per source that keep their text (``CITADEL_RETAIN_VERSIONS``)."""


@dataclass(frozen=True, slots=True)
class ParsedInput:
    """An incoming document parsed already (a BEIR corpus): shown as its origin, no manifest."""

    document: ParsedDocument
    origin: str

    @property
    def shown(self) -> str:
        return self.origin

    @property
    def metadata(self) -> DocumentMetadata | None:
        return None

    @property
    def original(self) -> Path | None:
        return None

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        return self.document


class IngestService:
    """Documents in, versions out; one document's failure never leaves anything of it behind.

    Each version goes through the request check (once per document: who asks,
    names, the canonical URL), the version decision (``VersionPlanner``),
    embedding (``ChunkEmbedding``: only text whose vector is not cached yet)
    and the commit (chunks and vectors in one transaction; a lost race is
    decided again). An unchanged document commits nothing, but its current
    chunks still get any vector the configured model lacks (they were
    embedded under another model, or before there was an embedder): else
    dense search would stay blind to them however often the file is ingested.
    Reading files is not done here: a ``DocumentReader`` hands documents over.
    ``units``, when given, cuts each new chunk's text into the quotable units stored
    beside it (``Chunk.units``: the extractive generator's, so it need not cut them
    on every answer). ``originals``: the kept PDF originals: each PDF ingested one by
    one is kept there (``ingest``), and versions past retention are dropped when
    retention drops their text (whoever ingested them).
    """

    def __init__(
        self,
        registry: SourceRegistry,
        clock: Clock,
        *,
        embedder: Embedder | None = None,
        vectors: VectorIndex | None = None,
        chunking: ChunkingPolicy | None = None,
        retain_versions: int = DEFAULT_RETAIN_VERSIONS,
        check_url: Callable[[str], str] | None = None,
        metrics: OperationMetrics | None = None,
        units: Callable[[str], str] | None = None,
        names: NameRegister | None = None,
        originals: OriginalStore | None = None,
    ) -> None:
        """``names``: the names users and sources hold (by default, the sources' only)."""
        self._names = names or NameRegister(sources=registry)
        self._metrics = metrics
        self._originals = originals
        self._embedding = ChunkEmbedding(embedder, vectors)
        self._registry = registry
        self._planner = VersionPlanner(registry, clock, chunking, units)
        self._retain_versions = retain_versions
        self._check_url = check_url

    def ingest(
        self,
        document: IncomingDocument,
        options: IngestOptions,
        *,
        actor: Actor,
        progress: ProgressCallback | None = None,
        embed_progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Ingest one document for ``actor``; its manifest fills what ``options`` leave
        unset. Raise ``IngestError`` when refused (nothing of it is written then);
        ``progress`` follows the parse, ``embed_progress`` the embedding. Counted
        and timed by format and outcome in ``metrics`` (``metering``). Then the
        document's original (a PDF's file) is kept in ``originals`` for the version
        (``keep_original``; its errors are the ingest's, raised once it is counted)."""
        report = metered(
            self._metrics,
            document,
            lambda observed: self._ingest_one(observed, options, actor, progress, embed_progress),
        )
        if self._originals is not None and (original := document.original) is not None:
            keep_original(self._originals, self._registry, original, report, actor)
        return report

    def _ingest_one(
        self,
        document: IncomingDocument,
        options: IngestOptions,
        actor: Actor,
        progress: ProgressCallback | None,
        embed_progress: ProgressCallback | None,
    ) -> IngestReport:
        prepared = self._prepare(document, options, actor, progress)
        if isinstance(prepared, IngestReport):
            self._embedding.fill_sources([prepared.source_id], embed_progress, actor.tenant)
            return prepared
        return self._commit([prepared], actor, embed_progress)[0]

    def ingest_documents(
        self,
        documents: Sequence[tuple[IncomingDocument, IngestOptions]],
        progress: ProgressCallback | None = None,
        *,
        actor: Actor,
    ) -> list[IngestReport]:
        """Ingest documents in bulk (``ParsedInput`` for parsed ones), all or until one
        is refused. Embedding is batched across all of them (far faster than one at a
        time); each version is still committed in its own transaction. Not counted
        in ``metrics``: there is no one document's duration to record (the BEIR
        evaluation loads its corpus this way).
        """
        reports: list[IngestReport] = []
        pending: list[PreparedVersion] = []
        for document, options in documents:
            prepared = self._prepare(document, options, actor, None)
            if isinstance(prepared, IngestReport):
                reports.append(prepared)
            else:
                pending.append(prepared)
        self._embedding.fill_sources([r.source_id for r in reports], progress, actor.tenant)
        return reports + self._commit(pending, actor, progress)

    def _prepare(
        self,
        document: IncomingDocument,
        options: IngestOptions,
        actor: Actor,
        progress: ProgressCallback | None,
    ) -> PreparedVersion | IngestReport:
        shown = document.shown
        checked = self._checked(options.filled_from(document.metadata), actor, shown)
        # Every parser's text, whatever its format: no control character reaches the index.
        parsed = without_controls(document.parse(progress))
        return self._planner.plan(parsed, checked, actor, document.origin, shown)

    def _checked(self, options: IngestOptions, actor: Actor, shown: str) -> IngestOptions:
        """What is wrong with the request itself, before anything is parsed or written:
        who asks (a librarian or admin of that tenant), the source id's form, tenant
        and group names (named as users' are, else no user could ever read the
        source; a new one like no existing one: ``NameRegister``), and the canonical
        URL through the link policy."""
        try:
            check_name("tenant", options.tenant)
            check_groups(options.acl_groups or ())
        except InvalidValue as exc:
            raise IngestError(shown, "invalid_name", str(exc)) from None
        try:
            if options.source_id is not None:
                check_source_id(options.source_id)
        except InvalidValue as exc:
            raise IngestError(shown, "invalid_source_id", str(exc)) from None
        try:
            if options.year is not None:
                check_int(options.year, low=YEAR_MIN, high=YEAR_MAX, what="the year")
        except InvalidValue as exc:
            raise IngestError(shown, "invalid_year", str(exc)) from None
        try:
            require_librarian(actor)
        except Forbidden as exc:
            raise IngestError(shown, "forbidden", str(exc)) from None
        if options.tenant != actor.tenant:
            raise IngestError(shown, "forbidden", f"you may ingest only into {actor.tenant}")
        try:
            self._names.check_tenant(options.tenant)
            self._names.check_groups(options.tenant, options.acl_groups or ())
        except LookalikeName as exc:
            raise IngestError(shown, "invalid_name", str(exc)) from None
        if options.url is None or self._check_url is None:
            return options
        try:
            return replace(options, url=self._check_url(options.url))
        except InvalidValue as exc:
            raise IngestError(shown, "url_refused", str(exc)) from None

    def _commit(
        self,
        prepared: Sequence[PreparedVersion],
        actor: Actor,
        progress: ProgressCallback | None = None,
    ) -> list[IngestReport]:
        """Embed what is not cached yet, then commit each version atomically.

        A commit whose precondition failed (another writer changed the source, or
        committed the same content, after it was read) is decided again from what
        is stored now: identical content then reports ``unchanged``, so parallel
        ingests of one file end with one source and one version.
        """
        vectors = self._embedding.vectors_for(prepared, progress)
        return [
            self._commit_one(item, item_vectors, actor, progress)
            for item, item_vectors in zip(prepared, vectors, strict=True)
        ]

    def _commit_one(
        self,
        item: PreparedVersion,
        item_vectors: ChunkVectors | None,
        actor: Actor,
        progress: ProgressCallback | None,
    ) -> IngestReport:
        current: PreparedVersion | IngestReport = item
        for _ in range(_COMMIT_ATTEMPTS):
            if isinstance(current, IngestReport):
                self._embedding.fill_sources([current.source_id], progress, actor.tenant)
                return current
            try:
                self._registry.commit_version(
                    current.source,
                    current.version,
                    current.chunks,
                    item_vectors,
                    unique_in=current.unique_in,
                )
            except VersionConflict:
                # The options were checked once; only the decision is taken again.
                current = self._planner.plan(
                    item.document, item.options, actor, item.origin, item.shown
                )
                if isinstance(current, PreparedVersion):
                    (item_vectors,) = self._embedding.vectors_for([current], progress)
                continue
            self._prune(current.source.tenant, current.source.source_id)
            return self._planner.report(
                current.shown,
                current.source,
                current.version.version,
                current.status,
                current.document.warnings,
            )
        raise IngestError(
            item.shown, "busy", "the source kept changing while this file was committed; retry"
        )

    def _prune(self, tenant: str, source_id: str) -> None:
        """Retention: the text of versions past it, and their kept originals with it."""
        if not self._registry.prune(tenant, source_id, self._retain_versions):
            return
        if self._originals is not None:
            versions = self._registry.versions(tenant, source_id)
            self._originals.prune(tenant, source_id, [v.version for v in versions if v.retained])
