"""The JSON shapes every entrypoint prints: the CLI's ``--json`` contract, the HTTP
API's bodies, and what the gRPC tests compare against. Plain dicts, no terminal
text: the human forms live with the CLI (``citadel.entrypoints.cli.text``).
"""

from __future__ import annotations

from typing import Any

from citadel.app.answer_evaluation import AnswerEvaluationReport, AnswerFigures
from citadel.app.evaluation import EvaluationReport
from citadel.app.ingest import IngestReport
from citadel.app.library import SourceDetails
from citadel.app.ports import VectorCoverage
from citadel.app.reindex import ReindexReport
from citadel.app.resolver import ResolvedLink
from citadel.domain.answer import Answerability, AnswerResult, Citation, GenerationRecord
from citadel.domain.conversation import Conversation, Turn
from citadel.domain.document import Chunk
from citadel.domain.search import Evidence, SearchResult
from citadel.domain.source import Source
from citadel.domain.support import Support
from citadel.domain.users import User
from citadel.entrypoints.present.evidence_list import evidence_list
from citadel.entrypoints.present.labels import page_count_or_none


def evidence_json(e: Evidence) -> dict[str, Any]:
    return {
        "evidence_id": e.evidence_id,
        "source_id": e.source_id,
        "version": e.version,
        "chunk_id": e.chunk_id,
        "title": e.title,
        "author": e.author,
        "chapter": e.chapter,
        "section": e.section,
        "section_path": list(e.section_path),
        "page_start": e.page_start,
        "page_end": e.page_end,
        "page_label_start": e.page_label_start,
        "page_label_end": e.page_label_end,
        "score": round(e.score, 4),
        "passage": e.passage,
    }


def search_json(result: SearchResult) -> dict[str, Any]:
    return {"query": result.query, "results": [evidence_json(e) for e in result.results]}


def citation_json(c: Citation) -> dict[str, Any]:
    return {
        "ref": c.ref,
        "evidence_id": c.evidence_id,
        "source_id": c.source_id,
        "version": c.version,
        "title": c.title,
        "chapter": c.chapter,
        "section": c.section,
        "pages": c.pages,
        "link": {"state": c.link_state.value, "href": c.link_href},
        "support": support_json(c.support),
    }


def support_json(support: Support | None) -> dict[str, Any] | None:
    """The application's support check of one citation; ``span`` only for a quotation."""
    if support is None:
        return None
    span = {"start": support.span[0], "end": support.span[1]} if support.span else None
    return {"label": support.label.value, "score": round(support.score, 4), "span": span}


def link_json(link: ResolvedLink) -> dict[str, Any]:
    return {"state": link.state.value, "href": link.href}


def answer_json(result: AnswerResult) -> dict[str, Any]:
    answer = None
    if result.answer is not None:
        answer = {
            "generator": result.answer.generator,
            "limited": result.answer.limited,
            "segments": [
                {
                    "text": s.text,
                    "support": s.label.value if s.label is not None else None,
                    "citations": [citation_json(c) for c in s.citations],
                }
                for s in result.answer.segments
            ],
        }
    degraded = None
    if result.degraded is not None:
        degraded = {"reason": result.degraded.reason.value, "detail": result.degraded.detail}
    return {
        "answer_id": result.answer_id,
        "request_id": result.request_id,
        "query": result.search.query,
        "search": {"results": answer_evidence_json(result)},
        "answer": answer,
        "degraded": degraded,
        "manifest_sha256": result.manifest.sha256 if result.manifest else None,
        "generation": generation_json(result.generation),
        "answerability": answerability_json(result.answerability),
    }


def conversation_json(conversation: Conversation) -> dict[str, Any]:
    """A conversation as listed: its title is its first question."""
    return {
        "conversation_id": conversation.conversation_id,
        "title": conversation.title,
        "created": conversation.created,
    }


def turn_json(turn: Turn) -> dict[str, Any]:
    """A conversation's turn: what was asked, what it searched for and how that was
    built from the conversation, and its answer (``answer_json``)."""
    return {
        "number": turn.number,
        "question": turn.question,
        "query": turn.query,
        "rewrite": turn.rewrite.kind.value,
        "rewritten": turn.rewrite.rewritten,
        "created": turn.created,
        "answer": answer_json(turn.answer),
    }


def answerability_json(decided: Answerability | None) -> dict[str, Any] | None:
    """The decision made before generation; null where no scorer decided."""
    if decided is None:
        return None
    return {
        "score": round(decided.score, 4),
        "threshold": decided.threshold,
        "scorer": decided.scorer,
        "answerable": decided.answerable,
    }


def answer_evidence_json(result: AnswerResult) -> list[dict[str, Any]]:
    """The answer's search results in search order, each as ``evidence_json`` with its
    place in the evidence list: ``number``, whether the answer cites it (``cited``) and
    its footnote number (``footnote``, null when uncited; see ``evidence_list``)."""
    listed = sorted(evidence_list(result), key=lambda p: p.rank)
    return [
        {**evidence_json(p.evidence), "number": p.number, "cited": p.cited, "footnote": p.footnote}
        for p in listed
    ]


def generation_json(record: GenerationRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {
        "generator": record.generator,
        "model": record.model,
        "prompt_version": record.prompt_version,
        "prompt_sha256": record.prompt_sha256 or None,
        "raw_sha256": record.raw_sha256 or None,
        "attempts": record.attempts,
        "cached": record.cached,
        "shared": record.shared,
    }


def ingest_json(report: IngestReport) -> dict[str, Any]:
    return {
        "path": report.path,
        "source_id": report.source_id,
        "version": report.version,
        "status": report.status,
        "title": report.title,
        "pages": page_count_or_none(report.pages),
        "sections": report.sections,
        "chunks": report.chunks,
        "warnings": list(report.warnings),
    }


def source_json(source: Source) -> dict[str, Any]:
    return {
        "source_id": source.source_id,
        "tenant": source.tenant,
        "title": source.title,
        "authors": list(source.authors),
        "year": source.year,
        "tags": list(source.tags),
        "acl_groups": sorted(source.acl_groups),
        "canonical_url": source.canonical_url,
        "origin": source.origin,
        "current_version": source.current_version,
        "deleted": source.deleted,
    }


def user_json(user: User) -> dict[str, Any]:
    """A user as ``users list --json`` prints it; a user carries no token material."""
    return {
        "name": user.name,
        "tenant": user.tenant,
        "role": user.role.value,
        "groups": sorted(user.groups),
        "status": user.status.value,
        "created_at": user.created_at,
    }


def source_details_json(details: SourceDetails) -> dict[str, Any]:
    out = source_json(details.source)
    out["versions"] = [
        {
            "version": v.version,
            "content_sha256": v.content_sha256,
            "parser": v.parser,
            "chunker": v.chunker,
            "pages": page_count_or_none(v.page_count),
            "sections": v.section_count,
            "chunks": v.chunk_count,
            "created_at": v.created_at,
            "retained": v.retained,
        }
        for v in details.versions
    ]
    return out


def chunk_json(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "source_id": chunk.source_id,
        "version": chunk.version,
        "ordinal": chunk.ordinal,
        "section_path": list(chunk.section_path),
        "chapter": chunk.chapter,
        "section": chunk.section,
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
        "page_label_start": chunk.page_label_start,
        "page_label_end": chunk.page_label_end,
        "location": chunk.location,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "sha256": chunk.sha256,
        "text": chunk.text,
    }


def evaluation_json(report: EvaluationReport) -> dict[str, Any]:
    return {
        "documents": report.documents,
        "queries": report.queries,
        "ingest_seconds": round(report.ingest_seconds, 2),
        "ingested": report.created,
        "modes": {
            m.mode: {
                **{k: round(v, 4) for k, v in m.metrics.items() if k != "queries"},
                "latency_ms_p50": round(m.latency_ms_p50, 2),
                "latency_ms_p95": round(m.latency_ms_p95, 2),
            }
            for m in report.modes
        },
    }


def reindex_json(report: ReindexReport) -> dict[str, Any]:
    return {
        "model": report.model,
        "chunks": report.chunks,
        "had_vectors": report.had_vectors,
        "embedded": report.embedded,
        "reused": report.reused,
        "units_stored": report.units_stored,
        "seconds": round(report.seconds, 3),
    }


def coverage_json(model: str | None, coverage: VectorCoverage | None) -> dict[str, Any] | None:
    """The configured model's coverage for ``/readyz``; None when search is lexical only."""
    if model is None or coverage is None:
        return None
    return {"model": model, "chunks": coverage.chunks, "missing": coverage.missing}


def answer_figures_json(f: AnswerFigures) -> dict[str, Any]:
    """One row of ``eval answers``; ``support`` only when citations carry labels."""
    shape: dict[str, Any] = {
        "questions": f.questions,
        "hit@1": round(f.hit_at_1, 4),
        "hit@5": round(f.hit_at_5, 4),
        "mrr@10": round(f.mrr_at_10, 4),
        "answered": f.answered,
        "answers_citing_gold": round(f.answers_citing_gold, 4),
        "citations": f.citations,
        "citations_on_gold": round(f.citations_on_gold, 4),
        "degraded": dict(f.degraded),
        "latency_ms_p50": round(f.latency_ms_p50, 2),
        "latency_ms_p95": round(f.latency_ms_p95, 2),
    }
    if f.support:
        shape["support"] = dict(f.support)
    return shape


def answer_evaluation_json(report: AnswerEvaluationReport) -> dict[str, Any]:
    return {
        "books": report.books,
        "ingested": report.ingested,
        "ingest_seconds": round(report.ingest_seconds, 2),
        "overall": answer_figures_json(report.overall),
        "per_book": {book: answer_figures_json(f) for book, f in report.per_book.items()},
        "questions": [
            {
                "id": o.id,
                "book": o.book,
                "first_hit": o.first_hit,
                "citations": o.citations,
                "on_gold": o.on_gold,
                "degraded": o.degraded,
                "latency_ms": round(o.latency_ms, 2),
                **({"support": list(o.support)} if o.support else {}),
                **(
                    {"answerability": round(o.answerability.score, 4)}
                    if o.answerability is not None
                    else {}
                ),
            }
            for o in report.outcomes
        ],
    }
