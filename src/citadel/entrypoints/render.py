"""Serialising results: the ``--json`` contract and the human footnote form."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from citadel.app.evaluation import EvaluationReport
from citadel.app.ingest import IngestReport
from citadel.app.library import SourceDetails
from citadel.app.resolver import ResolvedLink
from citadel.domain.answer import AnswerResult, Citation, GenerationRecord, LinkState
from citadel.domain.audit import AuditRecord
from citadel.domain.document import Chunk
from citadel.domain.search import Evidence, SearchResult
from citadel.domain.source import Source
from citadel.domain.users import User

# "7 Reading data", "Chapter 5. Data Definition", "B Invoking R" — but not "A sample session".
_NUMBERED = re.compile(
    r"^(?:[Cc]hapter\s+|[Aa]ppendix\s+)?(\d+(?:\.\d+)*|[A-Z](?:\.\d+)*(?=[.:]?\s+[A-Z0-9]))"
    r"[.:]?\s+(.+)$"
)


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
    }


def link_json(link: ResolvedLink) -> dict[str, Any]:
    return {"state": link.state.value, "href": link.href}


def answer_json(result: AnswerResult) -> dict[str, Any]:
    answer = None
    if result.answer is not None:
        answer = {
            "generator": result.answer.generator,
            "segments": [
                {"text": s.text, "citations": [citation_json(c) for c in s.citations]}
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
        "search": {"results": [evidence_json(e) for e in result.search.results]},
        "answer": answer,
        "degraded": degraded,
        "manifest_sha256": result.manifest.sha256 if result.manifest else None,
        "generation": generation_json(result.generation),
    }


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
        "pages": report.pages,
        "sections": report.sections,
        "chunks": report.chunks,
    }


def chapter_label(chapter: str) -> str:
    """``7 Reading data from files`` → ``ch. 7 "Reading data from files"``."""
    if not chapter:
        return ""
    match = _NUMBERED.match(chapter)
    if match:
        return f'ch. {match.group(1)} "{match.group(2)}"'
    return f'"{chapter}"'


def pages_label(pages: str) -> str:
    if not pages:
        return ""
    return f"pp. {pages}" if "–" in pages else f"p. {pages}"


def footnote(number: int, citation: Citation) -> str:
    """``[1] An Introduction to R, ch. 7 "Reading data from files", § ..., p. 32``."""
    parts = [citation.title]
    if citation.chapter:
        parts.append(chapter_label(citation.chapter))
    if citation.section and citation.section != citation.chapter:
        parts.append(f'§ "{citation.section}"')
    if citation.pages:
        parts.append(pages_label(citation.pages))
    return f"[{number}] " + ", ".join(parts)


def answer_text(result: AnswerResult) -> str:
    """The human form: answer prose with numbered footnotes, or passages when degraded."""
    lines: list[str] = []
    if result.answer is not None:
        numbers: dict[str, int] = {}
        notes: list[str] = []
        for segment in result.answer.segments:
            marks = []
            for citation in segment.citations:
                # Forbidden citations carry no ids: each gets its own bare note.
                key = citation.evidence_id or f"forbidden-{citation.ref}"
                if key not in numbers:
                    numbers[key] = len(numbers) + 1
                    notes.append(footnote(numbers[key], citation) + link_note(citation))
                marks.append(f"[{numbers[key]}]")
            lines.append(f"{segment.text} {''.join(marks)}")
        lines.append("")
        lines.extend(notes)
    else:
        assert result.degraded is not None
        lines.append(
            f"No generated answer ({result.degraded.reason.value}): {result.degraded.detail}"
        )
        lines.append("Search results:")
        lines.extend(search_lines(result.search, limit=5))
    return "\n".join(lines)


_LINK_NOTES = {
    LinkState.UNAVAILABLE: " (no link)",
    LinkState.FORBIDDEN: "",
    LinkState.DELETED: " (deleted since this answer)",
}


def link_note(citation: Citation) -> str:
    """Where the footnote leads, for a terminal: a canonical URL, or why there is none.

    Viewer links are routes of `citadel serve`, signed for minutes; the terminal
    leaves them to `--json` and the web UI rather than print tokens nobody can open.
    """
    if citation.link_state is LinkState.FORBIDDEN:
        return "you may not see this source"
    if citation.link_state is LinkState.SUPERSEDED:
        return " (source changed since this answer)"
    if citation.link_state is LinkState.CANONICAL and citation.link_href:
        return f"\n    {citation.link_href}"
    return _LINK_NOTES.get(citation.link_state, "")


def search_lines(result: SearchResult, limit: int = 10) -> list[str]:
    lines: list[str] = []
    for rank, e in enumerate(result.results[:limit], start=1):
        where = ", ".join(p for p in (e.title, chapter_label(e.chapter), pages_label(e.pages)) if p)
        snippet = " ".join(e.passage.split())
        if len(snippet) > 240:
            snippet = snippet[:240].rsplit(" ", 1)[0] + " …"
        lines.append(f"{rank:>2}. ({e.score:.2f}) {where}\n    {snippet}")
    return lines


def terminal_safe(text: str) -> str:
    """Drop control and format characters (ANSI escapes, bidi overrides) before printing."""
    return "".join(ch for ch in text if ch == "\n" or unicodedata.category(ch) not in {"Cc", "Cf"})


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


def user_line(user: User) -> str:
    groups = ",".join(sorted(user.groups)) or "-"
    return f"{user.name}  {user.tenant}  {user.role.value}  {user.status.value}  groups: {groups}"


def source_line(source: Source) -> str:
    by = f" — {source.author}" if source.authors else ""
    return f"{source.source_id}  v{source.current_version}  {source.title}{by}"


def source_details_json(details: SourceDetails) -> dict[str, Any]:
    out = source_json(details.source)
    out["versions"] = [
        {
            "version": v.version,
            "content_sha256": v.content_sha256,
            "parser": v.parser,
            "chunker": v.chunker,
            "pages": v.page_count,
            "sections": v.section_count,
            "chunks": v.chunk_count,
            "created_at": v.created_at,
            "retained": v.retained,
        }
        for v in details.versions
    ]
    return out


def source_details_text(details: SourceDetails) -> str:
    s = details.source
    lines = [
        f"{s.title}",
        f"  source id   {s.source_id} (tenant {s.tenant})",
        f"  authors     {s.author or '-'}",
        f"  year        {s.year or '-'}",
        f"  tags        {', '.join(s.tags) or '-'}",
        f"  acl         {', '.join(sorted(s.acl_groups)) or '(everyone in the tenant)'}",
        f"  url         {s.canonical_url or '-'}",
        f"  location    {s.origin}",
        "  versions:",
    ]
    for v in details.versions:
        mark = "*" if v.version == s.current_version else " "
        kept = "" if v.retained else " (text dropped by retention)"
        lines.append(
            f"   {mark} v{v.version}  {v.created_at}  sha256 {v.content_sha256[:16]}…"
            f"  {v.page_count} pages, {v.section_count} sections, {v.chunk_count} chunks"
            f"  [{v.parser}, {v.chunker}]{kept}"
        )
    return "\n".join(lines)


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


def evaluation_text(report: EvaluationReport) -> str:
    lines = [
        f"{report.documents} documents ({report.created} ingested in"
        f" {report.ingest_seconds:.1f} s), {report.queries} queries",
        f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7}"
        f" {'p50 ms':>7} {'p95 ms':>7}",
    ]
    for m in report.modes:
        lines.append(
            f"{m.mode:8} {m.metrics['ndcg@10']:>8.4f} {m.metrics['recall@10']:>7.4f}"
            f" {m.metrics['recall@100']:>7.4f} {m.metrics['mrr@10']:>7.4f}"
            f" {m.latency_ms_p50:>7.1f} {m.latency_ms_p95:>7.1f}"
        )
    return "\n".join(lines)


def audit_text(record: AuditRecord) -> str:
    outcome = "accepted" if record.verdict == "accepted" else f"degraded ({record.reason})"
    lines = [
        f"answer {record.answer_id} (request {record.request_id}) at {record.time}",
        f"  asked by {record.user_id} in tenant {record.tenant}",
        f"  generator {record.generator} model {record.model or '-'}"
        f" prompt {record.prompt_version or '-'} {record.prompt_sha256[:12] or ''}",
        f"  output sha256 {record.raw_sha256 or '-'}",
        f"  verdict: {outcome}" + (f": {record.detail}" if record.detail else ""),
        f"  manifest {record.manifest_sha256 or '-'}:",
    ]
    for row in record.manifest:
        lines.append(
            f"    {row['ref']}: source {row['source_id']} v{row['version']}"
            f" chunk {row['chunk_id']} sha256 {str(row['content_sha256'])[:12]}"
        )
    for c in record.citations:
        shown = "shown" if c.authorized else "withheld"
        lines.append(f"  segment {c.segment + 1} cites {c.ref}: {c.state} ({shown})")
    return "\n".join(lines)
