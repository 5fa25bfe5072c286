"""One contract for the TrustMetrics port, run against every adapter (the counting fake included).

The counters as ``citadel.app.ports.TrustMetrics`` describes them: every call
counts once, under its own label only; each value the application emits is
accepted; counting starts at zero and two instances count apart. Each adapter
is read through a ``Probe`` (how to read a count back from it): a new adapter
joins by adding its name and its probe to the ``probe`` fixture.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from citadel.adapters.generators.scripted import ScriptedGenerator, Step, cite_first
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.app.answer import AnswerService
from citadel.app.ports import TrustMetrics
from citadel.app.resolver import CitationResolver
from citadel.app.search import SearchService
from citadel.domain.answer import DegradedReason, LinkState
from citadel.domain.limits import Limits
from citadel.domain.validation import RejectionReason
from citadel.domain.viewer import ViewerSigner
from tests.unit.test_answer_service import ACTOR, library, request, segments

KINDS = ("answer", "rejection", "resolution", "display_denial", "fabricated_link", "stage")
"""Every TrustMetrics method; the four with a label take it as their argument."""

OUTCOMES = ("accepted", *(r.value for r in DegradedReason))
REJECTIONS = (*(r.value for r in RejectionReason), "malformed_json", "oversized")
STATES = tuple(s.value for s in LinkState)
STAGES = ("search", "selection", "generation", "validation", "resolution")


@dataclass(frozen=True)
class Probe:
    """An adapter and how to read back how often ``kind`` was counted under ``label``."""

    metrics: TrustMetrics
    count: Callable[[str, str], float]


def counting_probe() -> Probe:
    metrics = CountingMetrics()

    def count(kind: str, label: str) -> float:
        counters = {
            "answer": metrics.answers,
            "rejection": metrics.rejections,
            "resolution": metrics.resolutions,
            "stage": metrics.stages,
        }
        if kind == "display_denial":
            return metrics.denials
        if kind == "fabricated_link":
            return metrics.fabricated
        return counters[kind][label]

    return Probe(metrics, count)


_PROMETHEUS = {
    "answer": ("citadel_answers_total", "outcome"),
    "rejection": ("citadel_candidate_rejections_total", "reason"),
    "resolution": ("citadel_citation_resolutions_total", "state"),
    "display_denial": ("citadel_display_authorization_denials_total", ""),
    "fabricated_link": ("citadel_fabricated_links_rendered_total", ""),
    "stage": ("citadel_stage_seconds_count", "stage"),
}


def prometheus_probe() -> Probe:
    metrics = PrometheusMetrics()

    def count(kind: str, label: str) -> float:
        name, label_name = _PROMETHEUS[kind]
        labels = {label_name: label} if label_name else {}
        return metrics.registry.get_sample_value(name, labels) or 0.0

    return Probe(metrics, count)


PROBES: dict[str, Callable[[], Probe]] = {
    "counting": counting_probe,
    "prometheus": prometheus_probe,
}


@pytest.fixture(params=sorted(PROBES))
def probe(request: pytest.FixtureRequest) -> Probe:
    return PROBES[request.param]()


def call(metrics: TrustMetrics, kind: str, label: str, seconds: float = 0.01) -> None:
    if kind == "answer":
        metrics.answer(label)
    elif kind == "rejection":
        metrics.rejection(label)
    elif kind == "resolution":
        metrics.resolution(label)
    elif kind == "display_denial":
        metrics.display_denial()
    elif kind == "fabricated_link":
        metrics.fabricated_link()
    else:
        metrics.stage(label, seconds)


LABELLED = [
    *(("answer", v) for v in OUTCOMES),
    *(("rejection", v) for v in REJECTIONS),
    *(("resolution", v) for v in STATES),
    *(("stage", v) for v in STAGES),
    ("display_denial", ""),
    ("fabricated_link", ""),
]


def test_counting_starts_at_zero(probe: Probe) -> None:
    for kind, label in LABELLED:
        assert probe.count(kind, label) == 0, (kind, label)


@pytest.mark.parametrize(("kind", "label"), LABELLED)
def test_each_call_counts_once_under_its_own_label_only(
    probe: Probe, kind: str, label: str
) -> None:
    call(probe.metrics, kind, label)
    call(probe.metrics, kind, label)
    assert probe.count(kind, label) == 2
    for other_kind, other_label in LABELLED:
        if (other_kind, other_label) != (kind, label):
            assert probe.count(other_kind, other_label) == 0, (other_kind, other_label)


@pytest.mark.parametrize("seconds", [0.0, 1e-7, 0.3, 45.0, 3600.0])
def test_a_stage_counts_one_observation_whatever_it_took(probe: Probe, seconds: float) -> None:
    probe.metrics.stage("generation", seconds)
    assert probe.count("stage", "generation") == 1


def test_two_instances_count_apart() -> None:
    for make in PROBES.values():
        first, second = make(), make()
        first.metrics.answer("accepted")
        first.metrics.fabricated_link()
        assert first.count("answer", "accepted") == 1
        assert second.count("answer", "accepted") == 0
        assert second.count("fabricated_link", "") == 0


def test_an_answer_through_the_service_is_counted_at_every_stage(probe: Probe) -> None:
    lib = library()
    limits = Limits(max_repairs=0)
    resolver = CitationResolver(
        lib, lambda url: None, ViewerSigner(b"m" * 32), metrics=probe.metrics
    )
    generator = ScriptedGenerator([cite_first, Step(payload=segments(("x", ["E9"])))])
    service = AnswerService(
        SearchService(lib, lib, limits),
        generator,
        limits,
        resolver=resolver,
        metrics=probe.metrics,
    )
    for _ in range(2):
        asyncio.run(service.answer(request(), ACTOR))
    assert probe.count("answer", "accepted") == 1
    assert probe.count("answer", "invalid_output") == 1
    assert probe.count("rejection", "unknown_ref") == 1
    assert probe.count("resolution", "viewer") == 1
    assert probe.count("fabricated_link", "") == 0
    for stage in STAGES:
        assert probe.count("stage", stage) >= 1, stage


def _answerability_observations(metrics: TrustMetrics) -> float:
    if isinstance(metrics, CountingMetrics):
        return len(metrics.answerability_scores)
    assert isinstance(metrics, PrometheusMetrics)
    return metrics.registry.get_sample_value("citadel_answerability_score_count") or 0.0


@pytest.mark.parametrize("score", [0.0, 0.125, 0.5, 1.0])
def test_an_answerability_score_is_one_observation(probe: Probe, score: float) -> None:
    assert _answerability_observations(probe.metrics) == 0
    probe.metrics.answerability(score)
    assert _answerability_observations(probe.metrics) == 1
    for kind, label in LABELLED:
        assert probe.count(kind, label) == 0, (kind, label)
