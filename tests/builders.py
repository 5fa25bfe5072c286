"""Builders for domain values in tests: short to call, explicit where it matters."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from citadel.app.ports import SourceRegistry
from citadel.domain.chunking import CHUNKER_VERSION, chunk_id
from citadel.domain.document import Chunk
from citadel.domain.search import Evidence
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.users import Actor, Role


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_evidence(
    evidence_id: str = "evidence-1",
    passage: str = "A retry policy caps attempts so transient failures stay bounded.",
    *,
    source_id: str = "src-1",
    version: int = 1,
    chunk_id: str | None = None,
    title: str = "Reliable Service Design",
    author: str = "Example Author",
    chapter: str = "Failure Handling",
    section: str = "Retry Budgets",
    page_start: int | None = 48,
    page_end: int | None = 48,
    page_label_start: str | None = "42",
    page_label_end: str | None = "42",
    score: float = 1.0,
    content_sha256: str | None = None,
) -> Evidence:
    return Evidence(
        evidence_id=evidence_id,
        source_id=source_id,
        version=version,
        chunk_id=chunk_id if chunk_id is not None else f"chunk-of-{evidence_id}",
        title=title,
        author=author,
        chapter=chapter,
        section=section,
        section_path=(chapter, section) if section else (chapter,),
        page_start=page_start,
        page_end=page_end,
        page_label_start=page_label_start,
        page_label_end=page_label_end,
        score=score,
        passage=passage,
        content_sha256=content_sha256 if content_sha256 is not None else sha256_of(passage),
    )


@dataclass(frozen=True, slots=True)
class Passage:
    """One chunk to store: its text and where it sits in the book."""

    text: str
    chapter: str = "Chapter 1"
    section: str = ""
    page: int | None = None
    label: str | None = None
    page_end: int | None = None
    label_end: str | None = None
    units: str | None = None
    """What ingest stores as the chunk's quotable units (opaque to the stores)."""


def make_chunks(
    source_id: str, version: int, passages: Sequence[Passage], *, tenant: str = "default"
) -> list[Chunk]:
    chunks: list[Chunk] = []
    offset = 0
    for ordinal, p in enumerate(passages):
        sha = sha256_of(p.text)
        path = (p.chapter, p.section) if p.section else (p.chapter,)
        chunks.append(
            Chunk(
                chunk_id=chunk_id(source_id, version, ordinal, sha, tenant=tenant),
                source_id=source_id,
                version=version,
                ordinal=ordinal,
                text=p.text,
                sha256=sha,
                section_path=path,
                chapter=p.chapter,
                section=p.section,
                page_start=p.page,
                page_end=p.page_end if p.page_end is not None else p.page,
                page_label_start=p.label,
                page_label_end=p.label_end if p.label_end is not None else p.label,
                char_start=offset,
                char_end=offset + len(p.text),
                units=p.units,
            )
        )
        offset += len(p.text) + 2
    return chunks


def commit(
    registry: SourceRegistry,
    source: Source,
    passages: Sequence[Passage],
    *,
    version: int = 1,
    content_sha256: str | None = None,
    created_at: str = "2026-01-01T00:00:00+00:00",
    unique_in: AccessScope | None = None,
    revision: int | None = None,
) -> tuple[Source, SourceVersion, list[Chunk]]:
    """Commit ``version`` of ``source`` with one chunk per passage; return what was stored.

    The commit is made as a writer who read the source just now (its stored
    ``revision``), unless ``revision`` says what an earlier read saw."""
    chunks = make_chunks(source.source_id, version, passages, tenant=source.tenant)
    if revision is None:
        previous = registry.get(source.tenant, source.source_id)
        revision = previous.revision if previous is not None else 0
    stored = Source(
        source_id=source.source_id,
        tenant=source.tenant,
        title=source.title,
        authors=source.authors,
        year=source.year,
        tags=source.tags,
        acl_groups=source.acl_groups,
        canonical_url=source.canonical_url,
        origin=source.origin,
        current_version=version,
        revision=revision,
    )
    record = SourceVersion(
        source_id=source.source_id,
        version=version,
        content_sha256=content_sha256
        if content_sha256 is not None
        else sha256_of("\n\n".join(p.text for p in passages)),
        parser="test/1",
        chunker=CHUNKER_VERSION,
        page_count=max((p.page or 0 for p in passages), default=0),
        section_count=len({(p.chapter, p.section) for p in passages}),
        chunk_count=len(chunks),
        created_at=created_at,
    )
    registry.commit_version(stored, record, chunks, unique_in=unique_in)
    now = registry.get(source.tenant, source.source_id)
    assert now is not None
    return now, record, chunks


def operator(tenant: str = "default") -> Actor:
    """The local administrator of ``tenant``: who the CLI acts as, and who may ingest."""
    return Actor(user_id="local", tenant=tenant, role=Role.ADMIN)
