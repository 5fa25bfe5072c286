"""The audit record of one answer, and the hash chain that makes the log tamper-evident.

Each record is stored as canonical JSON. Its chain hash is
``sha256(previous hash || "\\n" || body)``, starting from ``GENESIS``; the
log also keeps its head (record count and last hash). Editing a record breaks
its own hash; removing one breaks the next record's link; removing the last
ones breaks the head. Someone able to rewrite the whole file and its head
consistently is out of reach of any in-file scheme; ship the head elsewhere
for that.

What a record never holds: secrets, API tokens, signed viewer links (links
are resolved for each reader at display time) and passage text (the manifest
pins each passage by its content hash).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from citadel.domain.manifest import canonical_json
from citadel.domain.model import ManifestEntry

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class CitationAudit:
    """How one citation resolved for the asking reader when the answer was shown."""

    segment: int
    ref: str
    state: str
    authorized: bool


@dataclass(frozen=True, slots=True)
class AuditRecord:
    answer_id: str
    request_id: str
    time: str
    user_id: str
    tenant: str
    manifest_sha256: str
    manifest: tuple[dict[str, object], ...]
    """ref → source, version, chunk and content sha256, in ref order."""
    generator: str
    model: str
    prompt_version: str
    prompt_sha256: str
    raw_sha256: str
    output: str
    """The last candidate's decoded payload as canonical JSON ("" when none came back):
    what `audit replay` re-validates."""
    verdict: str
    """``accepted`` or ``degraded``."""
    reason: str
    detail: str
    citations: tuple[CitationAudit, ...] = field(default=())

    def to_json(self) -> str:
        return canonical_json(
            {
                "answer_id": self.answer_id,
                "request_id": self.request_id,
                "time": self.time,
                "actor": {"user_id": self.user_id, "tenant": self.tenant},
                "manifest": {"sha256": self.manifest_sha256, "entries": list(self.manifest)},
                "generation": {
                    "generator": self.generator,
                    "model": self.model,
                    "prompt_version": self.prompt_version,
                    "prompt_sha256": self.prompt_sha256,
                    "raw_sha256": self.raw_sha256,
                    "output": self.output,
                },
                "verdict": {"outcome": self.verdict, "reason": self.reason, "detail": self.detail},
                "citations": [
                    {
                        "segment": c.segment,
                        "ref": c.ref,
                        "state": c.state,
                        "authorized": c.authorized,
                    }
                    for c in self.citations
                ],
            }
        )

    @classmethod
    def from_json(cls, body: str) -> AuditRecord:
        data = json.loads(body)
        generation, verdict = data["generation"], data["verdict"]
        return cls(
            answer_id=data["answer_id"],
            request_id=data["request_id"],
            time=data["time"],
            user_id=data["actor"]["user_id"],
            tenant=data["actor"]["tenant"],
            manifest_sha256=data["manifest"]["sha256"],
            manifest=tuple(data["manifest"]["entries"]),
            generator=generation["generator"],
            model=generation["model"],
            prompt_version=generation["prompt_version"],
            prompt_sha256=generation["prompt_sha256"],
            raw_sha256=generation["raw_sha256"],
            output=generation["output"],
            verdict=verdict["outcome"],
            reason=verdict["reason"],
            detail=verdict["detail"],
            citations=tuple(
                CitationAudit(c["segment"], c["ref"], c["state"], c["authorized"])
                for c in data["citations"]
            ),
        )


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One stored record and its place in the chain."""

    seq: int
    answer_id: str
    body: str
    prev_hash: str
    hash: str


def chain_hash(prev_hash: str, body: str) -> str:
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ChainReport:
    records: int
    problems: tuple[str, ...]

    @property
    def intact(self) -> bool:
        return not self.problems


def verify_chain(entries: Iterable[AuditEntry], head: tuple[int, str]) -> ChainReport:
    """Every record's hash, every link, the sequence and the head; each problem named."""
    problems: list[str] = []
    previous = GENESIS
    expected_seq = 1
    count = 0
    for entry in entries:
        count += 1
        if entry.seq != expected_seq:
            problems.append(f"records {expected_seq}–{entry.seq - 1} are missing")
        if entry.prev_hash != previous:
            problems.append(f"record {entry.seq} does not follow the record before it")
        if chain_hash(entry.prev_hash, entry.body) != entry.hash:
            problems.append(f"record {entry.seq} ({entry.answer_id}) was altered")
        previous = entry.hash
        expected_seq = entry.seq + 1
    head_count, head_hash = head
    if (head_count, head_hash) != (count, previous if count else GENESIS):
        problems.append(
            f"the log ends at record {expected_seq - 1} but its head records {head_count}:"
            " records were removed from the end, or added outside the log"
        )
    return ChainReport(count, tuple(problems))


def manifest_rows(entries: Sequence[ManifestEntry]) -> tuple[dict[str, object], ...]:
    """The manifest as the audit stores it."""
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
    """The stored manifest back as entries; a malformed row raises ``ValueError``."""
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
