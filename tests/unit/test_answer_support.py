"""The support step over the real answer service: every validated segment is checked
against the passages it cites, and the policy decides what the reader gets.

``label`` shows each segment with its label; ``drop`` removes unsupported ones and
marks the answer limited; ``refuse`` degrades to the search results. An unsupported
candidate earns the one bounded regeneration on the same frozen manifest; if that
fails, the policy decides on the first candidate.
"""

from __future__ import annotations

import pytest

from citadel.adapters.generators.scripted import ScriptedGenerator, Step
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.app.answer import AnswerService
from citadel.app.answer_cache import AnswerCache
from citadel.app.search import SearchService
from citadel.app.support import SupportStep
from citadel.domain.answer import AnswerResult, DegradedReason, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.support import SupportLabel, SupportPolicy
from citadel.entrypoints.cli.text import answer_text
from citadel.entrypoints.present.shapes import answer_json
from tests.fakes.support import TableSupport
from tests.unit.test_answer_service import ACTOR, QUESTION, library, request, run

INVENTED = "Retries are unlimited in every well designed service."


def quote_and_invent(request: GenerationRequest) -> object:
    """A candidate with one quotation of E1 and one sentence no passage says."""
    first = request.evidence[0]
    return {
        "segments": [
            {"text": first.passage, "evidence_ids": [first.ref]},
            {"text": INVENTED, "evidence_ids": [request.evidence[1].ref]},
        ]
    }


def quote_only(request: GenerationRequest) -> object:
    first = request.evidence[0]
    return {"segments": [{"text": first.passage, "evidence_ids": [first.ref]}]}


def invent_only(request: GenerationRequest) -> object:
    return {"segments": [{"text": INVENTED, "evidence_ids": [request.evidence[0].ref]}]}


CHECKER_LABELS = {INVENTED: SupportLabel.UNSUPPORTED}


def build(
    generator: ScriptedGenerator,
    policy: SupportPolicy,
    *,
    cache: AnswerCache | None = None,
    lib: InMemoryLibrary | None = None,
) -> tuple[AnswerService, CountingMetrics, TableSupport]:
    limits = Limits()
    lib = lib if lib is not None else library()
    metrics = CountingMetrics()
    checker = TableSupport(CHECKER_LABELS)
    svc = AnswerService(
        SearchService(lib, lib, limits),
        generator,
        limits,
        sources=lib,
        cache=cache,
        metrics=metrics,
        support=SupportStep(checker, policy, metrics),
    )
    return svc, metrics, checker


def ask(svc: AnswerService) -> AnswerResult:
    return run(lambda: svc.answer(request(QUESTION), ACTOR))


def labels(result: AnswerResult) -> list[str | None]:
    assert result.answer is not None
    return [s.label.value if s.label else None for s in result.answer.segments]


def test_label_shows_every_segment_with_its_label_and_the_quotations_span() -> None:
    generator = ScriptedGenerator([quote_and_invent])
    svc, metrics, checker = build(generator, SupportPolicy.LABEL)
    result = ask(svc)
    assert labels(result) == ["verbatim", "unsupported"]
    assert generator.calls == 1, "label shows an unsupported segment; it does not regenerate"
    assert result.answer is not None and not result.answer.limited
    quoted = result.answer.segments[0].citations[0].support
    assert quoted is not None and quoted.span is not None and quoted.score == 1.0
    passage = checker.pairs[0][1]
    assert passage[quoted.span[0] : quoted.span[1]] == result.answer.segments[0].text
    # The check saw the passage the model saw, not anything the model said of it.
    assert checker.pairs[1] == (INVENTED, generator.requests[0].evidence[1].passage)
    assert metrics.supports == {"verbatim": 1, "unsupported": 1}


def test_drop_regenerates_once_then_removes_what_is_still_unsupported() -> None:
    generator = ScriptedGenerator([quote_and_invent, quote_and_invent])
    svc, metrics, _ = build(generator, SupportPolicy.DROP)
    result = ask(svc)
    assert generator.calls == 2
    first, second = generator.requests
    assert first.evidence == second.evidence, "the repair must see the frozen manifest"
    assert "unsupported" in second.repair
    assert labels(result) == ["verbatim"]
    assert result.answer is not None and result.answer.limited
    assert result.generation is not None and result.generation.attempts == 2
    assert metrics.rejections["unsupported"] == 1
    assert metrics.supports == {"verbatim": 1}


def test_a_repair_that_answers_from_the_passages_is_shown_whole() -> None:
    generator = ScriptedGenerator([quote_and_invent, quote_only])
    svc, _, _ = build(generator, SupportPolicy.DROP)
    result = ask(svc)
    assert labels(result) == ["verbatim"]
    assert result.answer is not None and not result.answer.limited


def test_a_failed_repair_leaves_the_decision_to_the_first_candidate() -> None:
    generator = ScriptedGenerator([quote_and_invent, Step(error=RuntimeError("provider down"))])
    svc, _, _ = build(generator, SupportPolicy.DROP)
    result = ask(svc)
    assert generator.calls == 2
    assert labels(result) == ["verbatim"]
    assert result.answer is not None and result.answer.limited


def test_drop_with_nothing_supported_left_degrades_to_search_results() -> None:
    generator = ScriptedGenerator([invent_only])
    svc, _, _ = build(generator, SupportPolicy.DROP)
    result = ask(svc)
    assert result.answer is None and result.degraded is not None
    assert result.degraded.reason is DegradedReason.UNSUPPORTED
    assert len(result.search.results) == 3, "the reader still gets the search results"


def test_refuse_degrades_an_answer_with_any_unsupported_segment() -> None:
    generator = ScriptedGenerator([quote_and_invent])
    svc, metrics, _ = build(generator, SupportPolicy.REFUSE)
    result = ask(svc)
    assert generator.calls == 2, "refuse also gets its one regeneration"
    assert result.degraded is not None and result.degraded.reason is DegradedReason.UNSUPPORTED
    assert "segment(s) 2" in result.degraded.detail
    assert metrics.answers["unsupported"] == 1
    assert result.search.results


def test_refuse_shows_an_answer_its_passages_support() -> None:
    generator = ScriptedGenerator([quote_only])
    svc, _, _ = build(generator, SupportPolicy.REFUSE)
    assert labels(ask(svc)) == ["verbatim"]


PARAPHRASE = "Clients retry within a budget."


def quote_and_paraphrase(request: GenerationRequest) -> object:
    """A quotation of E1 and a sentence the checker finds supported but not quoted."""
    first = request.evidence[0]
    return {
        "segments": [
            {"text": first.passage, "evidence_ids": [first.ref]},
            {"text": PARAPHRASE, "evidence_ids": [first.ref]},
        ]
    }


def test_a_quoting_generator_shows_only_what_it_quoted_whatever_the_policy() -> None:
    # The extractive generator's segments are quotations by construction: one that is
    # not (a stored unit edited by hand, a cutting bug) is dropped even under "label",
    # never shown as the book's words. A model's paraphrase is shown, labelled.
    for policy in SupportPolicy:
        generator = ScriptedGenerator([quote_and_paraphrase] * 2, quotes=True)
        result = ask(build(generator, policy)[0])
        if policy is SupportPolicy.REFUSE:
            assert result.degraded is not None, policy
            assert result.degraded.reason is DegradedReason.UNSUPPORTED
            assert "no cited passage quotes segment(s) 2" in result.degraded.detail
        else:
            assert labels(result) == ["verbatim"], policy
            assert result.answer is not None and result.answer.limited
    model = ScriptedGenerator([quote_and_paraphrase])
    assert labels(ask(build(model, SupportPolicy.LABEL)[0])) == ["verbatim", "supported"]


def test_a_quoting_generator_with_nothing_quoted_degrades_to_search_results() -> None:
    generator = ScriptedGenerator([invent_only], quotes=True)
    result = ask(build(generator, SupportPolicy.LABEL)[0])
    assert result.answer is None and result.degraded is not None
    assert result.degraded.reason is DegradedReason.UNSUPPORTED
    assert "quotes segment(s) 1" in result.degraded.detail and result.search.results


def test_a_cached_answer_keeps_its_labels_and_a_new_policy_is_a_new_answer() -> None:
    lib = library()
    cache = AnswerCache(16, 60)
    generator = ScriptedGenerator([quote_and_invent])
    svc, _, _ = build(generator, SupportPolicy.LABEL, cache=cache, lib=lib)
    first, again = ask(svc), ask(svc)
    assert again.generation is not None and again.generation.cached
    assert labels(again) == labels(first) == ["verbatim", "unsupported"]
    assert again.answer is not None and first.answer is not None
    assert again.answer.segments[0].citations[0].support == (
        first.answer.segments[0].citations[0].support
    )
    # The same cache under another policy must not serve the labelled answer.
    other, _, _ = build(generator, SupportPolicy.DROP, cache=cache, lib=lib)
    dropped = ask(other)
    assert dropped.generation is not None and not dropped.generation.cached
    assert labels(dropped) == ["verbatim"]


def test_every_entrypoint_shape_carries_the_labels() -> None:
    generator = ScriptedGenerator([quote_and_invent, quote_and_invent])
    svc, _, _ = build(generator, SupportPolicy.DROP)
    result = ask(svc)
    shape = answer_json(result)["answer"]
    assert shape["limited"] is True
    (segment,) = shape["segments"]
    assert segment["support"] == "verbatim"
    support = segment["citations"][0]["support"]
    assert support["label"] == "verbatim" and support["score"] == 1.0
    assert support["span"]["end"] - support["span"]["start"] == len(segment["text"])
    text = answer_text(result)
    assert "[1: verbatim]" in text
    assert "Limited answer" in text


class _Broken:
    name = "broken/1"

    def check(self, pairs: object, *, budget: object = None) -> list[object]:
        raise RuntimeError("onnxruntime fell over")


@pytest.mark.parametrize("policy", list(SupportPolicy))
def test_a_checker_that_fails_mid_answer_degrades_it_to_the_search_results(
    policy: SupportPolicy,
) -> None:
    """Found by review: an exception from the checker used to leave the answer call."""
    limits = Limits()
    lib = library()
    metrics = CountingMetrics()
    svc = AnswerService(
        SearchService(lib, lib, limits),
        ScriptedGenerator([quote_and_invent]),
        limits,
        sources=lib,
        metrics=metrics,
        support=SupportStep(_Broken(), policy, metrics),  # type: ignore[arg-type]
    )
    result = ask(svc)
    assert result.answer is None and result.degraded is not None
    assert result.degraded.reason is DegradedReason.UNSUPPORTED
    assert "support check failed (RuntimeError)" in result.degraded.detail
    assert "onnxruntime" not in result.degraded.detail
    assert result.search.results  # the reader still gets the search results
    assert metrics.rejections.get("support_error") == 1
