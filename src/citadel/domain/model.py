"""The domain's values: who asks, what was found, what the model saw, what it may say.

Every value is frozen; invariants are checked in ``__post_init__`` so an
invalid value cannot exist.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from citadel.domain.errors import InvalidValue


class Role(enum.StrEnum):
    READER = "reader"
    LIBRARIAN = "librarian"
    ADMIN = "admin"


class UserStatus(enum.StrEnum):
    ACTIVE = "active"
    DISABLED = "disabled"


@dataclass(frozen=True, slots=True)
class Actor:
    """The authenticated principal a request runs for; never taken from a request body."""

    user_id: str
    tenant: str
    role: Role = Role.READER
    status: UserStatus = UserStatus.ACTIVE
    groups: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.user_id.strip():
            raise InvalidValue("actor needs a non-empty user id")
        if not self.tenant.strip():
            raise InvalidValue("actor needs a non-empty tenant")


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on evidence, model output and concurrency (ARCHITECTURE.md, default limits)."""

    max_evidence: int = 8
    max_passage_bytes: int = 8 * 1024
    max_context_bytes: int = 32 * 1024
    max_segments: int = 8
    max_citations_per_segment: int = 8
    max_segment_bytes: int = 1024
    max_answer_bytes: int = 8 * 1024
    max_output_tokens: int = 1024
    max_concurrent_generations: int = 4
    generator_deadline_s: float = 30.0
    max_query_bytes: int = 4 * 1024
    max_results: int = 50
    max_repairs: int = 1
    """Regenerations after an invalid candidate, with the same frozen manifest: 0 or 1."""

    def __post_init__(self) -> None:
        for name in (
            "max_evidence",
            "max_passage_bytes",
            "max_context_bytes",
            "max_segments",
            "max_citations_per_segment",
            "max_segment_bytes",
            "max_answer_bytes",
            "max_output_tokens",
            "max_concurrent_generations",
            "max_query_bytes",
            "max_results",
        ):
            if getattr(self, name) < 1:
                raise InvalidValue(f"limit {name} must be at least 1")
        if self.generator_deadline_s <= 0:
            raise InvalidValue("generator_deadline_s must be positive")
        if self.max_repairs not in (0, 1):
            raise InvalidValue("max_repairs must be 0 or 1")


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions applied inside retrieval, never after it.

    Empty fields do not restrict. ``authors`` and ``tags_any`` match when the
    source has any of the values; ``tags_all`` when it has every one;
    ``section_prefix`` when a chunk's section path starts with those headings.
    """

    source_ids: frozenset[str] = frozenset()
    authors: frozenset[str] = frozenset()
    tags_any: frozenset[str] = frozenset()
    tags_all: frozenset[str] = frozenset()
    year_min: int | None = None
    year_max: int | None = None
    section_prefix: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (
            self.year_min is not None
            and self.year_max is not None
            and self.year_min > self.year_max
        ):
            raise InvalidValue("year_min is after year_max")

    @property
    def restricts_sources(self) -> bool:
        return bool(
            self.source_ids
            or self.authors
            or self.tags_any
            or self.tags_all
            or self.year_min is not None
            or self.year_max is not None
        )

    def admits_source(
        self, source_id: str, authors: Iterable[str], tags: Iterable[str], year: int | None
    ) -> bool:
        """The source-level part of the filter, for adapters that filter in memory."""
        if self.source_ids and source_id not in self.source_ids:
            return False
        if self.authors and not self.authors & set(authors):
            return False
        tag_set = set(tags)
        if self.tags_any and not self.tags_any & tag_set:
            return False
        if self.tags_all and not self.tags_all <= tag_set:
            return False
        if self.year_min is not None and (year is None or year < self.year_min):
            return False
        return not (self.year_max is not None and (year is None or year > self.year_max))

    def admits_section(self, section_path: Sequence[str]) -> bool:
        prefix = self.section_prefix
        return tuple(section_path[: len(prefix)]) == prefix


class SearchMode(enum.StrEnum):
    HYBRID = "hybrid"
    LEXICAL = "lexical"
    DENSE = "dense"


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What a caller may ask of retrieval: a query, a result count, filters."""

    query: str
    limit: int = 10
    filters: SearchFilters = SearchFilters()
    mode: SearchMode = SearchMode.HYBRID

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise InvalidValue("limit must be at least 1")


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved chunk, with the stored metadata attribution is built from."""

    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    section_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    page_label_start: str | None
    page_label_end: str | None
    score: float
    passage: str
    content_sha256: str

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise InvalidValue(f"evidence score must be normalised to [0, 1], got {self.score}")

    @property
    def pages(self) -> str:
        """Printed page labels as a reader cites them ("17" or "17–18"); physical if unlabeled."""
        start = self.page_label_start or (str(self.page_start) if self.page_start else "")
        end = self.page_label_end or (str(self.page_end) if self.page_end else "")
        if not start:
            return ""
        if not end or end == start:
            return start
        return f"{start}–{end}"


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Ranked evidence, best first. It stands on its own whatever generation does."""

    query: str
    results: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class ContextEvidence:
    """One passage admitted to the closed context, with the fields sent beside it."""

    evidence: Evidence

    @property
    def evidence_id(self) -> str:
        return self.evidence.evidence_id

    @property
    def passage(self) -> str:
        return self.evidence.passage

    def source_fields(self) -> tuple[str, ...]:
        e = self.evidence
        return (e.title, e.author, e.chapter, e.section, e.pages)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """What a ref stands for: exactly one version of one chunk, pinned by its hash."""

    ref: str
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    content_sha256: str


@dataclass(frozen=True, slots=True)
class Manifest:
    """The frozen evidence set one generation may cite, and its hash."""

    entries: tuple[ManifestEntry, ...]
    sha256: str
    evidence: tuple[ContextEvidence, ...] = field(compare=False, repr=False)

    def refs(self) -> frozenset[str]:
        return frozenset(entry.ref for entry in self.entries)

    def entry(self, ref: str) -> ManifestEntry | None:
        for entry in self.entries:
            if entry.ref == ref:
                return entry
        return None

    def evidence_for(self, ref: str) -> Evidence | None:
        for entry, ctx in zip(self.entries, self.evidence, strict=True):
            if entry.ref == ref:
                return ctx.evidence
        return None


@dataclass(frozen=True, slots=True)
class PromptEvidence:
    """The only view of evidence a generator gets: a ref, never an evidence id."""

    ref: str
    passage: str
    title: str
    author: str
    chapter: str
    section: str
    pages: str


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    question: str
    evidence: tuple[PromptEvidence, ...]
    max_output_tokens: int
    repair: str = ""
    """On a regeneration, the application's own words on why the last candidate was
    refused (a fixed sentence per rejection reason, never the model's text)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A generator's output before validation: decoded JSON and the raw text it came from.

    ``payload`` is whatever the generator produced (any JSON value); only the
    validator decides whether it becomes an answer.
    """

    payload: object
    raw: str
    model: str = ""
    prompt_version: str = ""
    prompt_sha256: str = ""
    """The hash of the instructions this candidate was written under (they can differ
    per call: a provider that refuses JSON mode gets the two-line format)."""


@dataclass(frozen=True, slots=True)
class AnswerSegment:
    """One validated sentence or paragraph and the refs it cites."""

    text: str
    refs: tuple[str, ...]


class LinkState(enum.StrEnum):
    """Where a citation may take its reader, decided by the resolver at display time."""

    CANONICAL = "canonical"
    """The version's trusted canonical URL, which passes the link policy."""
    VIEWER = "viewer"
    """An in-product route to the cited version, span highlighted, signed for this reader."""
    UNAVAILABLE = "unavailable"
    """No safe destination: shown as a plain source label, never a guessed URL."""
    FORBIDDEN = "forbidden"
    """The reader may not see the source now; nothing about it is shown."""
    DELETED = "deleted"
    """The source was deleted since the answer was made."""
    SUPERSEDED = "superseded"
    """A newer version exists; the link (if any) still goes to the cited version."""


@dataclass(frozen=True, slots=True)
class Citation:
    """Attribution built from stored metadata for one ref; nothing here came from the model."""

    ref: str
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    pages: str
    link_state: LinkState = LinkState.UNAVAILABLE
    link_href: str | None = None


@dataclass(frozen=True, slots=True)
class CitedSegment:
    text: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class GroundedAnswer:
    generator: str
    segments: tuple[CitedSegment, ...]


class DegradedReason(enum.StrEnum):
    NO_EVIDENCE = "no_evidence"
    GENERATOR_ERROR = "generator_error"
    GENERATOR_TIMEOUT = "generator_timeout"
    GENERATOR_BUSY = "generator_busy"
    INVALID_OUTPUT = "invalid_output"


@dataclass(frozen=True, slots=True)
class Degraded:
    reason: DegradedReason
    detail: str


@dataclass(frozen=True, slots=True)
class GenerationRecord:
    """What produced an answer (or failed to): for the reader's trust and the audit."""

    generator: str
    model: str
    prompt_version: str
    prompt_sha256: str = ""
    raw_sha256: str = ""
    """sha256 of the last candidate's raw text; empty when no candidate came back."""
    output: str = field(default="", repr=False)
    """The last candidate's decoded payload as canonical JSON, for the audit's replay."""
    attempts: int = 0
    cached: bool = False
    """True when the answer was served from the answer cache (no generation ran)."""
    shared: bool = False
    """True when the answer came from an identical request's in-flight generation."""


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """Search always; an answer only when one was validated, else why not."""

    answer_id: str
    request_id: str
    search: SearchResult
    answer: GroundedAnswer | None
    degraded: Degraded | None
    manifest: Manifest | None = None
    generation: GenerationRecord | None = None

    def __post_init__(self) -> None:
        if (self.answer is None) == (self.degraded is None):
            raise InvalidValue("an answer result has exactly one of answer and degraded")
