"""Domain results as the MCP tools' outputs, through the shapes every entrypoint prints.

``search_output`` and ``ask_output`` are ``search_json`` and ``answer_json``
(the CLI's ``--json``, the HTTP API's bodies) with two fields added; links are
the ones the resolver put on each citation, passed through as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from citadel.app.resolver import ResolvedLink
from citadel.domain.answer import AnswerResult, Citation, LinkState
from citadel.domain.conversation import Turn
from citadel.domain.document import Chunk
from citadel.domain.search import Evidence, SearchResult
from citadel.domain.source import Source
from citadel.entrypoints.mcp.models import (
    AnswerabilityOut,
    AnswerOut,
    AskOutput,
    CitationOut,
    DegradedOut,
    Link,
    PassageOut,
    SearchHit,
    SearchOutput,
    SegmentOut,
    TurnOut,
)
from citadel.entrypoints.present.labels import footnote
from citadel.entrypoints.present.shapes import (
    answer_json,
    citation_json,
    evidence_json,
    link_json,
    search_json,
)

FORBIDDEN_ATTRIBUTION = "A source you may not see"


def attribution(citation: Citation) -> str:
    """The footnote line the terminal and the web UI show, without its number."""
    if citation.link_state is LinkState.FORBIDDEN:
        return FORBIDDEN_ATTRIBUTION
    return footnote(0, citation).removeprefix("[0] ")


def hits(results: Sequence[Evidence]) -> list[SearchHit]:
    return [SearchHit.model_validate({**evidence_json(e), "pages": e.pages}) for e in results]


def search_output(result: SearchResult) -> SearchOutput:
    body = search_json(result)
    return SearchOutput(query=body["query"], results=hits(result.results))


def citation_output(citation: Citation) -> CitationOut:
    shape = citation_json(citation)
    return CitationOut.model_validate({**shape, "attribution": attribution(citation)})


def ask_output(result: AnswerResult, turn: Turn | None = None) -> AskOutput:
    """The answer as the ask tool returns it; ``turn``: the conversation turn it is."""
    body = answer_json(result)
    answer = None
    if result.answer is not None:
        answer = AnswerOut(
            generator=result.answer.generator,
            limited=result.answer.limited,
            segments=[
                SegmentOut(
                    text=segment.text,
                    support=shaped["support"],
                    citations=[citation_output(c) for c in segment.citations],
                )
                for segment, shaped in zip(
                    result.answer.segments, body["answer"]["segments"], strict=True
                )
            ],
        )
    degraded = DegradedOut.model_validate(body["degraded"]) if body["degraded"] else None
    return AskOutput(
        answer_id=body["answer_id"],
        request_id=body["request_id"],
        query=body["query"],
        answer=answer,
        degraded=degraded,
        results=hits(result.search.results),
        manifest_sha256=body["manifest_sha256"],
        answerability=(
            AnswerabilityOut.model_validate(body["answerability"])
            if body["answerability"]
            else None
        ),
        conversation=turn_output(turn) if turn is not None else None,
    )


def turn_output(turn: Turn) -> TurnOut:
    return TurnOut(
        conversation_id=turn.conversation_id,
        turn=turn.number,
        question=turn.question,
        searched_for=turn.query,
        rewrite=turn.rewrite.kind.value,
    )


def printed_pages(chunk: Chunk) -> str:
    """A chunk's printed pages as ``Evidence.pages`` gives them ("17", "17–18", or "")."""
    start = chunk.page_label_start or (str(chunk.page_start) if chunk.page_start else "")
    end = chunk.page_label_end or (str(chunk.page_end) if chunk.page_end else "")
    if not start:
        return ""
    return start if not end or end == start else f"{start}–{end}"


def passage_output(
    source: Source,
    chunk: Chunk,
    *,
    link: ResolvedLink | None = None,
    span: tuple[int, int] | None = None,
) -> PassageOut:
    quoted = None
    if span is not None and 0 <= span[0] < span[1] <= len(chunk.text):
        quoted = chunk.text[span[0] : span[1]]
    return PassageOut(
        source_id=chunk.source_id,
        version=chunk.version,
        current_version=source.current_version,
        chunk_id=chunk.chunk_id,
        title=source.title,
        chapter=chunk.chapter,
        section=chunk.section,
        section_path=list(chunk.section_path),
        pages=printed_pages(chunk),
        text=chunk.text,
        quoted=quoted,
        link=Link.model_validate(link_json(link)) if link is not None else None,
    )
