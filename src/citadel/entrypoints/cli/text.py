"""The human forms the terminal prints: answers with footnotes, result lists, the
registry, users, evaluations and audit records; and ``terminal_safe`` for all of them.

What the library or the model wrote (segment texts, passages, titles) is shown
through ``present.neutral.neutral_markdown``: as it is, or as code where a renderer
(a terminal's, or whatever the output is pasted into) could make something of it.

The ``--json`` shapes are in ``citadel.entrypoints.present.shapes``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from citadel.app.evaluation import EvaluationReport
from citadel.app.library import SourceDetails
from citadel.app.resolver import ResolvedLink
from citadel.domain.answer import Answerability, AnswerResult, Citation, DegradedReason, LinkState
from citadel.domain.audit import AuditRecord
from citadel.domain.search import SearchResult
from citadel.domain.source import Source
from citadel.domain.users import User
from citadel.entrypoints.present.blocks import lead
from citadel.entrypoints.present.evidence_list import citation_key, evidence_list, footnote_numbers
from citadel.entrypoints.present.labels import (
    LIMITED_NOTE,
    NOT_IN_LIBRARY_NOTE,
    chapter_label,
    footnote,
    page_count_text,
    pages_label,
    support_mark,
)
from citadel.entrypoints.present.neutral import neutral_inline, neutral_markdown
from citadel.entrypoints.present.public_links import relative_note

FURTHER_SHOWN = 5
"""Uncited passages the terminal lists after the cited ones (``--json`` has them all)."""


def answer_text(result: AnswerResult, *, viewer_links: bool = False, public_url: str = "") -> str:
    """The human form: answer prose with numbered footnote marks, then the evidence list
    under the same numbers (cited passages first, then further ones); or passages when
    degraded.

    ``viewer_links``: the answer was resolved for a named user (``--as``), so its signed
    viewer links are that user's to open and are printed; the local administrator's
    are not (no browser signs in as it). ``public_url``: the links are already under
    it (``present.public_links``); unset, a note says how to print them whole."""
    lines: list[str] = []
    if result.answer is not None:
        numbers = footnote_numbers(result.answer)
        notes: dict[int, Citation] = {}
        for segment in result.answer.segments:
            marks = []
            for citation in segment.citations:
                number = numbers[citation_key(citation)]
                # Forbidden citations carry no ids: each gets its own bare note.
                notes.setdefault(number, citation)
                mark = support_mark(citation)
                marks.append(f"[{number}: {mark}]" if mark else f"[{number}]")
            text = neutral_markdown(segment.text)
            # A fenced block's closing fence stands alone on its line.
            lines.append(
                f"{text}\n{''.join(marks)}" if "\n" in text else f"{text} {''.join(marks)}"
            )
        if result.answer.limited:
            lines.extend(("", LIMITED_NOTE))
        lines.append("")
        lines.extend(
            evidence_lines(result, notes, viewer_links=viewer_links, public_url=public_url)
        )
    elif result.degraded is not None and result.degraded.reason is DegradedReason.NOT_IN_LIBRARY:
        lines.append(f"No answer (not_in_library). {NOT_IN_LIBRARY_NOTE}")
        lines.append(f"({result.degraded.detail})")
        lines.append("Closest passages (not an answer):")
        lines.extend(search_lines(result.search, limit=5))
    else:
        assert result.degraded is not None
        lines.append(
            f"No generated answer ({result.degraded.reason.value}): {result.degraded.detail}"
        )
        lines.append("Search results:")
        lines.extend(search_lines(result.search, limit=5))
    return "\n".join(lines)


def evidence_lines(
    result: AnswerResult,
    notes: dict[int, Citation],
    *,
    viewer_links: bool = False,
    public_url: str = "",
) -> list[str]:
    """The evidence list: each cited passage as its footnote (``[1] cited  …``, with
    where it opens), then up to ``FURTHER_SHOWN`` further passages, numbered on, each
    with its score, plain source label and first words (the resolver gave them no link)."""
    further = [p for p in evidence_list(result) if not p.cited]
    found = len(result.search.results)
    lines = [f"Evidence ({len(notes)} cited, of {found} passages found):"]
    # A cited passage is its footnote (a forbidden one says only that the reader may
    # not see it); its number is the one the marks above use.
    lines.extend(
        _note(n, c, "cited  ") + link_note(c, viewer_links=viewer_links)
        for n, c in sorted(notes.items())
    )
    lines.extend(_link_hints(notes.values(), viewer_links, public_url))
    if further:
        lines.append("Further passages:")
    for p in further[:FURTHER_SHOWN]:
        e = p.evidence
        where = ", ".join(x for x in (e.title, chapter_label(e.chapter), pages_label(e.pages)) if x)
        lines.append(f"[{p.number}] ({e.score:.2f}) {neutral_inline(where)}")
        lines.append(f"    {neutral_markdown(lead(e.passage))}")
    if len(further) > FURTHER_SHOWN:
        lines.append(f"({len(further) - FURTHER_SHOWN} more: `--json` lists every passage)")
    return lines


def _note(number: int, citation: Citation, mark: str = "") -> str:
    """The footnote line, its title, chapter and section shown as library text."""
    prefix = f"[{number}] "
    return prefix + mark + neutral_inline(footnote(number, citation).removeprefix(prefix))


_LINK_NOTES = {
    LinkState.UNAVAILABLE: " (no link)",
    LinkState.FORBIDDEN: "",
    LinkState.DELETED: " (deleted since this answer)",
}


def link_note(citation: Citation, *, viewer_links: bool = False) -> str:
    """Where the footnote leads, for a terminal: a canonical URL, a viewer link, or why
    there is none.

    Viewer links are routes of `citadel serve` signed for one user for minutes: printed
    only with ``viewer_links`` (the answer was resolved for a user named by ``--as``,
    who can open them signed in); the local administrator's would open for nobody.
    """
    if citation.link_state is LinkState.FORBIDDEN:
        return "you may not see this source"
    href = citation.link_href
    opens = f"\n    {href}" if href and viewer_links else ""
    if citation.link_state is LinkState.SUPERSEDED:
        return " (source changed since this answer)" + opens
    if citation.link_state is LinkState.CANONICAL and href:
        return f"\n    {href}"
    if citation.link_state is LinkState.VIEWER:
        return opens
    return _LINK_NOTES.get(citation.link_state, "")


def _link_hints(cited: Iterable[Citation], viewer_links: bool, public_url: str) -> list[str]:
    """A line under the footnotes when their viewer links were left out or are routes."""
    signed = [
        c.link_href
        for c in cited
        if c.link_state in (LinkState.VIEWER, LinkState.SUPERSEDED) and c.link_href
    ]
    if not signed:
        return []
    if not viewer_links:
        return [VIEWER_HINT]
    note = relative_note(signed, public_url)
    return [note] if note else []


def citation_line(ref: str, link: ResolvedLink, *, viewer_links: bool) -> str:
    """``E1: viewer URL`` for ``citadel citation``: the link when it opens for its reader
    (a canonical URL always; a signed viewer link only for a user named by ``--as``)."""
    shown = link.href if link.href and (viewer_links or link.state is LinkState.CANONICAL) else ""
    return f"{ref}: {link.state.value} {shown}".rstrip()


def citation_hint(link: ResolvedLink, *, viewer_links: bool, public_url: str) -> str:
    """The line under ``citation_line``: why a signed link was left out, or how to print
    it whole; empty when there is nothing to say."""
    if link.href is None or link.state not in (LinkState.VIEWER, LinkState.SUPERSEDED):
        return ""
    return VIEWER_HINT if not viewer_links else relative_note([link.href], public_url)


VIEWER_HINT = (
    "(viewer links open for the user they are made for: give `--as USER` to print"
    " the ones USER can open in `citadel serve`)"
)


def search_lines(result: SearchResult, limit: int = 10) -> list[str]:
    lines: list[str] = []
    for rank, e in enumerate(result.results[:limit], start=1):
        where = ", ".join(p for p in (e.title, chapter_label(e.chapter), pages_label(e.pages)) if p)
        snippet = " ".join(e.passage.split())
        if len(snippet) > 240:
            snippet = snippet[:240].rsplit(" ", 1)[0] + " …"
        lines.append(
            f"{rank:>2}. ({e.score:.2f}) {neutral_inline(where)}\n    {neutral_markdown(snippet)}"
        )
    return lines


def terminal_safe(text: str) -> str:
    """Drop control and format characters (ANSI escapes, bidi overrides) before printing."""
    return "".join(ch for ch in text if ch == "\n" or unicodedata.category(ch) not in {"Cc", "Cf"})


def user_line(user: User) -> str:
    groups = ",".join(sorted(user.groups)) or "-"
    return f"{user.name}  {user.tenant}  {user.role.value}  {user.status.value}  groups: {groups}"


def source_line(source: Source) -> str:
    by = f" — {source.author}" if source.authors else ""
    return f"{source.source_id}  v{source.current_version}  {source.title}{by}"


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
            f"  {page_count_text(v.page_count)}{v.section_count} sections, {v.chunk_count} chunks"
            f"  [{v.parser}, {v.chunker}]{kept}"
        )
    return "\n".join(lines)


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
        f"  answerability: {_decision(record.answerability)}",
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


def _decision(decided: Answerability | None) -> str:
    if decided is None:
        return "-"
    verdict = "answerable" if decided.answerable else "not answerable"
    return (
        f"{verdict} (score {decided.score:.2f}, threshold {decided.threshold:.2f},"
        f" scorer {decided.scorer})"
    )
