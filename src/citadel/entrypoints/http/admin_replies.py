"""Reply bodies of the administration routes (sources, users, audit) as named schemas.

Lists are pages: ``items`` and ``next_cursor`` (null on the last page), the cursor
to send back as ``?cursor=`` for the next one (``paging``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from citadel.domain.answer import LinkState
from citadel.domain.support import SupportLabel
from citadel.domain.users import Role, UserStatus
from citadel.entrypoints.http.replies import Reply, SourceReply

_NEXT = Field(description="Send as ?cursor= for the next page; null on the last page.")


class SourcePage(Reply):
    """Live sources the caller may read, by source id."""

    items: list[SourceReply]
    next_cursor: str | None = _NEXT


class VersionReply(Reply):
    version: int
    content_sha256: str
    parser: str
    chunker: str
    pages: int | None = Field(
        description="Pages of a paged format (PDF, HTML, EPUB); null for one without."
    )
    sections: int
    chunks: int
    created_at: str
    retained: bool = Field(description="False once retention dropped the version's text.")


class SourceDetailsReply(SourceReply):
    """A source and its versions, oldest first."""

    versions: list[VersionReply]


class VersionsReply(Reply):
    source_id: str
    versions: list[VersionReply]


class SectionReply(Reply):
    """One section of a version in reading order: its heading path, chunks and pages."""

    section_path: list[str]
    chapter: str
    section: str
    chunks: int
    first_chunk_id: str
    page_start: int | None
    page_end: int | None
    page_label_start: str | None
    page_label_end: str | None


class SectionsReply(Reply):
    source_id: str
    version: int
    sections: list[SectionReply]


class DeletedReply(Reply):
    source_id: str
    status: Literal["deleted"] = Field(
        description="Its text is gone; a tombstone stays, so old citations say deleted."
    )


class UserReply(Reply):
    """A user; tokens are never part of one."""

    name: str
    tenant: str
    role: Role
    groups: list[str]
    status: UserStatus
    created_at: str


class UserPage(Reply):
    """The users of the admin's tenant, by name."""

    items: list[UserReply]
    next_cursor: str | None = _NEXT


class TokenReply(Reply):
    """A user and its new API token: shown in this reply only, stored only as a hash."""

    user: UserReply
    token: str


class ManifestRow(Reply):
    ref: str
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    content_sha256: str


class AuditManifest(Reply):
    sha256: str
    entries: list[ManifestRow]


class AuditActor(Reply):
    user_id: str
    tenant: str


class AuditGeneration(Reply):
    generator: str
    model: str
    prompt_version: str
    prompt_sha256: str
    raw_sha256: str
    output: str = Field(description="The last candidate's decoded payload ('' when none).")


class AuditVerdict(Reply):
    outcome: Literal["accepted", "degraded"]
    reason: str
    detail: str


class AuditSupport(Reply):
    checker: str
    policy: str
    limited: bool


class AuditAnswerability(Reply):
    score: float
    threshold: float
    scorer: str


class AuditCitationSupport(Reply):
    label: SupportLabel
    score: float | None
    span: list[int] | None = Field(description="[start, end] of a quotation in its passage.")


class AuditCitation(Reply):
    segment: int
    ref: str
    state: LinkState
    authorized: bool
    support: AuditCitationSupport | None


class AuditRecordReply(Reply):
    """One answer's audit record, as stored (the hash chain covers exactly this)."""

    answer_id: str
    request_id: str
    time: str
    actor: AuditActor
    manifest: AuditManifest
    generation: AuditGeneration
    verdict: AuditVerdict
    support: AuditSupport
    answerability: AuditAnswerability | None = Field(
        default=None,
        description="The answerability decision made before generation (none in records"
        " made before it, or without a relevance scorer).",
    )
    citations: list[AuditCitation]


class ChainReply(Reply):
    """Whether every audit record and the head still hash and link as written."""

    records: int
    intact: bool
    problems: list[str]
    keyed_from: int = Field(description="The first keyed record's number; 0 when none is.")
    unkeyed: int = Field(description="Records made before the log was keyed.")
