"""Builders for conversations and their turns in tests: a whole recorded answer each."""

from __future__ import annotations

from dataclasses import replace

from citadel.domain.answer import (
    AnswerResult,
    AnswerSegment,
    Degraded,
    DegradedReason,
    GenerationRecord,
    GroundedAnswer,
    attribute,
)
from citadel.domain.conversation import Conversation, Turn
from citadel.domain.manifest import ContextEvidence, freeze_manifest
from citadel.domain.rewrite import QueryRewrite, RewriteKind
from citadel.domain.search import SearchResult
from tests.builders import make_evidence


def conversation(
    conversation_id: str = "c1",
    *,
    owner: str = "ada",
    tenant: str = "acme",
    created: str = "2026-01-01T00:00:00+00:00",
    title: str = "What is a retry budget?",
) -> Conversation:
    return Conversation(conversation_id, owner, tenant, title, created)


def answered(answer_id: str, query: str = "retry budget") -> AnswerResult:
    """An accepted answer citing one passage, beside a second uncited one."""
    cited = make_evidence("ev-1", source_id="src-1")
    other = make_evidence(
        "ev-2", "Backoff spaces attempts out.", source_id="src-2", page_start=None
    )
    manifest = freeze_manifest((ContextEvidence(cited),))
    segments = attribute((AnswerSegment("A retry budget caps attempts.", ("E1",)),), manifest)
    return AnswerResult(
        answer_id=answer_id,
        request_id=f"req-{answer_id}",
        search=SearchResult(query, (cited, other)),
        answer=GroundedAnswer("extractive", segments),
        degraded=None,
        manifest=manifest,
        generation=GenerationRecord("extractive", "m", "p/1", "a" * 64, "b" * 64, attempts=1),
    )


def degraded(answer_id: str, query: str = "nothing") -> AnswerResult:
    return AnswerResult(
        answer_id=answer_id,
        request_id=f"req-{answer_id}",
        search=SearchResult(query),
        answer=None,
        degraded=Degraded(DegradedReason.NO_EVIDENCE, "no passage met the evidence criteria"),
    )


def turn(
    number: int = 1,
    *,
    conversation_id: str = "c1",
    answer_id: str | None = None,
    question: str = "What is a retry budget?",
    query: str | None = None,
    accepted: bool = True,
) -> Turn:
    kind = RewriteKind.NONE if query is None else RewriteKind.DETERMINISTIC
    rewrite = QueryRewrite(question, query or question, kind)
    aid = answer_id or f"a{number}-{conversation_id}"
    result = answered(aid, rewrite.query) if accepted else degraded(aid, rewrite.query)
    created = f"2026-01-01T00:00:{number:02d}+00:00"
    return Turn(conversation_id, number, rewrite, replace(result, rewrite=rewrite), created)
