"""The MCP tools' text content: each output as Markdown an agent client may render.

A tool's structured content is the output model as JSON (data: passages raw). Its
text content is what a client shows or a model reads, and clients render it as
Markdown: every text in it that the library or the model wrote — passages,
quotations, titles, sections, segment texts, links — goes through
``present.neutral.neutral_markdown``, so no renderer makes a link, an image, markup
or a heading of it. Only the labels written here are Markdown.
"""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from citadel.domain.answer import DegradedReason
from citadel.entrypoints.mcp.models import (
    AskOutput,
    CitationOut,
    Link,
    PassageOut,
    SearchHit,
    SearchOutput,
)
from citadel.entrypoints.present.blocks import lead
from citadel.entrypoints.present.labels import NOT_IN_LIBRARY_NOTE
from citadel.entrypoints.present.neutral import neutral_inline as inline
from citadel.entrypoints.present.neutral import neutral_markdown as shown


def tool_result(output: BaseModel) -> CallToolResult:
    """``output`` as the structured content, and its Markdown as the text content."""
    return CallToolResult(
        content=[TextContent(type="text", text=markdown(output))],
        structured_content=output.model_dump(mode="json", by_alias=True),
    )


def markdown(output: BaseModel) -> str:
    if isinstance(output, SearchOutput):
        return search_markdown(output)
    if isinstance(output, AskOutput):
        return ask_markdown(output)
    if isinstance(output, PassageOut):
        return passage_markdown(output)
    raise TypeError(f"no Markdown form for {type(output).__name__}")


def _where(title: str, chapter: str, section: str, pages: str) -> str:
    parts = [inline(p) for p in (title, chapter, section) if p]
    if pages:
        parts.append(f"pages {inline(pages)}")
    return ", ".join(parts) or "(untitled)"


def _hit(rank: int, hit: SearchHit) -> list[str]:
    return [
        f"{rank}\\. {_where(hit.title, hit.chapter, hit.section, hit.pages)}"
        f" (score {hit.score:.2f}, evidence\\_id {inline(hit.evidence_id)})",
        "",
        shown(hit.passage),
        "",
    ]


def search_markdown(output: SearchOutput) -> str:
    lines = [f"Search results for {inline(output.query)}:", ""]
    if not output.results:
        return "\n".join([*lines, "No results."])
    for rank, hit in enumerate(output.results, start=1):
        lines.extend(_hit(rank, hit))
    return "\n".join(lines).rstrip("\n")


def _link(link: Link | None) -> str:
    if link is None:
        return ""
    return f" (link: {link.state.value}" + (f", {inline(link.href)})" if link.href else ")")


def _citation(citation: CitationOut) -> str:
    support = f", {citation.support.label}" if citation.support is not None else ""
    return f"\\[{citation.ref}\\] {inline(citation.attribution)}{support}{_link(citation.link)}"


CLOSEST_SHOWN = 5
"""Passages the text of a degraded answer names (the structured content has them all)."""


def ask_markdown(output: AskOutput) -> str:
    """The answer as a reader reads it: its segments with their refs, then one footnote
    per cited passage (attribution, support, link), then the answer_id get_passage takes.
    Without an answer: why, and the closest passages' places and first words. The whole
    record (every passage found, scores, the manifest's hash) is the structured content."""
    lines: list[str] = _searched_for(output)
    if output.answer is not None:
        for segment in output.answer.segments:
            refs = "".join(f"\\[{c.ref}\\]" for c in segment.citations)
            text = shown(segment.text)
            # After a fenced block's closing fence nothing may follow on its line.
            lines.extend((text, refs, "") if "\n" in text else (f"{text} {refs}", ""))
        if output.answer.limited:
            lines.extend(("Segments the passages did not support were removed.", ""))
        citations = {c.ref: c for s in output.answer.segments for c in s.citations}
        lines.extend(_citation(c) for c in citations.values())
        lines.extend(("", _answer_id(output)))
        return "\n".join(lines)
    assert output.degraded is not None
    lines.extend(
        (
            f"No validated answer ({inline(output.degraded.reason)}):"
            f" {inline(output.degraded.detail)}",
            "",
        )
    )
    if output.degraded.reason == DegradedReason.NOT_IN_LIBRARY.value:
        lines.extend((NOT_IN_LIBRARY_NOTE, "", "Closest passages:", ""))
    for rank, hit in enumerate(output.results[:CLOSEST_SHOWN], start=1):
        lines.extend(
            (
                f"{rank}\\. {_where(hit.title, hit.chapter, hit.section, hit.pages)}"
                f" (score {hit.score:.2f}, evidence\\_id {inline(hit.evidence_id)})",
                "",
                shown(lead(hit.passage)),
                "",
            )
        )
    if len(output.results) > CLOSEST_SHOWN:
        more = len(output.results) - CLOSEST_SHOWN
        lines.extend((f"({more} more in the structured content)", ""))
    lines.append(_answer_id(output))
    return "\n".join(lines)


def _answer_id(output: AskOutput) -> str:
    line = (
        f"answer\\_id {inline(output.answer_id)}"
        " (get\\_passage reads a cited passage by it and the ref)"
    )
    turn = output.conversation
    if turn is None:
        return line
    return (
        f"{line}\n\nconversation\\_id {inline(turn.conversation_id)}, turn {turn.turn}"
        " (pass it to ask for a follow-up)"
    )


def _searched_for(output: AskOutput) -> list[str]:
    """When the conversation rewrote the question: what the turn searched for."""
    turn = output.conversation
    if turn is None or turn.rewrite == "none":
        return []
    return [f"Searched for: {inline(turn.searched_for)}", ""]


def passage_markdown(output: PassageOut) -> str:
    lines = [
        f"{_where(output.title, output.chapter, output.section, output.pages)}"
        f" (version {output.version}{_link(output.link)})",
        "",
        shown(output.text),
    ]
    if output.quoted is not None:
        lines.extend(("", "Quoted from it:", "", shown(output.quoted)))
    return "\n".join(lines)
