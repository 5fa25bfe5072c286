"""The answerability decision before any answer: the step, and the answer use case with it.

The relevance scorer is the table fake (``tests/fakes/relevance.py``): a test says
which passages answer. Not answerable means the generator is never called and the
search is kept; answerable means the evidence goes to the generator best first; a
failing scorer never costs the answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from citadel.adapters.generators.scripted import ScriptedGenerator, cite_first
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.app.answer import AnswerService
from citadel.app.answer_cache import AnswerCache
from citadel.app.answerability import AnswerabilityStep, Decision, candidate_sentences
from citadel.app.ports import RelevanceScorer
from citadel.app.ports.tracing import Tracer
from citadel.app.search import SearchService
from citadel.domain.answer import Answerability, AnswerResult, DegradedReason
from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence
from citadel.domain.search import Evidence
from tests.fakes.relevance import TableRelevance
from tests.unit.test_answer_service import ACTOR, QUESTION, library, request, run
from tests.unit.test_tracing import by_name, recording

CAPS = "A retry policy caps attempts"
BACKOFF = "Exponential backoff spaces retry attempts"
ADMISSION = "Admission control rejects work early"


def evidence(text: str, number: int) -> ContextEvidence:
    return ContextEvidence(
        Evidence(
            evidence_id=f"ev-{number}",
            source_id="src-1",
            version=1,
            chunk_id=f"chunk-{number}",
            title="Book",
            author="",
            chapter="",
            section="",
            section_path=(),
            page_start=None,
            page_end=None,
            page_label_start=None,
            page_label_end=None,
            score=0.5,
            passage=text,
            content_sha256=f"{number:064x}",
        )
    )


class FailingRelevance:
    name = "failing-relevance/1"

    def __init__(self, error: Exception | None = None, scores: Sequence[float] = ()) -> None:
        self._error = error
        self._scores = list(scores)
        self.calls = 0

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        self.calls += 1
        if self._error is not None:
            raise self._error
        return self._scores


def service(
    generator: ScriptedGenerator,
    scorer: RelevanceScorer | None,
    *,
    threshold: float = 0.5,
    metrics: CountingMetrics | None = None,
    cache: AnswerCache | None = None,
    tracer: Tracer | None = None,
) -> tuple[SearchService, AnswerService]:
    lib = library()
    limits = Limits()
    search = SearchService(lib, lib, limits)
    step = AnswerabilityStep(scorer, threshold) if scorer is not None else None
    return search, AnswerService(
        search,
        generator,
        limits,
        relevance=step,
        metrics=metrics,
        sources=lib,
        cache=cache,
        tracer=tracer,
    )


def ask(svc: AnswerService) -> AnswerResult:
    return run(lambda: svc.answer(request(), ACTOR))


# -- the step ----------------------------------------------------------------------------


def test_the_decision_is_the_best_passage_score_against_the_threshold() -> None:
    scorer = TableRelevance({"one": 0.2, "two": 0.7, "three": 0.4})
    context = [evidence(f"passage {w}", i) for i, w in enumerate(("one", "two", "three"))]
    decision = AnswerabilityStep(scorer, threshold=0.6).decide("q", context)
    assert decision.answerability == Answerability(0.7, 0.6, "table-relevance/1")
    assert decision.answerable
    assert decision.scores == (0.2, 0.7, 0.4)
    assert scorer.calls == [("q", ("passage one", "passage two", "passage three"))]
    below = AnswerabilityStep(scorer, threshold=0.71).decide("q", context)
    assert below.answerability is not None and not below.answerable


def test_only_the_first_passages_are_scored_when_fewer_are_asked_for() -> None:
    scorer = TableRelevance({"one": 0.1, "two": 0.2, "three": 0.9})
    context = [evidence(f"passage {w}", i) for i, w in enumerate(("one", "two", "three"))]
    decision = AnswerabilityStep(scorer, 0.5, passages=2).decide("q", context)
    assert scorer.calls == [("q", ("passage one", "passage two"))]
    assert decision.scores == (0.1, 0.2)
    assert decision.answerability is not None and decision.answerability.score == 0.2
    # Scored passages best first; the one not scored keeps its place after them.
    assert [c.passage for c in decision.ordered(context)] == [
        "passage two",
        "passage one",
        "passage three",
    ]


def test_ordering_is_stable_ties_keep_the_search_order() -> None:
    context = [evidence(f"passage {i}", i) for i in range(4)]
    decision = Decision(Answerability(0.8, 0.5, "s"), (0.3, 0.8, 0.3, 0.8))
    assert [c.evidence_id for c in decision.ordered(context)] == ["ev-1", "ev-3", "ev-0", "ev-2"]


@pytest.mark.parametrize(
    "scorer",
    [
        FailingRelevance(RuntimeError("model file missing")),
        FailingRelevance(scores=[0.9]),  # one score for two passages
        FailingRelevance(scores=[0.9, 1.5]),  # outside [0, 1]
        FailingRelevance(scores=[0.9, float("nan")]),
    ],
    ids=["raises", "wrong-count", "out-of-range", "nan"],
)
def test_a_failing_scorer_decides_nothing_and_is_logged(
    scorer: FailingRelevance, caplog: pytest.LogCaptureFixture
) -> None:
    context = [evidence("passage one", 1), evidence("passage two", 2)]
    with caplog.at_level(logging.WARNING, logger="citadel.answerability"):
        decision = AnswerabilityStep(scorer, 0.5).decide("q", context)
    assert decision == Decision(None)
    assert decision.answerable
    assert [c.evidence_id for c in decision.ordered(context)] == ["ev-1", "ev-2"]
    assert "failing-relevance/1 failed" in caplog.text
    assert "model file missing" not in caplog.text  # the type only: messages may quote


def test_the_step_refuses_a_threshold_outside_zero_one_and_no_passages() -> None:
    with pytest.raises(ValueError, match="threshold"):
        AnswerabilityStep(TableRelevance(), 1.5)
    with pytest.raises(ValueError, match="passage"):
        AnswerabilityStep(TableRelevance(), 0.5, passages=0)


# -- the answer use case -----------------------------------------------------------------


def test_not_answerable_means_no_generator_call_and_the_search_kept() -> None:
    generator = ScriptedGenerator([cite_first])
    metrics = CountingMetrics()
    scorer = TableRelevance({CAPS: 0.3, BACKOFF: 0.1, ADMISSION: 0.2})
    search, svc = service(generator, scorer, threshold=0.5, metrics=metrics)
    result = ask(svc)
    assert generator.calls == 0
    assert result.answer is None
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.NOT_IN_LIBRARY
    assert "closest passages" in result.degraded.detail
    assert "generator was not called" in result.degraded.detail
    assert result.search == search.search(request().search, ACTOR)
    assert result.search.results  # the closest passages are still there
    assert result.answerability == Answerability(0.3, 0.5, "table-relevance/1")
    assert result.manifest is None and result.generation is None
    assert metrics.answers["not_in_library"] == 1
    assert metrics.stages["answerability"] == 1
    assert metrics.answerability_scores == [0.3]


def test_answerable_gives_the_generator_the_best_answering_passage_first() -> None:
    generator = ScriptedGenerator([cite_first])
    scorer = TableRelevance({CAPS: 0.6, BACKOFF: 0.7, ADMISSION: 0.9})
    _, plain = service(ScriptedGenerator([cite_first]), None)
    unscored = ask(plain)
    _, svc = service(generator, scorer, threshold=0.5)
    result = ask(svc)
    assert result.degraded is None and result.answer is not None
    assert result.answerability == Answerability(0.9, 0.5, "table-relevance/1")
    assert generator.calls == 1
    seen = [e.passage for e in generator.requests[0].evidence]
    assert [p.split(" ")[0] for p in seen] == ["Admission", "Exponential", "A"]
    # The same passages as without a scorer, in the scorer's order instead of search's.
    assert unscored.manifest is not None and result.manifest is not None
    assert {e.evidence_id for e in unscored.manifest.entries} == {
        e.evidence_id for e in result.manifest.entries
    }
    assert result.manifest.sha256 != unscored.manifest.sha256
    assert result.manifest.entries[0].ref == "E1"
    assert result.manifest.evidence[0].passage.startswith(ADMISSION)


def test_equal_scores_keep_the_search_order() -> None:
    _, plain = service(ScriptedGenerator([cite_first]), None)
    unscored = ask(plain)
    _, svc = service(ScriptedGenerator([cite_first]), TableRelevance({"": 0.8}))
    result = ask(svc)
    assert unscored.manifest is not None and result.manifest is not None
    assert result.manifest.entries == unscored.manifest.entries
    assert result.answerability is not None and result.answerability.score == 0.8


def test_a_scorer_that_fails_never_costs_the_answer() -> None:
    generator = ScriptedGenerator([cite_first])
    scorer = FailingRelevance(RuntimeError("onnxruntime exploded"))
    metrics = CountingMetrics()
    _, svc = service(generator, scorer, metrics=metrics)
    result = ask(svc)
    assert scorer.calls == 1
    assert result.degraded is None and result.answer is not None
    assert result.answerability is None
    assert generator.calls == 1
    assert metrics.answers["accepted"] == 1 and metrics.answerability_scores == []


def test_without_evidence_the_scorer_is_not_asked() -> None:
    scorer = TableRelevance()
    generator = ScriptedGenerator([cite_first])
    lib = library()
    limits = Limits()
    svc = AnswerService(
        SearchService(lib, lib, limits),
        generator,
        limits,
        relevance=AnswerabilityStep(scorer),
    )
    result = run(lambda: svc.answer(request(minimum_evidence_score=1.0), ACTOR))
    assert result.degraded is not None and result.degraded.reason is DegradedReason.NO_EVIDENCE
    assert result.answerability is None and scorer.calls == [] and generator.calls == 0


def test_a_cached_answer_never_crosses_scorers() -> None:
    cache = AnswerCache()
    generator = ScriptedGenerator([cite_first])

    class OtherRelevance(TableRelevance):
        name = "other-relevance/1"

    same = {"": 0.8}  # every passage alike: the same manifest under both scorers
    _, first = service(generator, TableRelevance(same), cache=cache)
    _, other = service(generator, OtherRelevance(same), cache=cache)
    _, again = service(generator, TableRelevance(same), cache=cache)
    one, two, three = ask(first), ask(other), ask(again)
    assert one.manifest is not None and two.manifest is not None
    assert one.manifest.sha256 == two.manifest.sha256
    assert generator.calls == 2  # the other scorer's answer was generated, not served
    assert two.generation is not None and not two.generation.cached
    assert three.generation is not None and three.generation.cached
    assert three.answerability == one.answerability


def test_the_decision_has_its_own_span_with_its_score() -> None:
    tracer, exporter = recording()
    scorer = TableRelevance({CAPS: 0.3, BACKOFF: 0.1, ADMISSION: 0.2})
    _, svc = service(ScriptedGenerator([cite_first]), scorer, tracer=tracer)
    ask(svc)
    named = by_name(exporter.get_finished_spans())
    attributes = named["answerability"].attributes or {}
    assert attributes["citadel.score"] == 0.3
    assert attributes["citadel.answerable"] is False
    assert (named["answer"].attributes or {})["citadel.outcome"] == "not_in_library"
    assert QUESTION not in str(attributes)


# -- sentences, not whole passages -----------------------------------------------------------


def test_every_passage_is_heard_by_its_best_sentence_and_the_limit_holds() -> None:

    question = "How are missing values tested for in R?"
    passages = [
        "Plots are drawn by high-level functions. Missing values are tested with is.na(x).",
        "Nothing here matches. Neither does this sentence.",
        "In R, missing values print as NA. Tested code runs faster. R is a language.",
    ]
    owners, texts = candidate_sentences(question, passages, 3)
    assert len(texts) == 3 and set(owners) == {0, 1, 2}
    assert texts[owners.index(0)] == "Missing values are tested with is.na(x)."
    owners, texts = candidate_sentences(question, passages, 16)
    assert len(texts) == 7 and len(set(texts)) == 7


def test_a_passage_scores_as_its_best_sentence() -> None:
    scorer = TableRelevance({"is.na": 0.9, "Plots": 0.2})
    step = AnswerabilityStep(scorer, threshold=0.5)
    passage = "Plots are drawn by high-level functions. Missing values are tested with is.na(x)."
    decision = step.decide("How are missing values tested?", [evidence(passage, 1)])
    assert decision.scores == (0.9,)
    assert scorer.calls and all(len(t) < len(passage) for t in scorer.calls[0][1])


def test_an_unset_threshold_is_the_scorers_own_and_a_set_one_wins() -> None:
    from citadel.bootstrap import _answerability
    from citadel.config import Settings

    class Scorer(TableRelevance):
        threshold = 0.23

    unset = _answerability(Settings.from_env({}), Scorer())
    assert unset is not None and unset.threshold == 0.23
    chosen = _answerability(Settings.from_env({"CITADEL_ANSWERABILITY_THRESHOLD": "0.7"}), Scorer())
    assert chosen is not None and chosen.threshold == 0.7
    plain = _answerability(Settings.from_env({}), TableRelevance())  # no threshold of its own
    assert plain is not None and plain.threshold == 0.5
    assert _answerability(Settings.from_env({}), None) is None
