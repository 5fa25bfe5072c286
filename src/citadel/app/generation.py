"""Guarded generation: the generator called behind a bulkhead and a circuit breaker,
within its own deadline, its candidate validated against the frozen manifest and
refused candidates repaired at most ``Limits.max_repairs`` times.

Every failure comes back as a value (a ``Degraded`` reason with the generation's
record), never as an exception: the answer service then shows the search result.
Only cancellation — the caller's, or the request's own deadline — propagates.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, replace

from citadel.app.circuit import CircuitBreaker, CircuitState
from citadel.app.errors import InvalidGeneratorOutput
from citadel.app.ports import AnswerGenerator, TrustMetrics
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.app.support import Checked, SupportStep, SupportVerdict, manifest_passages
from citadel.domain.answer import Degraded, DegradedReason, GenerationRecord, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.manifest import Manifest, canonical_json, prompt_evidence, sha256_hex
from citadel.domain.support import Support, SupportPolicy
from citadel.domain.validation import Accepted, validate_candidate


class Bulkhead:
    """A non-blocking cap on concurrent generations: when full, callers degrade at once."""

    def __init__(self, capacity: int) -> None:
        self._slots = threading.BoundedSemaphore(capacity)

    def try_enter(self) -> bool:
        return self._slots.acquire(blocking=False)

    def leave(self) -> None:
        self._slots.release()


@dataclass(frozen=True, slots=True)
class GenerationOutcome:
    """What one generation (with at most ``max_repairs`` repairs) came to: a verdict, or
    why there is none; shared by coalesced callers."""

    verdict: Accepted | None
    degraded: Degraded | None
    record: GenerationRecord
    supports: tuple[tuple[Support, ...], ...] | None = None
    """One ``Support`` per ref of each accepted segment; ``None`` without a checker."""
    limited: bool = False
    """Unsupported or contradicted segments were removed (the ``drop`` policy)."""
    cacheable: bool = True
    """False when the span-support judge gave no verdicts: the next ask may get them."""


class GuardedGenerator:
    """One generator behind the bulkhead and circuit that protect it; see the module."""

    def __init__(
        self,
        generator: AnswerGenerator,
        limits: Limits,
        metrics: TrustMetrics,
        circuit: CircuitBreaker,
        support: SupportStep | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self._generator = generator
        self._tracer = tracer or NullTracer()
        self._support = support
        self._limits = limits
        self._metrics = metrics
        self._bulkhead = Bulkhead(limits.max_concurrent_generations)
        self._circuit = circuit

    @property
    def circuit_state(self) -> CircuitState:
        return self._circuit.state

    async def generate(self, question: str, manifest: Manifest) -> GenerationOutcome:
        """Generate, validate, and repair if allowed; every failure becomes a value."""
        with self._tracer.span("generation", generator=self._generator.name) as span:
            outcome = await self._guarded(question, manifest)
            degraded = outcome.degraded
            span.set(
                outcome="accepted" if degraded is None else degraded.reason.value,
                attempts=outcome.record.attempts,
                limited=outcome.limited,
            )
            return outcome

    async def _guarded(self, question: str, manifest: Manifest) -> GenerationOutcome:
        record = GenerationRecord(
            generator=self._generator.name,
            model=self._generator.model,
            prompt_version=self._generator.prompt_version,
            support_checker=self._support.checker_name if self._support else "",
            support_policy=self._support.policy.value if self._support else "",
        )
        if not self._bulkhead.try_enter():
            return GenerationOutcome(
                None,
                Degraded(
                    DegradedReason.GENERATOR_BUSY,
                    "all generation slots are in use; showing search results",
                ),
                record,
            )
        if not self._circuit.allow():
            self._bulkhead.leave()
            return GenerationOutcome(
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
            return await self._attempts(question, manifest, record)
        finally:
            self._circuit.release()
            self._bulkhead.leave()
            self._metrics.stage("generation", time.perf_counter() - started)

    async def _attempts(
        self, question: str, manifest: Manifest, record: GenerationRecord
    ) -> GenerationOutcome:
        loop = asyncio.get_running_loop()
        deadline_s = self._limits.generator_deadline_s
        deadline = loop.time() + deadline_s
        repair = ""
        rejected: Degraded | None = None
        # A valid candidate with an unsupported segment, kept while its repair runs: if
        # the repair fails or does not fit, the policy decides on this one instead.
        pending: tuple[SupportVerdict, GenerationRecord] | None = None
        judge_budget = self._support.judge_budget() if self._support else None
        for attempt in range(1, self._limits.max_repairs + 2):
            started = loop.time()
            if rejected is not None and deadline - started < started - (deadline - deadline_s):
                # The first attempt took more than half the budget: a repair would not fit.
                if pending is not None:
                    return self._fallback(pending, record)
                return GenerationOutcome(
                    None, _after(rejected, "no time was left to regenerate"), record
                )
            request = GenerationRequest(
                question=question,
                evidence=prompt_evidence(manifest),
                max_output_tokens=self._limits.max_output_tokens,
                repair=repair,
            )
            record = replace(record, attempts=attempt)
            try:
                # An exception leaving the attempt marks its span with the error's type.
                with self._tracer.span("attempt", attempt=attempt, repair=bool(repair)):
                    async with asyncio.timeout_at(deadline):
                        candidate = await self._generator.generate(request)
            except TimeoutError:
                self._circuit.failed()
                if pending is not None:
                    return self._fallback(pending, record)
                if rejected is not None:
                    return GenerationOutcome(
                        None, _after(rejected, "the regeneration did not finish in time"), record
                    )
                return GenerationOutcome(
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
                if pending is not None:
                    return self._fallback(pending, record)
                return GenerationOutcome(
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
            with self._tracer.span("validation", attempt=attempt) as span:
                verdict = validate_candidate(candidate.payload, manifest, self._limits)
                span.set(
                    outcome="accepted" if isinstance(verdict, Accepted) else verdict.reason.value
                )
            self._metrics.stage("validation", time.perf_counter() - validating)
            if isinstance(verdict, Accepted):
                if self._support is None:
                    return GenerationOutcome(verdict, None, record)
                checker = self._support.checker_name
                with self._tracer.span("support", checker=checker, attempt=attempt) as span:
                    try:
                        found = await asyncio.to_thread(
                            self._support.check,
                            verdict.segments,
                            manifest_passages(manifest),
                            judge_budget,
                        )
                    except Exception as exc:  # unchecked segments are never shown as checked
                        self._metrics.rejection("support_error")
                        return GenerationOutcome(
                            None,
                            Degraded(
                                DegradedReason.UNSUPPORTED,
                                f"the support check failed ({type(exc).__name__});"
                                " showing search results",
                            ),
                            record,
                        )
                    span.set(segments=len(found.segments), unsupported=len(found.unsupported))
                if (
                    found.unsupported
                    and self._support.policy is not SupportPolicy.LABEL
                    and attempt <= self._limits.max_repairs
                ):
                    # The bounded repair, on the same frozen manifest.
                    pending = (found, record)
                    rejected = Degraded(
                        DegradedReason.UNSUPPORTED, "a segment was unsupported or contradicted"
                    )
                    self._metrics.rejection(DegradedReason.UNSUPPORTED.value)
                    repair = repair_note(DegradedReason.UNSUPPORTED.value)
                    continue
                return self._decided(found, record)
            where = f" (segment {verdict.segment + 1})" if verdict.segment is not None else ""
            rejected = Degraded(
                DegradedReason.INVALID_OUTPUT, f"{verdict.reason.value}: {verdict.detail}{where}"
            )
            self._metrics.rejection(verdict.reason.value)
            repair = repair_note(verdict.reason.value)
        assert rejected is not None
        if pending is not None:
            return self._fallback(pending, record)
        if self._limits.max_repairs:
            rejected = _after(rejected, "the regeneration was refused too")
        return GenerationOutcome(None, rejected, record)

    def _fallback(
        self, pending: tuple[SupportVerdict, GenerationRecord], record: GenerationRecord
    ) -> GenerationOutcome:
        """The repair of an unsupported candidate failed or did not fit: decide on it."""
        found, made = pending
        return self._decided(found, replace(made, attempts=record.attempts))

    def _decided(self, found: SupportVerdict, record: GenerationRecord) -> GenerationOutcome:
        """The support policy's decision on a valid candidate, as an outcome."""
        assert self._support is not None
        record = replace(record, judged=found.judged)
        decided = self._support.decide(found, quotes=self._generator.quotes)
        if isinstance(decided, Checked):
            return GenerationOutcome(
                Accepted(decided.segments),
                None,
                record,
                decided.supports,
                decided.limited,
                cacheable=self._support.complete(found),
            )
        return GenerationOutcome(None, decided, record)


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
