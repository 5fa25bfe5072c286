"""The audit record of one answer: what was asked, the manifest, the answerability
decision, the verdict and the citations as resolved for the reader, as canonical JSON.

What a record never holds: secrets, API tokens, signed viewer links (links
are resolved for each reader at display time) and passage text (the manifest
pins each passage by its content hash). The keyed chain that makes the log
tamper-evident is ``citadel.domain.audit_chain``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from citadel.domain.answer import Answerability, AnswerResult, JudgedCitation, LinkState
from citadel.domain.manifest import canonical_json, manifest_rows
from citadel.domain.rewrite import QueryRewrite, RewriteKind
from citadel.domain.support import JudgeVerdict, SupportLabel
from citadel.domain.users import Actor


@dataclass(frozen=True, slots=True)
class CitationAudit:
    """How one citation resolved for the asking reader when the answer was shown."""

    segment: int
    ref: str
    state: str
    authorized: bool
    support: str = ""
    """The support label as shown ("" where no check ran, and in records made before)."""
    score: float | None = None
    span: tuple[int, int] | None = None
    """For a quotation, where it lies in the cited passage."""

    def support_json(self) -> dict[str, object] | None:
        if not self.support:
            return None
        span = list(self.span) if self.span is not None else None
        return {"label": self.support, "score": self.score, "span": span}


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
    support_checker: str = ""
    support_policy: str = ""
    limited: bool = False
    """Segments were removed because no citation supported them (policy ``drop``)."""
    answerability: Answerability | None = None
    """The answerability decision made before generation: score, threshold and scorer
    (``None`` where no scorer decided, and in records made before the decision)."""
    judged: tuple[JudgedCitation, ...] = ()
    """The span-support judge's verdicts on the candidate's citations, dropped ones too
    (by segment of ``output``), each with its model: what replay applies again."""
    rewrite: QueryRewrite | None = None
    """A conversation turn's question as asked, the query searched and how it was
    rewritten (``None`` for a question asked on its own: other records keep their bytes)."""

    def to_json(self) -> str:
        support: dict[str, object] = {
            "checker": self.support_checker,
            "policy": self.support_policy,
            "limited": self.limited,
        }
        if self.judged:  # only where a judge ruled: other records keep their bytes
            support["judge"] = [_judged_json(j) for j in self.judged]
        extra: dict[str, object] = {}
        if self.rewrite is not None:
            extra["rewrite"] = _rewrite_json(self.rewrite)
        return canonical_json(
            {
                **extra,
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
                "support": support,
                "answerability": _answerability_json(self.answerability),
                "citations": [
                    {
                        "segment": c.segment,
                        "ref": c.ref,
                        "state": c.state,
                        "authorized": c.authorized,
                        "support": c.support_json(),
                    }
                    for c in self.citations
                ],
            }
        )

    @classmethod
    def from_json(cls, body: str) -> AuditRecord:
        data = json.loads(body)
        generation, verdict = data["generation"], data["verdict"]
        # Records made before the support check have no "support" keys, and records made
        # before the answerability decision no "answerability" key.
        support = data.get("support") or {}
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
            citations=tuple(_citation_from_json(c) for c in data["citations"]),
            support_checker=support.get("checker", ""),
            support_policy=support.get("policy", ""),
            limited=bool(support.get("limited", False)),
            answerability=_answerability_from_json(data.get("answerability")),
            judged=tuple(_judged_from_json(j) for j in support.get("judge", ())),
            rewrite=_rewrite_from_json(data.get("rewrite")),
        )


def _rewrite_json(rewrite: QueryRewrite) -> dict[str, object]:
    return {"question": rewrite.question, "query": rewrite.query, "kind": rewrite.kind.value}


def _rewrite_from_json(value: object) -> QueryRewrite | None:
    if not isinstance(value, dict):
        return None
    return QueryRewrite(str(value["question"]), str(value["query"]), RewriteKind(value["kind"]))


def _judged_json(judged: JudgedCitation) -> dict[str, object]:
    verdict = judged.verdict
    return {
        "segment": judged.segment,
        "ref": judged.ref,
        "model": verdict.model,
        "label": verdict.label.value,
    }


def _judged_from_json(value: dict[str, object]) -> JudgedCitation:
    verdict = JudgeVerdict(str(value["model"]), SupportLabel(str(value["label"])))
    return JudgedCitation(int(value["segment"]), str(value["ref"]), verdict)  # type: ignore[call-overload]


def _answerability_json(decided: Answerability | None) -> dict[str, object] | None:
    if decided is None:
        return None
    return {"score": decided.score, "threshold": decided.threshold, "scorer": decided.scorer}


def _answerability_from_json(value: object) -> Answerability | None:
    if not isinstance(value, dict):
        return None
    return Answerability(float(value["score"]), float(value["threshold"]), str(value["scorer"]))


def _citation_from_json(c: dict[str, object]) -> CitationAudit:
    support = c.get("support")
    citation = CitationAudit(
        int(c["segment"]),  # type: ignore[call-overload]
        str(c["ref"]),
        str(c["state"]),
        bool(c["authorized"]),
    )
    if not isinstance(support, dict):
        return citation
    span = support.get("span")
    return replace(
        citation,
        support=str(support["label"]),
        score=float(support["score"]),
        span=(int(span[0]), int(span[1])) if isinstance(span, list) else None,
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
        support_checker=generation.support_checker if generation else "",
        support_policy=generation.support_policy if generation else "",
        limited=result.answer.limited if result.answer else False,
        answerability=result.answerability,
        judged=generation.judged if generation else (),
        rewrite=result.rewrite,
        citations=tuple(
            CitationAudit(
                segment=index,
                ref=citation.ref,
                state=citation.link_state.value,
                authorized=citation.link_state is not LinkState.FORBIDDEN,
                support=citation.support.label.value if citation.support else "",
                score=citation.support.score if citation.support else None,
                span=citation.support.span if citation.support else None,
            )
            for index, segment in enumerate(result.answer.segments if result.answer else ())
            for citation in segment.citations
        ),
    )
