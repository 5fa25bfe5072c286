"""The audit record of one answer, and the hash chain that makes the log tamper-evident.

Each record is stored as canonical JSON. Its chain hash is
``sha256(previous hash || "\\n" || body)``, starting from ``GENESIS``; the
log also keeps its head (record count and last hash). Editing a record breaks
its own hash; removing one breaks the next record's link; removing the last
ones breaks the head. Every stored column is vouched for, and verification
checks each one (``expected_entry``): the body and link by the hash, the
answer id by the body (which names it), the sequence number by the record
before, the hash by the next link and the head. Someone able to rewrite the whole file and its head
consistently is out of reach of any in-file scheme; ship the head elsewhere
for that.

What a record never holds: secrets, API tokens, signed viewer links (links
are resolved for each reader at display time) and passage text (the manifest
pins each passage by its content hash).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from citadel.domain.answer import AnswerResult, LinkState
from citadel.domain.manifest import canonical_json, manifest_rows
from citadel.domain.users import Actor

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


def answer_record(result: AnswerResult, actor: Actor, time: str) -> AuditRecord:
    """The record of ``result`` as shown to ``actor`` at ``time``: its citations as they
    resolved for that reader (resolve before recording), the manifest in its canonical
    rows, the generation and the verdict."""
    generation = result.generation
    manifest = result.manifest
    return AuditRecord(
        answer_id=result.answer_id,
        request_id=result.request_id,
        time=time,
        user_id=actor.user_id,
        tenant=actor.tenant,
        manifest_sha256=manifest.sha256 if manifest else "",
        manifest=manifest_rows(manifest.entries) if manifest else (),
        generator=generation.generator if generation else "",
        model=generation.model if generation else "",
        prompt_version=generation.prompt_version if generation else "",
        prompt_sha256=generation.prompt_sha256 if generation else "",
        raw_sha256=generation.raw_sha256 if generation else "",
        output=generation.output if generation else "",
        verdict="accepted" if result.answer is not None else "degraded",
        reason=result.degraded.reason.value if result.degraded else "",
        detail=result.degraded.detail if result.degraded else "",
        citations=tuple(
            CitationAudit(
                segment=index,
                ref=citation.ref,
                state=citation.link_state.value,
                authorized=citation.link_state is not LinkState.FORBIDDEN,
            )
            for index, segment in enumerate(result.answer.segments if result.answer else ())
            for citation in segment.citations
        ),
    )


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One stored record and its place in the chain.

    Every field is a stored column, and every one is vouched for by the chain
    (see ``expected_entry``): ``body`` and ``prev_hash`` by ``hash``;
    ``answer_id`` by the body, which names its answer; ``seq`` by the record's
    position in the chain; ``hash`` by the next record's link and the head.
    """

    seq: int
    answer_id: str
    body: str
    prev_hash: str
    hash: str


def chain_hash(prev_hash: str, body: str) -> str:
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


def body_answer_id(body: object) -> str | None:
    """The answer a stored body says it records; ``None`` when it names none."""
    if not isinstance(body, str):
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    answer_id = data.get("answer_id") if isinstance(data, dict) else None
    return answer_id if isinstance(answer_id, str) else None


def expected_entry(previous: AuditEntry | None, stored: AuditEntry) -> AuditEntry:
    """What the record after ``previous`` (``None``: the first) must hold in every
    column, given the body stored there.

    The body is the one value taken from storage, and the hash is what vouches
    for it; every other column is derived from the chain: the sequence number
    follows the record before, the link is that record's hash, the answer id is
    the one the body names. ``verify_chain`` compares every field of the stored
    entry with this one, so a column added to ``AuditEntry`` has to be derived
    here too.
    """
    return AuditEntry(
        seq=previous.seq + 1 if previous else 1,
        answer_id=body_answer_id(stored.body) or "",
        body=stored.body,
        prev_hash=previous.hash if previous else GENESIS,
        hash=chain_hash(stored.prev_hash, stored.body),
    )


class MalformedHead(ValueError):
    """The log's stored head cannot be read as ``count:hash``."""


_HEAD = re.compile(r"(0|[1-9][0-9]{0,17}):([0-9a-f]{64})")


def format_head(count: int, digest: str) -> str:
    return f"{count}:{digest}"


def parse_head(value: object) -> tuple[int, str]:
    """A stored head back as (record count, last hash); ``MalformedHead`` otherwise."""
    if not isinstance(value, str):
        raise MalformedHead(f"the log's head is stored as {type(value).__name__}, not text")
    match = _HEAD.fullmatch(value)
    if match is None:
        raise MalformedHead(
            "the log's head is malformed (it must be the record count, ':' and a sha256)"
        )
    return int(match[1]), match[2]


@dataclass(frozen=True, slots=True)
class ChainReport:
    records: int
    problems: tuple[str, ...]

    @property
    def intact(self) -> bool:
        return not self.problems


def verify_chain(
    entries: Iterable[AuditEntry], head: tuple[int, str] | MalformedHead
) -> ChainReport:
    """Every column of every record against what the chain vouches for, then the head;
    each problem named. ``head`` is the stored head, or why it could not be read."""
    problems: list[str] = []
    previous: AuditEntry | None = None
    count = 0
    for entry in entries:
        count += 1
        expected = expected_entry(previous, entry)
        for column in fields(AuditEntry):
            wrong = getattr(entry, column.name) != getattr(expected, column.name)
            if column.name == "answer_id" and body_answer_id(entry.body) is None:
                wrong = True  # a body that names no answer vouches for no answer_id
            if wrong:
                problems.append(_difference(column.name, entry, expected))
        previous = entry
    problems.extend(_head_problems(head, count, previous.hash if previous else GENESIS))
    return ChainReport(count, tuple(problems))


def _difference(column: str, entry: AuditEntry, expected: AuditEntry) -> str:
    """The problem of one stored column that is not what the chain vouches for."""
    named = f"record {entry.seq} ({_shown(entry.answer_id)})"
    if column == "seq":
        if entry.seq > expected.seq:
            return f"records {expected.seq}–{entry.seq - 1} are missing"
        return f"{named} is out of sequence: record {expected.seq} was expected here"
    if column == "answer_id":
        said = body_answer_id(entry.body)
        if said is None:
            return f"{named} has a body that names no answer: the record was altered"
        return (
            f"{named} is filed under another answer id than its body's, {_shown(said)}:"
            " the record was altered"
        )
    if column == "prev_hash":
        return f"record {entry.seq} does not follow the record before it"
    return f"{named} was altered"


def _head_problems(head: tuple[int, str] | MalformedHead, count: int, last: str) -> list[str]:
    if isinstance(head, MalformedHead):
        return [f"{head}: the end of the log cannot be checked"]
    head_count, head_hash = head
    if head_count > count:
        return [
            f"the log's head records {head_count} records but the log holds {count}:"
            " records were removed, or the head was rewritten"
        ]
    if head_count < count:
        return [
            f"the log holds {count} records but its head records {head_count}:"
            " records were added outside the log, or the head was rewritten"
        ]
    if head_hash != (last if count else GENESIS):
        return [
            f"the log's head does not hold the hash of its last record ({count}):"
            " the last record was replaced, or the head was rewritten"
        ]
    return []


_PLAIN = re.compile(r"[A-Za-z0-9_.:-]{1,80}")


def _shown(value: str) -> str:
    """A stored value as a problem may quote it: plain ids as they are, anything
    else escaped (no control or bidi characters reach a terminal) and shortened."""
    if _PLAIN.fullmatch(value):
        return value
    text = ascii(value)
    return text if len(text) <= 80 else text[:77] + "..."
