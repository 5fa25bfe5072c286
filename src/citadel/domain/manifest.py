"""Freezing the manifest: refs E1..En in selection order, hashed as canonical JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from citadel.domain.model import ContextEvidence, Manifest, ManifestEntry, PromptEvidence


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


def manifest_hash(entries: Sequence[ManifestEntry]) -> str:
    document = [
        {
            "ref": e.ref,
            "evidence_id": e.evidence_id,
            "source_id": e.source_id,
            "version": e.version,
            "chunk_id": e.chunk_id,
            "content_sha256": e.content_sha256,
        }
        for e in entries
    ]
    return sha256_hex(canonical_json(document))


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
        )
        for entry, ctx in zip(manifest.entries, manifest.evidence, strict=True)
    )
