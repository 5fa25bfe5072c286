"""What a generator is asked and returns, and what the reader gets: validated segments,
citations built from stored metadata, or the reason there is no answer."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from citadel.domain.errors import InvalidValue
from citadel.domain.manifest import Manifest, PromptEvidence
from citadel.domain.rewrite import QueryRewrite
from citadel.domain.search import SearchResult
from citadel.domain.support import JudgeVerdict, Support, SupportLabel, strongest


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
    support: Support | None = None
    """Whether the cited passage supports the segment, as the application checked it
    (``None`` only where no support checker is configured)."""


@dataclass(frozen=True, slots=True)
class CitedSegment:
    text: str
    citations: tuple[Citation, ...]

    @property
    def label(self) -> SupportLabel | None:
        """The strongest support among the segment's citations, ``contradicted`` when any
        of them contradicts it (``strongest``); ``None`` when unchecked."""
        labels = [c.support.label for c in self.citations if c.support is not None]
        return strongest(labels) if labels else None


@dataclass(frozen=True, slots=True)
class GroundedAnswer:
    generator: str
    segments: tuple[CitedSegment, ...]
    limited: bool = False
    """True when segments were removed because no citation supported them (the
    ``drop`` support policy): the answer says less than the generator wrote."""


class DegradedReason(enum.StrEnum):
    NO_EVIDENCE = "no_evidence"
    GENERATOR_ERROR = "generator_error"
    GENERATOR_TIMEOUT = "generator_timeout"
    GENERATOR_BUSY = "generator_busy"
    INVALID_OUTPUT = "invalid_output"
    UNSUPPORTED = "unsupported"
    """A segment's citations do not support it, under the ``refuse`` support policy (or
    every segment was unsupported under ``drop``)."""
    NOT_IN_LIBRARY = "not_in_library"
    """Passages were found, but the answerability decision says none of them answers
    the question: the generator was not called; the search results are the closest
    passages, not an answer."""


@dataclass(frozen=True, slots=True)
class Degraded:
    reason: DegradedReason
    detail: str


@dataclass(frozen=True, slots=True)
class JudgedCitation:
    """The span-support judge's verdict on one citation of the generator's candidate."""

    segment: int
    """The segment's index in the validated candidate, before any was dropped."""
    ref: str
    verdict: JudgeVerdict


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
    support_checker: str = ""
    """The support checker the answer's segments were checked with ("" when none)."""
    support_policy: str = ""
    """The support policy that decided on them: ``label``, ``drop`` or ``refuse``."""
    judged: tuple[JudgedCitation, ...] = ()
    """What a span-support judge said of the decided candidate's citations, each with
    its model; empty without a judge, or when it gave no verdicts."""


@dataclass(frozen=True, slots=True)
class Answerability:
    """Whether the evidence answers the question, decided before any generation.

    ``score`` is the relevance scorer's calibrated probability that the best evidence
    passage answers the question; the answer goes ahead when it reaches ``threshold``.
    """

    score: float
    threshold: float
    scorer: str
    """The relevance scorer and its weights' version (``RelevanceScorer.name``)."""

    def __post_init__(self) -> None:
        if not (0.0 <= self.score <= 1.0 and 0.0 <= self.threshold <= 1.0):
            raise InvalidValue("an answerability score and threshold lie in [0, 1]")

    @property
    def answerable(self) -> bool:
        return self.score >= self.threshold


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
    answerability: Answerability | None = None
    """The decision made before generation; ``None`` when no scorer is configured or no
    passage was found (``no_evidence``)."""
    rewrite: QueryRewrite | None = None
    """For a conversation's turn: the question as asked and how its search query was
    built (``domain.rewrite``); ``None`` for a question asked on its own."""

    def __post_init__(self) -> None:
        if (self.answer is None) == (self.degraded is None):
            raise InvalidValue("an answer result has exactly one of answer and degraded")


def attribute(
    segments: Sequence[AnswerSegment],
    manifest: Manifest,
    supports: Sequence[Sequence[Support]] | None = None,
) -> tuple[CitedSegment, ...]:
    """Citations from the manifest and stored metadata only; the model supplied just refs.

    ``supports``, when given, holds one ``Support`` per ref of each segment, in order.
    """
    if supports is not None and (
        len(supports) != len(segments)
        or any(len(s) != len(seg.refs) for s, seg in zip(supports, segments, strict=True))
    ):
        raise InvalidValue("supports must give one result per ref of every segment")
    cited: list[CitedSegment] = []
    for index, segment in enumerate(segments):
        citations: list[Citation] = []
        for position, ref in enumerate(segment.refs):
            entry = manifest.entry(ref)
            evidence = manifest.evidence_for(ref)
            # The validator admitted only manifest refs; a miss here is a bug, not input.
            assert entry is not None and evidence is not None
            citations.append(
                Citation(
                    ref=ref,
                    evidence_id=entry.evidence_id,
                    source_id=entry.source_id,
                    version=entry.version,
                    chunk_id=entry.chunk_id,
                    title=evidence.title,
                    author=evidence.author,
                    chapter=evidence.chapter,
                    section=evidence.section,
                    pages=evidence.pages,
                    support=supports[index][position] if supports is not None else None,
                )
            )
        cited.append(CitedSegment(text=segment.text, citations=tuple(citations)))
    return tuple(cited)
