"""Answer use case: search, select, freeze, generate, validate — or degrade to search.

The generator is a candidate writer. It gets a closed, bounded evidence set
under refs it cannot map to anything else; the application validates its
output atomically and builds attribution from stored metadata. Any failure of
generation keeps the search result; only the caller's cancellation or the
request's own deadline is an error.

This module is the orchestration, stage by stage: search (``app.search``),
select (``domain.selection``), the answerability decision (``app.answerability``),
freeze (``domain.manifest``), the answer cache
and coalescing (``app.answer_cache``), guarded generation with validation and
repair (``app.generation``), attribution (``domain.answer``), resolution for the
reader (``app.resolver``) and the audit record (``app.audit``).
"""

from __future__ import annotations

import asyncio
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
from citadel.app.answerability import AnswerabilityStep, Decision, not_in_library
from citadel.app.audit import AuditService
from citadel.app.circuit import CircuitBreaker, CircuitState
from citadel.app.errors import InvalidRequest, RequestDeadlineExceeded
from citadel.app.generation import GenerationOutcome, GuardedGenerator
from citadel.app.ports import AnswerGenerator, Retrieval, TrustMetrics
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.app.resolver import CitationResolver, NullMetrics
from citadel.app.support import SupportStep
from citadel.domain.answer import (
    AnswerResult,
    Degraded,
    DegradedReason,
    GenerationRecord,
    GroundedAnswer,
    attribute,
)
from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence, Manifest, freeze_manifest
from citadel.domain.rewrite import QueryRewrite
from citadel.domain.search import SearchRequest, SearchResult
from citadel.domain.selection import select_evidence
from citadel.domain.users import Actor

SearchSeen = Callable[[SearchResult], None]
"""Told the search result as soon as search and selection finish, before any generation."""


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """Everything a caller may say: a search and a score floor. No passages, no citations."""

    search: SearchRequest
    minimum_evidence_score: float = 0.0
    rewrite: QueryRewrite | None = None
    """A conversation's turn: how ``search.query`` came from the question as asked
    (``app.conversations``); kept on the result and in its audit record."""

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


def _new_id() -> str:
    return uuid.uuid4().hex


class SourceRevisions(Protocol):
    def revisions(
        self, source_ids: Collection[str], tenant: str | None = None
    ) -> Mapping[str, int]: ...


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
        support: SupportStep | None = None,
        relevance: AnswerabilityStep | None = None,
        new_id: Callable[[], str] = _new_id,
        tracer: Tracer | None = None,
        near_top: float | None = None,
    ) -> None:
        if cache is not None and cache.enabled and sources is None:
            raise ValueError("an answer cache needs the source revisions to invalidate it")
        self._search = search
        self._generator = generator
        self._limits = limits
        self._near_top = near_top  # FusionPolicy.near_top: kept before diversity
        self._sources = sources
        self._cache = cache if cache is not None and cache.enabled else None
        self._coalescer: Coalescer[GenerationOutcome] = Coalescer()
        self._resolver = resolver
        self._audit = audit
        self._metrics = metrics or NullMetrics()
        self._tracer = tracer or NullTracer()
        self._generation = GuardedGenerator(
            generator, limits, self._metrics, circuit or CircuitBreaker(), support, self._tracer
        )
        self._support = support
        self._relevance = relevance
        self._new_id = new_id

    @property
    def generator_name(self) -> str:
        return self._generator.name

    @property
    def generator_circuit(self) -> CircuitState:
        """closed (calls go out), open (answers degrade without a call) or half_open."""
        return self._generation.circuit_state

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
        on_search: SearchSeen | None = None,
    ) -> AnswerResult:
        """Answer for ``actor``; raises ``RequestDeadlineExceeded`` if ``deadline_s`` passes.

        ``on_search``, if given, is called once with the search result the answer is
        built from, as soon as search finishes and before the generator is called
        (a streaming entrypoint shows the passages at once). It sees only what the
        returned result holds in ``search``; nothing the generator wrote reaches the
        caller before validation, which is this use case's, for every entrypoint."""
        request_id = request_id or self._new_id()
        with self._tracer.span("answer", generator=self._generator.name) as span:
            try:
                async with asyncio.timeout(deadline_s):
                    result = await self._answer(request, actor, request_id, on_search)
            except TimeoutError as exc:
                raise RequestDeadlineExceeded("the request's deadline passed") from exc
            degraded, record = result.degraded, result.generation
            span.set(
                outcome="accepted" if degraded is None else degraded.reason.value,
                cached=record is not None and record.cached,
                # A coalesced answer's generation span is in the trace of the one it joined.
                shared=record is not None and record.shared,
            )
            return result

    async def _answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        request_id: str,
        on_search: SearchSeen | None = None,
    ) -> AnswerResult:
        result = await self._produce(request, actor, request_id, on_search)
        if request.rewrite is not None:
            result = replace(result, rewrite=request.rewrite)
        if self._resolver is None and self._audit is None:
            self._count(result)
            return result
        return await asyncio.to_thread(self._finish, result, actor)

    def _finish(self, result: AnswerResult, actor: Actor) -> AnswerResult:
        """Resolve the citations for ``actor`` now, then record the answer as shown."""
        if self._resolver is not None:
            result = self._resolver.resolve_answer(result, actor)
        if self._audit is not None:
            with self._tracer.span("audit"):
                self._audit.record(result, actor)
        self._count(result)
        return result

    def _count(self, result: AnswerResult) -> None:
        self._metrics.answer("accepted" if result.degraded is None else result.degraded.reason)
        for segment in result.answer.segments if result.answer is not None else ():
            label = segment.label
            if label is not None:
                self._metrics.support(label.value)

    async def _produce(
        self,
        request: AnswerRequest,
        actor: Actor,
        request_id: str,
        on_search: SearchSeen | None = None,
    ) -> AnswerResult:
        answer_id = self._new_id()
        search, context = await self._search_and_select(request, actor)
        if on_search is not None:
            on_search(search)
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
        seen = tuple(e.passage for e in search.results)
        decision = await self._decide(request.search.query, context, seen)
        answerability = decision.answerability if decision is not None else None
        if decision is not None and not decision.answerable:
            assert answerability is not None
            return AnswerResult(
                answer_id=answer_id,
                request_id=request_id,
                search=search,
                answer=None,
                degraded=not_in_library(answerability),
                answerability=answerability,
            )
        if decision is not None and self._relevance is not None and self._relevance.orders:
            # The passage that answers best first: the generator reads E1 first.
            context = decision.ordered(context)
        result = await self._generated(request, actor, answer_id, request_id, search, context)
        return replace(result, answerability=answerability) if answerability else result

    async def _decide(
        self, question: str, context: tuple[ContextEvidence, ...], seen: tuple[str, ...]
    ) -> Decision | None:
        """The answerability decision on the selected evidence; None without a scorer."""
        if self._relevance is None:
            return None
        started = time.perf_counter()
        with self._tracer.span("answerability", passages=len(context)) as span:
            # The scorer runs a model: off the event loop, like the search.
            decision = await asyncio.to_thread(self._relevance.decide, question, context, seen)
            decided = decision.answerability
            span.set(decided=decided is not None, answerable=decision.answerable)
            if decided is not None:
                span.set(score=round(decided.score, 4))
        self._metrics.stage("answerability", time.perf_counter() - started)
        if decided is not None:
            self._metrics.answerability(decided.score)
        return decision

    async def _generated(
        self,
        request: AnswerRequest,
        actor: Actor,
        answer_id: str,
        request_id: str,
        search: SearchResult,
        context: tuple[ContextEvidence, ...],
    ) -> AnswerResult:
        """Freeze ``context``, then the cached answer or a guarded generation."""
        manifest = freeze_manifest(context)
        key = AnswerKey(
            question=normalise_question(request.search.query),
            manifest_sha256=manifest.sha256,
            generator=self._generator.name,
            model=self._generator.model,
            prompt_version=self._generator.prompt_version,
            access=access_context(actor),
            support=self._support.identity if self._support is not None else "",
            relevance=self._relevance.scorer_name if self._relevance is not None else "",
        )
        revisions: Mapping[str, int] = {}
        if self._cache is not None and self._sources is not None:
            # A store read: off the event loop, like the search.
            revisions = await asyncio.to_thread(
                self._sources.revisions, {e.source_id for e in manifest.entries}, actor.tenant
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
                    support_checker=self._support.checker_name if self._support else "",
                    support_policy=self._support.policy.value if self._support else "",
                    judged=hit.judged,
                )
                return self._result(
                    answer_id,
                    request_id,
                    search,
                    manifest,
                    GenerationOutcome(hit.verdict, None, record, hit.supports, hit.limited),
                )

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
        return self._result(
            answer_id, request_id, search, manifest, replace(generated, record=record)
        )

    async def _search_and_select(
        self, request: AnswerRequest, actor: Actor
    ) -> tuple[SearchResult, tuple[ContextEvidence, ...]]:
        """The search for ``actor`` and the closed evidence set chosen from it."""
        started = time.perf_counter()
        search = await asyncio.to_thread(self._search.search, request.search, actor)
        selecting = time.perf_counter()
        self._metrics.stage("search", selecting - started)
        with self._tracer.span("selection", candidates=len(search.results)) as span:
            context = select_evidence(
                search.results, self._limits, request.minimum_evidence_score, self._near_top
            )
            span.set(selected=len(context))
        self._metrics.stage("selection", time.perf_counter() - selecting)
        return search, context

    async def _generate(
        self, question: str, manifest: Manifest, key: AnswerKey, revisions: Mapping[str, int]
    ) -> GenerationOutcome:
        """The coalesced work: one guarded generation, its accepted answer cached."""
        generated = await self._generation.generate(question, manifest)
        if generated.verdict is not None and generated.cacheable and self._cache is not None:
            self._cache.put(
                key,
                CachedAnswer(
                    verdict=generated.verdict,
                    model=generated.record.model,
                    prompt_version=generated.record.prompt_version,
                    prompt_sha256=generated.record.prompt_sha256,
                    raw_sha256=generated.record.raw_sha256,
                    revisions=dict(revisions),
                    supports=generated.supports,
                    limited=generated.limited,
                    judged=generated.record.judged,
                ),
            )
        return generated

    def _result(
        self,
        answer_id: str,
        request_id: str,
        search: SearchResult,
        manifest: Manifest,
        outcome: GenerationOutcome,
    ) -> AnswerResult:
        assert outcome.verdict is not None
        return AnswerResult(
            answer_id=answer_id,
            request_id=request_id,
            search=search,
            answer=GroundedAnswer(
                generator=self._generator.name,
                segments=attribute(outcome.verdict.segments, manifest, outcome.supports),
                limited=outcome.limited,
            ),
            degraded=None,
            manifest=manifest,
            generation=outcome.record,
        )
