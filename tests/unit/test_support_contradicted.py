"""The ``contradicted`` label: a cited passage that says otherwise.

It ranks below ``unsupported`` and vetoes: a segment one citation contradicts is
``contradicted`` whatever its other citations say. ``drop`` removes it and ``refuse``
degrades the answer, as for ``unsupported``; every interface and the audit record
carry it under its own name.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.generators.scripted import ScriptedGenerator
from citadel.adapters.memory import InMemoryAuditLog
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.app.answer import AnswerService
from citadel.app.audit import AuditService
from citadel.app.search import SearchService
from citadel.app.support import SupportStep
from citadel.domain.answer import AnswerResult, DegradedReason, GenerationRequest
from citadel.domain.audit import AuditRecord
from citadel.domain.limits import Limits
from citadel.domain.support import LABEL_ORDER, NOT_BACKED, SupportLabel, SupportPolicy, strongest
from citadel.entrypoints.cli.text import answer_text
from citadel.entrypoints.http.admin_replies import AuditCitation
from citadel.entrypoints.http.replies import AnswerReply
from citadel.entrypoints.mcp.markdown import ask_markdown
from citadel.entrypoints.mcp.presenting import ask_output
from citadel.entrypoints.present.shapes import answer_json
from tests.fakes.support import TableSupport
from tests.unit.test_answer_service import ACTOR, QUESTION, library, request

WRONG = "Retry policies never cap the number of attempts a client makes."
BOTH = "Bounded retries keep transient failures from piling up."

S, P, U, C, V = (
    SupportLabel.SUPPORTED,
    SupportLabel.PARTIAL,
    SupportLabel.UNSUPPORTED,
    SupportLabel.CONTRADICTED,
    SupportLabel.VERBATIM,
)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([S, C], C),  # one supports, one contradicts: the contradiction wins
        ([C, S], C),
        ([V, C], C),  # even beside a quotation
        ([C], C),
        ([U, C], C),
        ([P, U], P),  # without a contradiction, the best-backed
        ([V, S, P], V),
        ([U], U),
        ([], U),
    ],
)
def test_a_contradiction_vetoes_every_other_citation(
    labels: list[SupportLabel], expected: SupportLabel
) -> None:
    assert strongest(labels) is expected


def test_contradicted_is_the_weakest_label_and_one_the_policies_act_on() -> None:
    assert LABEL_ORDER[-1] is C and LABEL_ORDER.index(C) > LABEL_ORDER.index(U)
    assert {U, C} == NOT_BACKED


def quote_and_contradict(request: GenerationRequest) -> object:
    first, second = request.evidence[0], request.evidence[1]
    return {
        "segments": [
            {"text": first.passage, "evidence_ids": [first.ref]},
            {"text": WRONG, "evidence_ids": [second.ref]},
        ]
    }


def cite_two(request: GenerationRequest) -> object:
    """One segment citing two passages: the table says E1's supports it, E2's does not."""
    refs = [e.ref for e in request.evidence[:2]]
    return {"segments": [{"text": BOTH, "evidence_ids": refs}]}


def checker() -> TableSupport:
    # "caps" is in the first passage of ``library()``, "backoff" in the second.
    return TableSupport(
        {WRONG: C},
        by_passage={(BOTH, "caps"): S, (BOTH, "backoff"): C},
    )


class World:
    def __init__(self, policy: SupportPolicy, steps: list[object]) -> None:
        limits = Limits()
        self.lib = library()
        self.checker = checker()
        self.metrics = CountingMetrics()
        self.audit = AuditService(
            InMemoryAuditLog(),
            FixedClock("2026-12-02T00:00:00+00:00"),
            limits,
            support=self.checker,
            chunks=self.lib,
        )
        self.generator = ScriptedGenerator(steps)  # type: ignore[arg-type]
        self.service = AnswerService(
            SearchService(self.lib, self.lib, limits),
            self.generator,
            limits,
            sources=self.lib,
            audit=self.audit,
            metrics=self.metrics,
            support=SupportStep(self.checker, policy, self.metrics),
        )

    def ask(self) -> AnswerResult:
        return asyncio.run(self.service.answer(request(QUESTION), ACTOR))


def labels(result: AnswerResult) -> list[str | None]:
    assert result.answer is not None
    return [s.label.value if s.label else None for s in result.answer.segments]


def test_label_shows_a_contradicted_segment_under_its_own_name_everywhere() -> None:
    world = World(SupportPolicy.LABEL, [quote_and_contradict])
    result = world.ask()
    assert labels(result) == ["verbatim", "contradicted"]
    assert world.generator.calls == 1, "label does not regenerate"
    assert world.metrics.supports == {"verbatim": 1, "contradicted": 1}
    shape = answer_json(result)["answer"]["segments"][1]
    assert shape["support"] == "contradicted"
    assert shape["citations"][0]["support"]["label"] == "contradicted"
    assert shape["citations"][0]["support"]["span"] is None
    assert "[2: contradicted]" in answer_text(result)
    mcp = ask_output(result)
    assert mcp.answer is not None and mcp.answer.segments[1].support == "contradicted"
    assert ", contradicted" in ask_markdown(mcp)


def test_drop_regenerates_once_then_removes_the_contradicted_segment() -> None:
    world = World(SupportPolicy.DROP, [quote_and_contradict, quote_and_contradict])
    result = world.ask()
    assert world.generator.calls == 2
    assert "unsupported" in world.generator.requests[1].repair
    assert labels(result) == ["verbatim"]
    assert result.answer is not None and result.answer.limited


def test_refuse_degrades_an_answer_with_a_contradicted_segment_and_says_which() -> None:
    world = World(SupportPolicy.REFUSE, [quote_and_contradict, quote_and_contradict])
    result = world.ask()
    assert result.degraded is not None and result.degraded.reason is DegradedReason.UNSUPPORTED
    assert "a cited passage contradicts segment(s) 2" in result.degraded.detail
    assert "no cited passage supports" not in result.degraded.detail
    assert result.search.results, "the reader still gets the search results"


def test_a_segment_one_citation_supports_and_another_contradicts_is_contradicted() -> None:
    shown = World(SupportPolicy.LABEL, [cite_two]).ask()
    assert labels(shown) == ["contradicted"]
    assert shown.answer is not None
    per_citation = [c.support.label for c in shown.answer.segments[0].citations if c.support]
    assert sorted(per_citation) == [C, S], "each footnote keeps its own label"
    for policy in (SupportPolicy.DROP, SupportPolicy.REFUSE):
        result = World(policy, [cite_two, cite_two]).ask()
        assert result.answer is None and result.degraded is not None, policy
        assert result.degraded.reason is DegradedReason.UNSUPPORTED


@pytest.mark.parametrize("policy", list(SupportPolicy))
def test_the_audit_record_keeps_contradicted_and_replay_holds(policy: SupportPolicy) -> None:
    world = World(policy, [quote_and_contradict, quote_and_contradict])
    result = world.ask()
    record = world.audit.show(result.answer_id, ACTOR)
    assert AuditRecord.from_json(record.to_json()) == record
    if policy is SupportPolicy.LABEL:
        assert [c.support for c in record.citations] == ["verbatim", "contradicted"]
    report = world.audit.replay(result.answer_id, ACTOR)
    assert report.holds, report


def test_a_contradicted_label_forged_into_supported_does_not_replay() -> None:
    world = World(SupportPolicy.LABEL, [quote_and_contradict])
    result = world.ask()
    world.checker._labels[WRONG] = S  # the checker now disagrees with the record
    report = world.audit.replay(result.answer_id, ACTOR)
    assert not report.holds and report.replayed == "accepted with other support labels"


def test_the_segment_counter_starts_every_label_at_zero() -> None:
    exposition = PrometheusMetrics().exposition().decode()
    for label in SupportLabel:
        assert f'citadel_answer_segments_total{{label="{label.value}"}} 0.0' in exposition


def test_the_http_replies_carry_contradicted() -> None:
    """/v1/answer's and the audit endpoint's response models accept the label."""
    world = World(SupportPolicy.LABEL, [quote_and_contradict])
    result = world.ask()
    reply = AnswerReply.model_validate(answer_json(result))
    assert reply.answer is not None
    segment = reply.answer.segments[1]
    assert segment.support is C and segment.citations[0].support is not None
    assert segment.citations[0].support.label is C
    record = json.loads(world.audit.show(result.answer_id, ACTOR).to_json())
    audited = [AuditCitation.model_validate(c) for c in record["citations"]]
    assert [c.support.label for c in audited if c.support] == [V, C]
