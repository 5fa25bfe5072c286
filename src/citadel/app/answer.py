"""Answer use case: search, select, freeze, generate, validate — or degrade to search.

The generator is a candidate writer. It gets a closed, bounded evidence set
under refs it cannot map to anything else; the application validates its
output atomically and builds attribution from stored metadata. Any failure of
generation keeps the search result; only the caller's cancellation or the
request's own deadline is an error.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from citadel.app.errors import InvalidGeneratorOutput, InvalidRequest, RequestDeadlineExceeded
from citadel.app.ports import AnswerGenerator
from citadel.app.search import SearchService
from citadel.domain.manifest import freeze_manifest, prompt_evidence
from citadel.domain.model import (
    Actor,
    AnswerResult,
    Citation,
    CitedSegment,
    Degraded,
    DegradedReason,
    GenerationRequest,
    GroundedAnswer,
    Limits,
    Manifest,
    SearchRequest,
    SearchResult,
)
from citadel.domain.selection import select_evidence
from citadel.domain.validation import Accepted, Rejection, validate_candidate


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """Everything a caller may say: a search and a score floor. No passages, no citations."""

    search: SearchRequest
    minimum_evidence_score: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.minimum_evidence_score <= 1.0:
            raise InvalidRequest("minimum_evidence_score must be between 0 and 1")


@dataclass(frozen=True, slots=True)
class GenerationOutcome:
    """What the audit trail needs about one generation attempt."""

    raw_output: str
    model: str
    rejection: Rejection | None


class Bulkhead:
    """A non-blocking cap on concurrent generations: when full, callers degrade at once."""

    def __init__(self, capacity: int) -> None:
        self._slots = threading.BoundedSemaphore(capacity)

    def try_enter(self) -> bool:
        return self._slots.acquire(blocking=False)

    def leave(self) -> None:
        self._slots.release()


def _new_id() -> str:
    return uuid.uuid4().hex


class AnswerService:
    def __init__(
        self,
        search: SearchService,
        generator: AnswerGenerator,
        limits: Limits,
        *,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self._search = search
        self._generator = generator
        self._limits = limits
        self._bulkhead = Bulkhead(limits.max_concurrent_generations)
        self._new_id = new_id

    @property
    def generator_name(self) -> str:
        return self._generator.name

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> AnswerResult:
        """Answer for ``actor``; raises ``RequestDeadlineExceeded`` if ``deadline_s`` passes."""
        request_id = request_id or self._new_id()
        try:
            async with asyncio.timeout(deadline_s):
                return await self._answer(request, actor, request_id)
        except TimeoutError as exc:
            raise RequestDeadlineExceeded("the request's deadline passed") from exc

    async def _answer(self, request: AnswerRequest, actor: Actor, request_id: str) -> AnswerResult:
        answer_id = self._new_id()
        search = await asyncio.to_thread(self._search.search, request.search, actor)
        context = select_evidence(search.results, self._limits, request.minimum_evidence_score)
        if not context:
            return self._degraded(
                answer_id,
                request_id,
                search,
                None,
                DegradedReason.NO_EVIDENCE,
                "no passage met the evidence criteria; the generator was not called",
            )
        manifest = freeze_manifest(context)
        if not self._bulkhead.try_enter():
            return self._degraded(
                answer_id,
                request_id,
                search,
                manifest,
                DegradedReason.GENERATOR_BUSY,
                "all generation slots are in use; showing search results",
            )
        try:
            generation = GenerationRequest(
                question=request.search.query,
                evidence=prompt_evidence(manifest),
                max_output_tokens=self._limits.max_output_tokens,
            )
            try:
                async with asyncio.timeout(self._limits.generator_deadline_s):
                    candidate = await self._generator.generate(generation)
            except TimeoutError:
                return self._degraded(
                    answer_id,
                    request_id,
                    search,
                    manifest,
                    DegradedReason.GENERATOR_TIMEOUT,
                    f"the generator did not answer within {self._limits.generator_deadline_s:g} s",
                )
            except InvalidGeneratorOutput as exc:
                return self._degraded(
                    answer_id,
                    request_id,
                    search,
                    manifest,
                    DegradedReason.INVALID_OUTPUT,
                    _describe(exc),
                )
            except Exception as exc:  # any other generator failure degrades too
                return self._degraded(
                    answer_id,
                    request_id,
                    search,
                    manifest,
                    DegradedReason.GENERATOR_ERROR,
                    _describe(exc),
                )
        finally:
            self._bulkhead.leave()

        verdict = validate_candidate(candidate.payload, manifest, self._limits)
        if isinstance(verdict, Rejection):
            where = f" (segment {verdict.segment + 1})" if verdict.segment is not None else ""
            return self._degraded(
                answer_id,
                request_id,
                search,
                manifest,
                DegradedReason.INVALID_OUTPUT,
                f"{verdict.reason.value}: {verdict.detail}{where}",
            )
        answer = GroundedAnswer(
            generator=self._generator.name, segments=attribute(verdict, manifest)
        )
        return AnswerResult(
            answer_id=answer_id,
            request_id=request_id,
            search=search,
            answer=answer,
            degraded=None,
            manifest=manifest,
        )

    @staticmethod
    def _degraded(
        answer_id: str,
        request_id: str,
        search: SearchResult,
        manifest: Manifest | None,
        reason: DegradedReason,
        detail: str,
    ) -> AnswerResult:
        return AnswerResult(
            answer_id=answer_id,
            request_id=request_id,
            search=search,
            answer=None,
            degraded=Degraded(reason, detail),
            manifest=manifest,
        )


def attribute(verdict: Accepted, manifest: Manifest) -> tuple[CitedSegment, ...]:
    """Citations from the manifest and stored metadata only; the model supplied just refs."""
    segments: list[CitedSegment] = []
    for segment in verdict.segments:
        citations: list[Citation] = []
        for ref in segment.refs:
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
                    link_state="unavailable",
                    link_href=None,
                )
            )
        segments.append(CitedSegment(text=segment.text, citations=tuple(citations)))
    return tuple(segments)


def _describe(exc: BaseException) -> str:
    # The type and a short message; generators must keep secrets out of their errors.
    message = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
