"""The audit record of one answer: what was asked, the manifest, the verdict and the
citations as resolved for the reader, as canonical JSON.

What a record never holds: secrets, API tokens, signed viewer links (links
are resolved for each reader at display time) and passage text (the manifest
pins each passage by its content hash). The keyed chain that makes the log
tamper-evident is ``citadel.domain.audit_chain``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from citadel.domain.answer import AnswerResult, LinkState
from citadel.domain.manifest import canonical_json, manifest_rows
from citadel.domain.users import Actor


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
