"""The manifest: the closed evidence set one generation may cite, frozen as refs E1..En
in selection order and hashed as canonical JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from citadel.domain.search import Evidence


@dataclass(frozen=True, slots=True)
class ContextEvidence:
    """One passage admitted to the closed context, with the fields sent beside it."""

    evidence: Evidence

    @property
    def evidence_id(self) -> str:
        return self.evidence.evidence_id

    @property
    def passage(self) -> str:
        return self.evidence.passage

    def source_fields(self) -> tuple[str, ...]:
        e = self.evidence
        return (e.title, e.author, e.chapter, e.section, e.pages)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """What a ref stands for: exactly one version of one chunk, pinned by its hash."""

    ref: str
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    content_sha256: str


@dataclass(frozen=True, slots=True)
class Manifest:
    """The frozen evidence set one generation may cite, and its hash."""

    entries: tuple[ManifestEntry, ...]
    sha256: str
    evidence: tuple[ContextEvidence, ...] = field(compare=False, repr=False)

    def refs(self) -> frozenset[str]:
        return frozenset(entry.ref for entry in self.entries)

    def entry(self, ref: str) -> ManifestEntry | None:
        for entry in self.entries:
            if entry.ref == ref:
                return entry
        return None

    def evidence_for(self, ref: str) -> Evidence | None:
        for entry, ctx in zip(self.entries, self.evidence, strict=True):
            if entry.ref == ref:
                return ctx.evidence
        return None


@dataclass(frozen=True, slots=True)
class PromptEvidence:
    """The only view of evidence a generator gets: a ref, never an evidence id."""

    ref: str
    passage: str
    title: str
    author: str
    chapter: str
    section: str
    pages: str
    units: str | None = field(default=None, compare=False, repr=False)
    """The passage's quotable units as cut at ingest (``Chunk.units``), or None: read by
    the extractive generator only, never shown to a model."""


def canonical_json(value: object) -> str:
    """One byte-exact JSON form: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def freeze_manifest(context: Sequence[ContextEvidence]) -> Manifest:
    """Assign refs deterministically and hash what each one stands for."""
    entries = tuple(
        ManifestEntry(
            ref=f"E{index}",
            evidence_id=item.evidence.evidence_id,
            source_id=item.evidence.source_id,
            version=item.evidence.version,
            chunk_id=item.evidence.chunk_id,
            content_sha256=item.evidence.content_sha256,
        )
        for index, item in enumerate(context, start=1)
    )
    return Manifest(entries=entries, sha256=manifest_hash(entries), evidence=tuple(context))


def manifest_rows(entries: Sequence[ManifestEntry]) -> tuple[dict[str, object], ...]:
    """The manifest's canonical form, one row per entry in ref order.

    The one place it is written: ``manifest_hash`` hashes these rows and the audit
    record stores them, so a replay that reads them back hashes what was frozen.
    """
    return tuple(
        {
            "ref": e.ref,
            "evidence_id": e.evidence_id,
            "source_id": e.source_id,
            "version": e.version,
            "chunk_id": e.chunk_id,
            "content_sha256": e.content_sha256,
        }
        for e in entries
    )


def manifest_entries(rows: Sequence[dict[str, object]]) -> tuple[ManifestEntry, ...]:
    """Rows in the canonical form back as entries; a malformed row raises ``ValueError``."""
    try:
        return tuple(
            ManifestEntry(
                ref=str(row["ref"]),
                evidence_id=str(row["evidence_id"]),
                source_id=str(row["source_id"]),
                version=int(str(row["version"])),
                chunk_id=str(row["chunk_id"]),
                content_sha256=str(row["content_sha256"]),
            )
            for row in rows
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed manifest row: {exc}") from None


def manifest_hash(entries: Sequence[ManifestEntry]) -> str:
    """sha256 of the canonical rows as canonical JSON (a JSON array)."""
    return sha256_hex(canonical_json(list(manifest_rows(entries))))


def prompt_evidence(manifest: Manifest) -> tuple[PromptEvidence, ...]:
    """The generator's view: refs and passages with display metadata, no evidence ids."""
    return tuple(
        PromptEvidence(
            ref=entry.ref,
            passage=ctx.evidence.passage,
            title=ctx.evidence.title,
            author=ctx.evidence.author,
            chapter=ctx.evidence.chapter,
            section=ctx.evidence.section,
            pages=ctx.evidence.pages,
            units=ctx.evidence.units,
        )
        for entry, ctx in zip(manifest.entries, manifest.evidence, strict=True)
    )
