"""The trust metrics as Prometheus exposes them, fed by a real answer with a resolver."""

from __future__ import annotations

import asyncio

from citadel.adapters.generators.scripted import ScriptedGenerator, Step, cite_first
from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.app.answer import AnswerService
from citadel.app.resolver import CitationResolver
from citadel.app.search import SearchService
from citadel.domain.limits import Limits
from citadel.domain.viewer import ViewerSigner
from tests.unit.test_answer_service import ACTOR, library, request, segments


def sample(metrics: PrometheusMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


def test_answers_rejections_resolutions_and_stages_are_counted() -> None:
    metrics = PrometheusMetrics()
    lib = library()
    limits = Limits(max_repairs=0)
    search = SearchService(lib, lib, limits)
    resolver = CitationResolver(lib, lambda url: None, ViewerSigner(b"m" * 32), metrics=metrics)
    generator = ScriptedGenerator([cite_first, Step(payload=segments(("x", ["E9"])))])
    service = AnswerService(search, generator, limits, resolver=resolver, metrics=metrics)
    for _ in range(2):
        asyncio.run(service.answer(request(), ACTOR))
    assert sample(metrics, "citadel_answers_total", outcome="accepted") == 1
    assert sample(metrics, "citadel_answers_total", outcome="invalid_output") == 1
    assert sample(metrics, "citadel_candidate_rejections_total", reason="unknown_ref") == 1
    assert sample(metrics, "citadel_citation_resolutions_total", state="viewer") == 1
    assert sample(metrics, "citadel_fabricated_links_rendered_total") == 0
    for stage in ("search", "selection", "generation", "validation", "resolution"):
        assert sample(metrics, "citadel_stage_seconds_count", stage=stage) >= 1, stage
    text = metrics.exposition().decode()
    assert "citadel_fabricated_links_rendered_total 0.0" in text
    assert "citadel_display_authorization_denials_total 0.0" in text
