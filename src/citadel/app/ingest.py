"""Ingest use case: parse, chunk, and commit a new version atomically (or nothing)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from citadel.app.errors import Forbidden, IngestError, NotFound, ParseError, VersionConflict
from citadel.app.library import require_librarian, writable
from citadel.app.ports import (
    ChunkVectors,
    Clock,
    DocumentParser,
    Embedder,
    ProgressCallback,
    SourceRegistry,
    VectorIndex,
    Vectors,
)
from citadel.app.reindex import ReindexService
from citadel.domain.chunking import (
    CHUNKER_VERSION,
    ChunkingPolicy,
    canonical_text,
    chunk_blocks,
    embedding_key,
    embedding_text,
)
from citadel.domain.document import Chunk, ParsedDocument
from citadel.domain.errors import InvalidValue
from citadel.domain.source import AccessScope, Source, SourceVersion, check_source_id
from citadel.domain.users import Actor, check_groups, check_name


@dataclass(frozen=True, slots=True)
class IngestOptions:
    tenant: str = "default"
    source_id: str | None = None
    url: str | None = None
    acl_groups: frozenset[str] | None = None
    """Who may read the source; ``None`` keeps a stored source's ACL (a new one is
    open to its whole tenant), an empty set opens it explicitly."""
    title: str | None = None
    authors: tuple[str, ...] | None = None
    year: int | None = None
    tags: tuple[str, ...] | None = None


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


_COMMIT_ATTEMPTS = 5
"""Decide-and-commit rounds when other writers keep winning the race for a source."""


class IngestService:
    """Files in, versions out; one file's failure never leaves anything of it behind.

    Each version goes through prepare (parse, chunk, decide the version),
    embed (only text whose vector is not cached yet) and commit (chunks and
    vectors in one transaction). An unchanged file commits nothing, but its
    current chunks still get any vector the configured model lacks (they were
    embedded under another model, or before there was an embedder): else
    dense search would stay blind to them however often the file is ingested.
    """

    def __init__(
        self,
        registry: SourceRegistry,
        parsers: Sequence[DocumentParser],
        clock: Clock,
        *,
        embedder: Embedder | None = None,
        vectors: VectorIndex | None = None,
        max_file_bytes: int = 512 * 1024 * 1024,
        chunking: ChunkingPolicy | None = None,
        retain_versions: int = 5,
        check_url: Callable[[str], str] | None = None,
    ) -> None:
        if (embedder is None) != (vectors is None):
            raise ValueError("an embedder needs a vector index, and the reverse")
        self._registry = registry
        self._parsers = tuple(parsers)
        self._clock = clock
        self._embedder = embedder
        self._vectors = vectors
        self._reindex = ReindexService(vectors, embedder) if vectors is not None else None
        self._max_file_bytes = max_file_bytes
        self._chunking = chunking or ChunkingPolicy()
        self._retain_versions = retain_versions
        self._check_url = check_url

    def parser_for(self, path: Path) -> DocumentParser:
        for parser in self._parsers:
            if parser.accepts(path):
                return parser
        raise IngestError(str(path), "unsupported", "no parser for this kind of file")

    def ingest(
        self,
        path: Path,
        options: IngestOptions,
        *,
        actor: Actor,
        progress: ProgressCallback | None = None,
        embed_progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Ingest one file or directory-as-book for ``actor``; raise ``IngestError``
        when refused (nothing of the file is written then)."""
        shown = str(path)
        if not path.exists():
            raise IngestError(shown, "not_found", "no such file or directory")
        if path.is_file():
            size = path.stat().st_size
            if size == 0:
                raise IngestError(shown, "empty", "the file is empty")
            if size > self._max_file_bytes:
                raise IngestError(
                    shown, "too_large", f"{size} bytes is over the {self._max_file_bytes} limit"
                )
        options = self._checked(_with_sidecar(path, options), actor, shown)
        parser = self.parser_for(path)
        try:
            document = parser.parse(path, progress)
        except ParseError as exc:
            raise IngestError(shown, exc.reason, str(exc)) from exc
        prepared = self._prepare(document, options, actor, origin=str(path.resolve()), shown=shown)
        if isinstance(prepared, IngestReport):
            self._fill_vectors([prepared.source_id], embed_progress)
            return prepared
        return self.commit([prepared], actor, embed_progress)[0]

    def ingest_documents(
        self,
        documents: Sequence[tuple[ParsedDocument, IngestOptions, str]],
        progress: ProgressCallback | None = None,
        *,
        actor: Actor,
    ) -> list[IngestReport]:
        """Ingest already-parsed documents ``(document, options, origin)`` in bulk.

        Embedding is batched across all of them (far faster than one at a
        time); each version is still committed in its own transaction.
        """
        reports: list[IngestReport] = []
        pending: list[PreparedVersion] = []
        for document, options, origin in documents:
            prepared = self.prepare(document, options, actor, origin=origin, shown=origin)
            if isinstance(prepared, IngestReport):
                reports.append(prepared)
            else:
                pending.append(prepared)
        self._fill_vectors([r.source_id for r in reports], progress)
        return reports + self.commit(pending, actor, progress)

    def _fill_vectors(self, source_ids: Sequence[str], progress: ProgressCallback | None) -> None:
        """Embed what these unchanged sources' current chunks lack under the configured model."""
        if self._reindex is not None and source_ids:
            self._reindex.fill_sources(source_ids, progress)

    def _checked(self, options: IngestOptions, actor: Actor, shown: str) -> IngestOptions:
        """What is wrong with the request itself, before anything is read or written:
        who asks (a librarian or admin of that tenant), the source id's form, tenant
        and group names (named as users' are, else no user could ever read the
        source), and the canonical URL through the link policy."""
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
            require_librarian(actor)
        except Forbidden as exc:
            raise IngestError(shown, "forbidden", str(exc)) from None
        if options.tenant != actor.tenant:
            raise IngestError(shown, "forbidden", f"you may ingest only into {actor.tenant}")
        if options.url is None or self._check_url is None:
            return options
        try:
            return replace(options, url=self._check_url(options.url))
        except InvalidValue as exc:
            raise IngestError(shown, "url_refused", str(exc)) from None

    def prepare(
        self,
        document: ParsedDocument,
        options: IngestOptions,
        actor: Actor,
        *,
        origin: str,
        shown: str,
    ) -> PreparedVersion | IngestReport:
        """Chunk a parsed document as the next version of its source, or report a no-op."""
        return self._prepare(document, self._checked(options, actor, shown), actor, origin, shown)

    def _prepare(
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
            if existing.origin != origin:
                # Same content at a new place: the file moved; remember where it is now.
                changed = replace(changed, origin=origin)
            if options.acl_groups is not None and options.acl_groups != existing.acl_groups:
                # Said explicitly, so it applies though the text is the same.
                changed = replace(changed, acl_groups=options.acl_groups)
            if changed != existing:
                self._registry.update(changed)
            return self._report(shown, changed, changed.current_version, "unchanged")

        version_no = existing.current_version + 1 if existing else 1
        source_id = existing.source_id if existing else options.source_id or _new_source_id()
        _, chunks = chunk_blocks(document.blocks, source_id, version_no, self._chunking)
        if not chunks:
            raise IngestError(shown, "no_text", "no body text could be extracted")
        if options.acl_groups is not None:
            acl = options.acl_groups
        else:
            # A new version never widens (or narrows) who may read the source.
            acl = existing.acl_groups if existing else frozenset()
        source = Source(
            source_id=source_id,
            tenant=options.tenant,
            title=options.title or document.title or Path(origin).stem,
            authors=options.authors if options.authors is not None else document.authors,
            year=options.year if options.year is not None else document.year,
            tags=options.tags if options.tags is not None else document.tags,
            acl_groups=acl,
            canonical_url=options.url,
            origin=origin,
            current_version=version_no,
        )
        if existing is not None and options.url is None:
            source = replace(source, canonical_url=existing.canonical_url)
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

    def commit(
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
        vectors = self._embed(prepared, progress)
        reports: list[IngestReport] = []
        for item, item_vectors in zip(prepared, vectors, strict=True):
            reports.append(self._commit_one(item, item_vectors, actor, progress))
        return reports

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
                self._fill_vectors([current.source_id], progress)
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
                current = self._prepare(item.document, item.options, actor, item.origin, item.shown)
                if isinstance(current, PreparedVersion):
                    (item_vectors,) = self._embed([current], progress)
                continue
            self._registry.prune(current.source.source_id, self._retain_versions)
            return self._report(
                current.shown, current.source, current.version.version, current.status
            )
        raise IngestError(
            item.shown, "busy", "the source kept changing while this file was committed; retry"
        )

    def _embed(
        self, prepared: Sequence[PreparedVersion], progress: ProgressCallback | None
    ) -> list[ChunkVectors | None]:
        if self._embedder is None or self._vectors is None:
            return [None] * len(prepared)
        model = self._embedder.name
        texts = [
            [embedding_text(p.source.title, c.section_path, c.text) for c in p.chunks]
            for p in prepared
        ]
        keys = [[embedding_key(text) for text in group] for group in texts]
        known = self._vectors.cached_vectors([k for group in keys for k in group], model)
        missing: dict[str, str] = {}
        for group_keys, group_texts in zip(keys, texts, strict=True):
            for key, text in zip(group_keys, group_texts, strict=True):
                if key not in known:
                    missing.setdefault(key, text)
        if missing:
            fresh = self._embed_texts(list(missing.values()), progress)
            known.update(zip(missing, fresh, strict=True))
        dimension = self._embedder.dimension
        out: list[ChunkVectors | None] = []
        for group_keys in keys:
            matrix = np.zeros((len(group_keys), dimension), dtype=np.float32)
            for row, key in enumerate(group_keys):
                matrix[row] = known[key]
            out.append(ChunkVectors(model=model, keys=tuple(group_keys), matrix=matrix))
        return out

    def _embed_texts(self, texts: list[str], progress: ProgressCallback | None) -> Vectors:
        assert self._embedder is not None
        step = 256
        parts: list[Vectors] = []
        for start in range(0, len(texts), step):
            parts.append(self._embedder.embed(texts[start : start + step]))
            if progress:
                progress(min(start + step, len(texts)), len(texts))
        return (
            np.concatenate(parts) if parts else np.zeros((0, self._embedder.dimension), np.float32)
        )

    def _existing(
        self, options: IngestOptions, actor: Actor, content_sha: str, origin: str, shown: str
    ) -> Source | None:
        """The stored source this file is a version of, if any, and only if ``actor``
        may write it (the rule of ``sources acl``).

        A named id of another tenant's source, of a deleted one (its tombstone keeps
        old citations resolving as "deleted") or of one this actor may not read gets
        one refusal that does not say which. Matching content or origin counts only
        among sources the actor may write: others are, to it, not there.
        """
        if options.source_id:
            found = self._registry.get(options.source_id)
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
        for version in self._registry.versions(source.source_id):
            if version.version == source.current_version:
                return version.content_sha256
        return ""

    def _report(self, path: str, source: Source, version_no: int, status: str) -> IngestReport:
        counts = next(
            (v for v in self._registry.versions(source.source_id) if v.version == version_no),
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
        )


def _new_source_id() -> str:
    # Random, not derived from content: the same text may be a distinct source
    # in another tenant, or re-ingested after a delete left a tombstone.
    return "s" + uuid.uuid4().hex[:15]


SIDECAR_SUFFIX = ".citadel.json"
_SIDECAR_FIELDS = frozenset({"source_id", "url", "title", "authors", "year", "tags", "acl"})


def sidecar_path(path: Path) -> Path:
    """``book.pdf`` → ``book.pdf.citadel.json``; for a directory, ``DIR/citadel.json``."""
    return path / "citadel.json" if path.is_dir() else path.with_name(path.name + SIDECAR_SUFFIX)


def _with_sidecar(path: Path, options: IngestOptions) -> IngestOptions:
    """Fill options the caller left unset from a trusted sidecar manifest beside the file.

    The sidecar is written by whoever curates the library; it is the only place
    besides ``--url`` that a canonical URL may come from (never the document text).
    """
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return options
    shown = str(sidecar)
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IngestError(
            shown, "bad_sidecar", f"the sidecar manifest is not valid JSON: {exc}"
        ) from exc
    if not isinstance(data, dict) or set(data) - _SIDECAR_FIELDS:
        raise IngestError(
            shown, "bad_sidecar", f"a sidecar holds an object with only: {sorted(_SIDECAR_FIELDS)}"
        )

    def text(key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise IngestError(shown, "bad_sidecar", f"{key} must be a non-empty string")
        return value.strip()

    def names(key: str) -> tuple[str, ...] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise IngestError(shown, "bad_sidecar", f"{key} must be a list of strings")
        return tuple(v.strip() for v in value if v.strip())

    year = data.get("year")
    if year is not None and (not isinstance(year, int) or isinstance(year, bool)):
        raise IngestError(shown, "bad_sidecar", "year must be an integer")
    acl = names("acl")
    sidecar_acl = frozenset(acl) if acl is not None else None
    return replace(
        options,
        source_id=options.source_id or text("source_id"),
        url=options.url or text("url"),
        title=options.title or text("title"),
        authors=options.authors if options.authors is not None else names("authors"),
        year=options.year if options.year is not None else year,
        tags=options.tags if options.tags is not None else names("tags"),
        acl_groups=options.acl_groups if options.acl_groups is not None else sidecar_acl,
    )
