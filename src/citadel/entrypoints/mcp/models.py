"""The MCP tools' typed outputs: the HTTP API's bodies (``present.shapes``), as schemas.

Every model is filled from the shapes every entrypoint prints (``evidence_json``,
``citation_json``, ``answer_json``), plus what an agent needs in one field: the
printed pages (``pages``) of a search result and a citation's attribution line.
The SDK publishes these as each tool's output schema and sends them as
structured content; nothing here is computed from what the generator wrote
except the validated segment texts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from citadel.domain.answer import LinkState


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Link(_Out):
    """Where a citation may take this reader, as the resolver decided it for them now."""

    state: LinkState = Field(
        description="canonical, viewer, superseded, unavailable, forbidden or deleted"
    )
    href: str | None = Field(
        description=(
            "The resolver's link, or null: an https URL (canonical) or a signed viewer route"
            " under the citadel server (viewer, superseded), relative to its base URL"
        )
    )


class Span(_Out):
    start: int
    end: int


class Support(_Out):
    """The application's check that the cited passage supports the segment."""

    label: str = Field(description="verbatim, supported, partial, unsupported or contradicted")
    score: float
    span: Span | None = Field(description="The quoted characters in the passage, for a quotation")


class SearchHit(_Out):
    """One passage found, with the stored metadata it is attributed by."""

    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    section_path: list[str]
    page_start: int | None = Field(description="The physical first page (PDF), or null")
    page_end: int | None
    page_label_start: str | None = Field(description="The printed label of the first page")
    page_label_end: str | None
    pages: str = Field(description='The printed pages as a reader cites them ("17" or "17–18")')
    score: float = Field(description="Relevance in [0, 1]")
    passage: str


class SearchOutput(_Out):
    query: str
    results: list[SearchHit]


class CitationOut(_Out):
    """One citation: attribution from stored metadata, support, and the resolver's link.

    A citation of a source the reader may not see keeps only its ref and the
    ``forbidden`` state: every other field is empty."""

    ref: str
    evidence_id: str
    source_id: str
    version: int
    title: str
    chapter: str
    section: str
    pages: str
    attribution: str = Field(
        description='The footnote line: title, chapter, section, printed pages ("A source'
        ' you may not see" when forbidden)'
    )
    link: Link
    support: Support | None


class SegmentOut(_Out):
    text: str
    support: str | None = Field(
        description="The strongest support among its citations; contradicted when one"
        " of them contradicts it"
    )
    citations: list[CitationOut]


class AnswerOut(_Out):
    generator: str
    limited: bool = Field(
        description="Segments the passages did not support (or contradicted) were removed"
    )
    segments: list[SegmentOut]


class DegradedOut(_Out):
    reason: str = Field(
        description="no_evidence, not_in_library (the passages are the closest ones, not an"
        " answer), generator_error, generator_timeout, generator_busy, invalid_output or"
        " unsupported"
    )
    detail: str


class AnswerabilityOut(_Out):
    """Whether the evidence answers the question, decided before any generation."""

    score: float = Field(description="The best evidence passage's relevance, in [0, 1]")
    threshold: float = Field(description="The score an answer must reach to be written")
    scorer: str = Field(description="The relevance scorer and its weights' version")
    answerable: bool = Field(description="false: degraded with reason not_in_library")


class TurnOut(_Out):
    """Where this answer stands in its conversation: pass ``conversation_id`` to ``ask``
    again to follow up (the follow-up's search query is then built from the conversation)."""

    conversation_id: str
    turn: int = Field(description="1 for the first question, then 2, 3, …")
    question: str = Field(description="The question as asked")
    searched_for: str = Field(description="The search query the turn ran")
    rewrite: str = Field(
        description="none (searched as asked), deterministic (the previous turn's terms"
        " added by a fixed rule) or model"
    )


class AskOutput(_Out):
    """The validated answer, or (degraded) no answer, the reason and the search results."""

    answer_id: str = Field(description="For get_passage and GET /v1/answers/{id}/citations/{ref}")
    request_id: str
    query: str
    answer: AnswerOut | None
    degraded: DegradedOut | None
    results: list[SearchHit] = Field(
        description="The search results the answer was built from (not_in_library: the"
        " closest passages, which do not answer the question)"
    )
    manifest_sha256: str | None
    answerability: AnswerabilityOut | None = Field(
        description="The answerability decision; null where no relevance scorer decided"
    )
    conversation: TurnOut | None = Field(
        default=None, description="The conversation this answer is a turn of"
    )


class PassageOut(_Out):
    """A passage the caller may read now, and where it is in its source."""

    source_id: str
    version: int
    current_version: int = Field(description="The source's version now")
    chunk_id: str
    title: str
    chapter: str
    section: str
    section_path: list[str]
    pages: str
    text: str
    quoted: str | None = Field(description="The words an answer quoted from it, if one did")
    link: Link | None = Field(
        description="For a citation (answer_id and ref): the resolver's link for this reader now"
    )
