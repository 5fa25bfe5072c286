"""``AnswerService.answer(on_search=...)``: the search handed over first, once, before
any generation — what the streaming entrypoints send before the proven answer."""

from __future__ import annotations

from citadel.adapters.generators.scripted import ScriptedGenerator, Step, cite_first
from citadel.domain.answer import DegradedReason
from citadel.domain.search import SearchResult
from tests.unit.test_answer_service import ACTOR, request, run, service


def test_the_search_is_handed_over_before_the_generator_is_called() -> None:
    generator = ScriptedGenerator([cite_first])
    _, svc = service(generator)
    seen: list[tuple[SearchResult, int]] = []
    result = run(
        lambda: svc.answer(request(), ACTOR, on_search=lambda s: seen.append((s, generator.calls)))
    )
    assert len(seen) == 1
    search, calls_then = seen[0]
    assert calls_then == 0, "the generator had not been called yet"
    assert generator.calls == 1
    assert search is result.search and search.results
    assert result.answer is not None


def test_without_evidence_the_search_is_still_handed_over() -> None:
    generator = ScriptedGenerator([cite_first])
    _, svc = service(generator)
    seen: list[SearchResult] = []
    result = run(lambda: svc.answer(request("zzqx unmatched words"), ACTOR, on_search=seen.append))
    assert result.degraded is not None and result.degraded.reason is DegradedReason.NO_EVIDENCE
    assert seen == [result.search] and generator.calls == 0


def test_a_failed_generation_hands_over_the_same_search_it_degrades_to() -> None:
    generator = ScriptedGenerator([Step(error=RuntimeError("down"))])
    _, svc = service(generator)
    seen: list[SearchResult] = []
    result = run(lambda: svc.answer(request(), ACTOR, on_search=seen.append))
    assert result.degraded is not None and result.answer is None
    assert seen == [result.search]
