"""Ingest use case: parse, chunk, and commit a new version atomically (or nothing)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from citadel.app.errors import IngestError, ParseError
from citadel.app.ports import Clock, DocumentParser, ProgressCallback, SourceRegistry
from citadel.domain.chunking import CHUNKER_VERSION, ChunkingPolicy, canonical_text, chunk_blocks
from citadel.domain.source import Source, SourceVersion


@dataclass(frozen=True, slots=True)
class IngestOptions:
    tenant: str = "default"
    source_id: str | None = None
    url: str | None = None
    acl_groups: frozenset[str] = frozenset()
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


class IngestService:
    """Files in, versions out; one file's failure never leaves anything of it behind."""

    def __init__(
        self,
        registry: SourceRegistry,
        parsers: Sequence[DocumentParser],
        clock: Clock,
        *,
        max_file_bytes: int = 512 * 1024 * 1024,
        chunking: ChunkingPolicy | None = None,
    ) -> None:
        self._registry = registry
        self._parsers = tuple(parsers)
        self._clock = clock
        self._max_file_bytes = max_file_bytes
        self._chunking = chunking or ChunkingPolicy()

    def parser_for(self, path: Path) -> DocumentParser:
        for parser in self._parsers:
            if parser.accepts(path):
                return parser
        raise IngestError(str(path), "unsupported", "no parser for this kind of file")

    def ingest(
        self, path: Path, options: IngestOptions, progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Ingest one file or directory-as-book; raise ``IngestError`` when refused."""
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
        parser = self.parser_for(path)
        try:
            document = parser.parse(path, progress)
        except ParseError as exc:
            raise IngestError(shown, exc.reason, str(exc)) from exc
        if not any(block.text.strip() for block in document.blocks):
            raise IngestError(shown, "no_text", "no body text could be extracted")

        content_sha = hashlib.sha256(canonical_text(document.blocks).text.encode()).hexdigest()
        origin = str(path.resolve())
        existing = self._existing(options, content_sha, origin)
        if existing is not None and self._current_hash(existing) == content_sha:
            return self._report(shown, existing, existing.current_version, "unchanged")

        version_no = existing.current_version + 1 if existing else 1
        source_id = existing.source_id if existing else options.source_id or _new_source_id()
        _, chunks = chunk_blocks(document.blocks, source_id, version_no, self._chunking)
        if not chunks:
            raise IngestError(shown, "no_text", "no body text could be extracted")
        source = Source(
            source_id=source_id,
            tenant=options.tenant,
            title=options.title or document.title or path.stem,
            authors=options.authors if options.authors is not None else document.authors,
            year=options.year if options.year is not None else document.year,
            tags=options.tags if options.tags is not None else document.tags,
            acl_groups=options.acl_groups,
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
        self._registry.commit_version(source, version, chunks)
        return self._report(shown, source, version_no, "updated" if existing else "created")

    def _existing(self, options: IngestOptions, content_sha: str, origin: str) -> Source | None:
        if options.source_id:
            found = self._registry.get(options.source_id)
            if found is not None and found.tenant != options.tenant:
                raise IngestError(
                    options.source_id, "conflict", "that source id belongs to another tenant"
                )
            return None if found is None or found.deleted else found
        return self._registry.find(options.tenant, content_sha256=content_sha) or (
            self._registry.find(options.tenant, origin=origin)
        )

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
