"""The JSON API's reply bodies as named schemas: what ``/openapi.json`` publishes for
every 2xx response, and what FastAPI checks each reply against before sending it.

The values are built by ``citadel.entrypoints.present.shapes`` (the CLI's ``--json``
objects); these models only describe them. Every model forbids unknown fields, so a
shape that gains a field without its schema fails the tests instead of drifting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from citadel.domain.answer import DegradedReason, LinkState
from citadel.domain.rewrite import RewriteKind
from citadel.domain.support import SupportLabel


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(Reply):
    """What went wrong, for the caller; details of unexpected failures go only to the log."""

    status: int = Field(description="The HTTP status again.")
    code: str = Field(description="A stable code, e.g. not_found, forbidden, rate_limited.")
    message: str
    request_id: str = Field(description="The X-Request-ID of the request, for the logs.")
    reason: str | None = Field(
        default=None, description="For a refused upload: the per-file code the CLI prints."
    )


class ErrorBody(Reply):
    """The body of every error reply of the API."""

    error: ErrorDetail


class EvidenceReply(Reply):
    """One retrieved passage with the stored metadata its attribution is built from."""

    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    section_path: list[str]
    page_start: int | None
    page_end: int | None
    page_label_start: str | None
    page_label_end: str | None
    score: float = Field(ge=0.0, le=1.0)
    passage: str


class SearchReply(Reply):
    query: str
    results: list[EvidenceReply]


class SpanReply(Reply):
    start: int
    end: int


class SupportReply(Reply):
    """The application's check that the cited passage supports the segment."""

    label: SupportLabel
    score: float
    span: SpanReply | None = Field(description="Where a quotation lies in the passage.")


class LinkReply(Reply):
    """Where a citation may take its reader, decided by the resolver; ``href`` is the
    resolver's (a trusted canonical URL or a signed viewer route), else null."""

    state: LinkState
    href: str | None


class CitationReply(Reply):
    ref: str
    evidence_id: str
    source_id: str
    version: int
    title: str
    chapter: str
    section: str
    pages: str
    link: LinkReply
    support: SupportReply | None


class SegmentReply(Reply):
    text: str
    support: SupportLabel | None
    citations: list[CitationReply]


class WrittenAnswer(Reply):
    generator: str
    limited: bool = Field(description="Unsupported segments were dropped.")
    segments: list[SegmentReply]


class DegradedReply(Reply):
    reason: DegradedReason
    detail: str


class GenerationReply(Reply):
    generator: str
    model: str
    prompt_version: str
    prompt_sha256: str | None
    raw_sha256: str | None
    attempts: int
    cached: bool
    shared: bool


class AnswerEvidenceReply(EvidenceReply):
    """A search result beside an answer, with its place in the answer's evidence list:
    the passages the answer cites come first under their footnote numbers, the others
    follow in search order, numbered on (the CLI and the web UI show the same list)."""

    number: int = Field(ge=1, description="Its number in the evidence list.")
    cited: bool = Field(description="Whether the answer cites this passage.")
    footnote: int | None = Field(
        ge=1, description="The footnote number the answer cites it under; null when uncited."
    )


class AnswerabilityReply(Reply):
    """Whether the evidence answers the question, decided before any generation."""

    score: float = Field(description="The best evidence passage's relevance, in [0, 1].")
    threshold: float = Field(description="The score an answer must reach to be written.")
    scorer: str = Field(description="The relevance scorer and its weights' version.")
    answerable: bool = Field(
        description="score >= threshold; false means degraded with reason not_in_library."
    )


class AnswerSearch(Reply):
    results: list[AnswerEvidenceReply] = Field(description="In search order, best first.")


class AnswerReply(Reply):
    """A validated answer, or (``answer`` null) the search results and why there is none."""

    answer_id: str
    request_id: str
    query: str
    search: AnswerSearch
    answer: WrittenAnswer | None
    degraded: DegradedReply | None
    manifest_sha256: str | None
    generation: GenerationReply | None
    answerability: AnswerabilityReply | None = Field(
        description="The answerability decision; null where no relevance scorer decided"
        " (none configured, it failed, or no passage was selected)."
    )


class TurnReply(Reply):
    """One turn of a conversation: the question as asked, the query it searched for
    and how that was built from the conversation, and its answer (the /v1/answer body)."""

    number: int = Field(ge=1, description="1 for the first question, then 2, 3, …")
    question: str = Field(description="The question as the reader asked it.")
    query: str = Field(description="What the turn searched for.")
    rewrite: RewriteKind = Field(
        description="none: searched as asked; deterministic: the previous turn's terms"
        " were added by a fixed rule; model: a model wrote the query."
    )
    rewritten: bool = Field(description="Whether the query differs from the question.")
    created: str
    answer: AnswerReply = Field(
        description="The answer as given; citation links resolved for the caller now."
    )


class ConversationSummary(Reply):
    """A conversation, listed: its title is its first question."""

    conversation_id: str
    title: str
    created: str


class ConversationReply(ConversationSummary):
    """A conversation with its turns, oldest first."""

    turns: list[TurnReply]


class ConversationsReply(Reply):
    """The caller's conversations, newest first."""

    items: list[ConversationSummary]


class CitationLinkReply(Reply):
    """One citation of an earlier answer, resolved again for this caller now."""

    answer_id: str
    ref: str
    link: LinkReply


class SourceReply(Reply):
    """A registered source; ``origin`` (where the server read it) only for admins."""

    source_id: str
    tenant: str
    title: str
    authors: list[str]
    year: int | None
    tags: list[str]
    acl_groups: list[str] = Field(description="Who may read it; empty: the whole tenant.")
    canonical_url: str | None
    origin: str | None = Field(default=None, description="Admins only.")
    current_version: int
    deleted: bool


class IngestReply(Reply):
    path: str
    source_id: str
    version: int
    status: Literal["created", "updated", "unchanged"]
    title: str
    pages: int | None = Field(
        description="Pages of a paged format (PDF, HTML, EPUB); null for one without."
    )
    sections: int
    chunks: int
    warnings: list[str] = Field(
        default_factory=list,
        description="What the parser read past (a repaired PDF, a file left out), one line each.",
    )


class Health(Reply):
    status: Literal["ok"]


class VectorCoverageReply(Reply):
    model: str
    chunks: int | None
    missing: int | None


class Readiness(Reply):
    """Ready (200) or not (503): the store, the database kind and the generator."""

    status: Literal["ready", "unavailable"]
    store: Literal["ok", "unreachable"]
    database: Literal["sqlite", "postgresql"]
    generator: str
    vectors: VectorCoverageReply | None = None
    error: str | None = Field(default=None, description="When unavailable: the failure's kind.")


class StreamEvent(Reply):
    """One server-sent event of /v1/answer/stream; ``data`` is one line of JSON:
    ``search`` the /v1/search body, ``answer`` and ``degraded`` the /v1/answer body,
    ``error`` the error body, ``done`` ``{"answer_id"}``."""

    event: Literal["search", "answer", "degraded", "error", "done"]
    data: str
