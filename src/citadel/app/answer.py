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
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from citadel.app.answer_cache import (
    AnswerCache,
    AnswerKey,
    CachedAnswer,
    Coalescer,
    access_context,
    normalise_question,
)
from citadel.app.audit import AuditService
from citadel.app.circuit import CircuitBreaker, CircuitState
from citadel.app.errors import InvalidGeneratorOutput, InvalidRequest, RequestDeadlineExceeded
from citadel.app.ports import AnswerGenerator, Retrieval, TrustMetrics
from citadel.app.resolver import CitationResolver, NullMetrics
from citadel.domain.answer import (
    AnswerResult,
    Degraded,
    DegradedReason,
    GenerationRecord,
    GenerationRequest,
    GroundedAnswer,
    LinkState,
    attribute,
)
from citadel.domain.audit import CitationAudit
from citadel.domain.limits import Limits
from citadel.domain.manifest import (
    Manifest,
    canonical_json,
    freeze_manifest,
    prompt_evidence,
    sha256_hex,
)
from citadel.domain.search import SearchRequest, SearchResult
from citadel.domain.selection import select_evidence
from citadel.domain.users import Actor
from citadel.domain.validation import Accepted, validate_candidate


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """Everything a caller may say: a search and a score floor. No passages, no citations."""

    search: SearchRequest
    minimum_evidence_score: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.minimum_evidence_score <= 1.0:
            raise InvalidRequest("minimum_evidence_score must be between 0 and 1")


class Answering(Protocol):
    """What an entrypoint asks answers of: ``AnswerService`` in process, or a remote service."""

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> AnswerResult:
        """Answer for ``actor``; ``RequestDeadlineExceeded`` when ``deadline_s`` passes."""
        ...


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


class SourceRevisions(Protocol):
    def revisions(self, source_ids: Collection[str]) -> Mapping[str, int]: ...


@dataclass(frozen=True, slots=True)
class _Generated:
    """What one generation (with at most one repair) came to; shared by coalesced callers."""

    verdict: Accepted | None
    degraded: Degraded | None
    record: GenerationRecord


class AnswerService:
    def __init__(
        self,
        search: Retrieval,
        generator: AnswerGenerator,
        limits: Limits,
        *,
        sources: SourceRevisions | None = None,
        cache: AnswerCache | None = None,
        resolver: CitationResolver | None = None,
        audit: AuditService | None = None,
        metrics: TrustMetrics | None = None,
        circuit: CircuitBreaker | None = None,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        if cache is not None and cache.enabled and sources is None:
            raise ValueError("an answer cache needs the source revisions to invalidate it")
        self._search = search
        self._generator = generator
        self._limits = limits
        self._bulkhead = Bulkhead(limits.max_concurrent_generations)
        self._sources = sources
        self._cache = cache if cache is not None and cache.enabled else None
        self._coalescer: Coalescer[_Generated] = Coalescer()
        self._resolver = resolver
        self._audit = audit
        self._metrics = metrics or NullMetrics()
        self._circuit = circuit or CircuitBreaker()
        self._new_id = new_id

    @property
    def generator_name(self) -> str:
        return self._generator.name

    @property
    def generator_circuit(self) -> CircuitState:
        """closed (calls go out), open (answers degrade without a call) or half_open."""
        return self._circuit.state

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
        result = await self._produce(request, actor, request_id)
        if self._resolver is None and self._audit is None:
            self._count(result)
            return result
        return await asyncio.to_thread(self._finish, result, actor)

    def _finish(self, result: AnswerResult, actor: Actor) -> AnswerResult:
        """Resolve the citations for ``actor`` now, then record the answer as shown."""
        if self._resolver is not None:
            result = self._resolver.resolve_answer(result, actor)
        if self._audit is not None:
            resolved = tuple(
                CitationAudit(
                    segment=index,
                    ref=citation.ref,
                    state=citation.link_state.value,
                    authorized=citation.link_state is not LinkState.FORBIDDEN,
                )
                for index, segment in enumerate(result.answer.segments if result.answer else ())
                for citation in segment.citations
            )
            self._audit.record(result, actor, resolved)
        self._count(result)
        return result

    def _count(self, result: AnswerResult) -> None:
        self._metrics.answer("accepted" if result.degraded is None else result.degraded.reason)

    async def _produce(self, request: AnswerRequest, actor: Actor, request_id: str) -> AnswerResult:
        answer_id = self._new_id()
        started = time.perf_counter()
        search = await asyncio.to_thread(self._search.search, request.search, actor)
        selecting = time.perf_counter()
        self._metrics.stage("search", selecting - started)
        context = select_evidence(search.results, self._limits, request.minimum_evidence_score)
        self._metrics.stage("selection", time.perf_counter() - selecting)
        if not context:
            return AnswerResult(
                answer_id=answer_id,
                request_id=request_id,
                search=search,
                answer=None,
                degraded=Degraded(
                    DegradedReason.NO_EVIDENCE,
                    "no passage met the evidence criteria; the generator was not called",
                ),
            )
        manifest = freeze_manifest(context)
        key = AnswerKey(
            question=normalise_question(request.search.query),
            manifest_sha256=manifest.sha256,
            generator=self._generator.name,
            model=self._generator.model,
            prompt_version=self._generator.prompt_version,
            access=access_context(actor),
        )
        revisions: Mapping[str, int] = {}
        if self._cache is not None and self._sources is not None:
            # A store read: off the event loop, like the search.
            revisions = await asyncio.to_thread(
                self._sources.revisions, {e.source_id for e in manifest.entries}
            )
            hit = self._cache.get(key, revisions)
            if hit is not None:
                record = GenerationRecord(
                    generator=self._generator.name,
                    model=hit.model,
                    prompt_version=hit.prompt_version,
                    prompt_sha256=hit.prompt_sha256,
                    raw_sha256=hit.raw_sha256,
                    attempts=0,
                    cached=True,
                )
                return self._result(answer_id, request_id, search, manifest, hit.verdict, record)

        generated, shared = await self._coalescer.run(
            key, lambda: self._generate(request.search.query, manifest, key, revisions)
        )
        record = replace(generated.record, shared=shared)
        if generated.verdict is None:
            assert generated.degraded is not None
            return AnswerResult(
                answer_id=answer_id,
                request_id=request_id,
                search=search,
                answer=None,
                degraded=generated.degraded,
                manifest=manifest,
                generation=record,
            )
        return self._result(answer_id, request_id, search, manifest, generated.verdict, record)

    async def _generate(
        self, question: str, manifest: Manifest, key: AnswerKey, revisions: Mapping[str, int]
    ) -> _Generated:
        """Generate, validate, and repair once if allowed; every failure becomes a value."""
        record = GenerationRecord(
            generator=self._generator.name,
            model=self._generator.model,
            prompt_version=self._generator.prompt_version,
        )
        if not self._bulkhead.try_enter():
            return _Generated(
                None,
                Degraded(
                    DegradedReason.GENERATOR_BUSY,
                    "all generation slots are in use; showing search results",
                ),
                record,
            )
        if not self._circuit.allow():
            self._bulkhead.leave()
            return _Generated(
                None,
                Degraded(
                    DegradedReason.GENERATOR_ERROR,
                    "the provider failed repeatedly; it is not called for another"
                    f" {self._circuit.retry_in():.0f} s (circuit open)",
                ),
                record,
            )
        started = time.perf_counter()
        try:
            generated = await self._attempts(question, manifest, record)
        finally:
            self._circuit.release()
            self._bulkhead.leave()
            self._metrics.stage("generation", time.perf_counter() - started)
        if generated.verdict is not None and self._cache is not None:
            self._cache.put(
                key,
                CachedAnswer(
                    verdict=generated.verdict,
                    model=generated.record.model,
                    prompt_version=generated.record.prompt_version,
                    prompt_sha256=generated.record.prompt_sha256,
                    raw_sha256=generated.record.raw_sha256,
                    revisions=dict(revisions),
                ),
            )
        return generated

    async def _attempts(
        self, question: str, manifest: Manifest, record: GenerationRecord
    ) -> _Generated:
        loop = asyncio.get_running_loop()
        deadline_s = self._limits.generator_deadline_s
        deadline = loop.time() + deadline_s
        repair = ""
        rejected: Degraded | None = None
        for attempt in range(1, self._limits.max_repairs + 2):
            started = loop.time()
            if rejected is not None and deadline - started < started - (deadline - deadline_s):
                # The first attempt took more than half the budget: a repair would not fit.
                return _Generated(None, _after(rejected, "no time was left to regenerate"), record)
            request = GenerationRequest(
                question=question,
                evidence=prompt_evidence(manifest),
                max_output_tokens=self._limits.max_output_tokens,
                repair=repair,
            )
            record = replace(record, attempts=attempt)
            try:
                async with asyncio.timeout_at(deadline):
                    candidate = await self._generator.generate(request)
            except TimeoutError:
                self._circuit.failed()
                if rejected is not None:
                    return _Generated(
                        None, _after(rejected, "the regeneration did not finish in time"), record
                    )
                return _Generated(
                    None,
                    Degraded(
                        DegradedReason.GENERATOR_TIMEOUT,
                        f"the generator did not answer within {deadline_s:g} s",
                    ),
                    record,
                )
            except InvalidGeneratorOutput as exc:
                self._circuit.succeeded()  # the provider answered; the model's output was bad
                rejected = Degraded(DegradedReason.INVALID_OUTPUT, _describe(exc))
                self._metrics.rejection(exc.reason)
                repair = repair_note(exc.reason)
                continue
            except Exception as exc:  # any other generator failure degrades, unrepaired
                self._circuit.failed()
                return _Generated(
                    None, Degraded(DegradedReason.GENERATOR_ERROR, _describe(exc)), record
                )
            self._circuit.succeeded()
            record = replace(
                record,
                model=candidate.model or record.model,
                prompt_version=candidate.prompt_version or record.prompt_version,
                prompt_sha256=candidate.prompt_sha256,
                raw_sha256=sha256_hex(candidate.raw),
                output=_payload_json(candidate.payload),
            )
            validating = time.perf_counter()
            verdict = validate_candidate(candidate.payload, manifest, self._limits)
            self._metrics.stage("validation", time.perf_counter() - validating)
            if isinstance(verdict, Accepted):
                return _Generated(verdict, None, record)
            where = f" (segment {verdict.segment + 1})" if verdict.segment is not None else ""
            rejected = Degraded(
                DegradedReason.INVALID_OUTPUT, f"{verdict.reason.value}: {verdict.detail}{where}"
            )
            self._metrics.rejection(verdict.reason.value)
            repair = repair_note(verdict.reason.value)
        assert rejected is not None
        if self._limits.max_repairs:
            rejected = _after(rejected, "the regeneration was refused too")
        return _Generated(None, rejected, record)

    def _result(
        self,
        answer_id: str,
        request_id: str,
        search: SearchResult,
        manifest: Manifest,
        verdict: Accepted,
        record: GenerationRecord,
    ) -> AnswerResult:
        return AnswerResult(
            answer_id=answer_id,
            request_id=request_id,
            search=search,
            answer=GroundedAnswer(
                generator=self._generator.name, segments=attribute(verdict.segments, manifest)
            ),
            degraded=None,
            manifest=manifest,
            generation=record,
        )


def repair_note(reason: str) -> str:
    """The application's words to a generator whose last candidate was refused.

    Only a stable reason code goes in, never text from the model: a repair
    must not become a channel for the output it rejects.
    """
    return (
        f"Your previous answer was rejected by the application (reason: {reason}). "
        "Answer again with one JSON object exactly as specified: plain-text segments, "
        "each citing one or more of the given refs copied exactly, and nothing else."
    )


def _payload_json(payload: object) -> str:
    try:
        return canonical_json(payload)
    except (TypeError, ValueError):  # not JSON (a scripted test payload): nothing to replay
        return ""


def _after(degraded: Degraded, what: str) -> Degraded:
    return Degraded(degraded.reason, f"{degraded.detail}; {what}")


def _describe(exc: BaseException) -> str:
    # The type and a short message; generators must keep secrets out of their errors.
    message = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
