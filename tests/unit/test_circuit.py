"""The generator's circuit breaker, alone and inside the answer service."""

from __future__ import annotations

import asyncio

from citadel.adapters.generators.scripted import ScriptedGenerator, Step, cite_first
from citadel.app.answer import AnswerService
from citadel.app.circuit import CircuitBreaker, CircuitState
from citadel.app.search import SearchService
from citadel.domain.answer import DegradedReason
from citadel.domain.limits import Limits
from tests.unit.test_answer_service import ACTOR, library, request, segments


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_it_opens_after_consecutive_failures_and_half_opens_after_the_cooldown() -> None:
    clock = Clock()
    circuit = CircuitBreaker(threshold=3, cooldown_s=10, clock=clock)
    for _ in range(2):
        assert circuit.allow()
        circuit.failed()
    assert circuit.state is CircuitState.CLOSED
    circuit.failed()
    assert circuit.state is CircuitState.OPEN and not circuit.allow()
    assert circuit.retry_in() == 10
    clock.now = 10
    assert circuit.state is CircuitState.HALF_OPEN
    assert circuit.allow() and not circuit.allow(), "one trial at a time"
    circuit.failed()
    assert circuit.state is CircuitState.OPEN, "a failed trial opens it again"
    clock.now = 20
    assert circuit.allow()
    circuit.succeeded()
    assert circuit.state is CircuitState.CLOSED and circuit.allow()


def test_a_success_resets_the_count() -> None:
    circuit = CircuitBreaker(threshold=2)
    circuit.failed()
    circuit.succeeded()
    circuit.failed()
    assert circuit.state is CircuitState.CLOSED


def test_the_answer_service_stops_calling_a_failing_provider() -> None:
    clock = Clock()
    generator = ScriptedGenerator([Step(error=ConnectionResetError())] * 2 + [cite_first])
    lib = library()
    limits = Limits()
    service = AnswerService(
        SearchService(lib, lib, limits),
        generator,
        limits,
        circuit=CircuitBreaker(threshold=2, cooldown_s=30, clock=clock),
    )

    def ask() -> object:
        return asyncio.run(service.answer(request(), ACTOR))

    ask(), ask()
    assert service.generator_circuit is CircuitState.OPEN
    skipped = ask()
    assert generator.calls == 2, "an open circuit makes no call"
    assert skipped.degraded.reason is DegradedReason.GENERATOR_ERROR  # type: ignore[attr-defined]
    assert "circuit open" in skipped.degraded.detail  # type: ignore[attr-defined]
    assert skipped.search.results  # type: ignore[attr-defined]
    clock.now = 30
    answered = ask()
    assert answered.answer is not None  # type: ignore[attr-defined]
    assert service.generator_circuit is CircuitState.CLOSED


def test_refused_candidates_do_not_open_the_circuit() -> None:
    generator = ScriptedGenerator([Step(payload=segments(("x", ["E9"])))])
    lib = library()
    limits = Limits(max_repairs=0)
    service = AnswerService(
        SearchService(lib, lib, limits), generator, limits, circuit=CircuitBreaker(threshold=1)
    )
    asyncio.run(service.answer(request(), ACTOR))
    assert service.generator_circuit is CircuitState.CLOSED
