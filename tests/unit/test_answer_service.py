"""The seed's boundary tests, in Python, over the shipped fakes and the real use cases.

Search finds the evidence; generation may only add a summary of it. Whatever the
generator does — fail, time out, be busy, cite what it was not given — the
search result stands; only the caller's cancellation or the request's own
deadline is an error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.scripted import ScriptedGenerator, Step, cite_first
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.app.answer import AnswerRequest, AnswerService
from citadel.app.errors import InvalidRequest, RequestDeadlineExceeded
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import AnswerGenerator
from citadel.app.search import SearchService
from citadel.domain.answer import AnswerResult, DegradedReason, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.rewrite import QueryRewrite
from citadel.domain.search import SearchRequest, SearchResult
from citadel.domain.source import Source
from citadel.domain.users import Actor
from tests.builders import Passage, commit, operator

T = TypeVar("T")

TENANT = "acme"
ACTOR = Actor(user_id="reader-1", tenant=TENANT)
QUESTION = "Why should retry attempts be bounded?"
SLOW_S = 1.0


def reader(number: int) -> Actor:
    """A reader of TENANT in a group of their own: no two share an access context."""
    return Actor(user_id=f"reader-{number}", tenant=TENANT, groups=frozenset({f"team-{number}"}))


def run(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await factory()

    return asyncio.run(main())


def library() -> InMemoryLibrary:
    """Two books; three passages about retries in three different sections."""
    lib = InMemoryLibrary()
    commit(
        lib,
        Source(source_id="src-7f3a", tenant=TENANT, title="Reliable Service Design"),
        [
            Passage(
                "A retry policy caps attempts so transient failures do not create an "
                "unbounded request.",
                chapter="4 Failure Handling",
                section="4.2 Retry Budgets",
                page=48,
                label="42",
            ),
            Passage(
                "Exponential backoff spaces retry attempts so that a struggling service can "
                "recover before the next attempts arrive.",
                chapter="4 Failure Handling",
                section="4.3 Backoff",
                page=49,
                label="43",
            ),
        ],
    )
    commit(
        lib,
        Source(source_id="src-91bc", tenant=TENANT, title="Queueing in Practice"),
        [
            Passage(
                "Admission control rejects work early instead of letting retry storms build "
                "queues that never drain.",
                chapter="2 Load",
                section="2.1 Admission",
                page=13,
                label="7",
                page_end=14,
                label_end="8",
            ),
        ],
    )
    return lib


def service(
    generator: AnswerGenerator, limits: Limits | None = None, lib: InMemoryLibrary | None = None
) -> tuple[SearchService, AnswerService]:
    limits = limits or Limits()
    lib = lib if lib is not None else library()
    search = SearchService(lib, lib, limits)
    return search, AnswerService(search, generator, limits)


def request(query: str = QUESTION, minimum_evidence_score: float = 0.0) -> AnswerRequest:
    return AnswerRequest(SearchRequest(query=query, limit=10), minimum_evidence_score)


def answer(
    generator: AnswerGenerator, limits: Limits | None = None, **kwargs: object
) -> tuple[AnswerResult, SearchResult]:
    """Answer QUESTION, and also search it directly to compare what the caller kept."""
    search, svc = service(generator, limits)
    result = run(lambda: svc.answer(request(), ACTOR, **kwargs))  # type: ignore[arg-type]
    return result, search.search(request().search, ACTOR)


def segments(*items: tuple[str, list[object]]) -> dict[str, object]:
    return {"segments": [{"text": text, "evidence_ids": refs} for text, refs in items]}


async def eventually(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("condition not met in time")
        await asyncio.sleep(0.002)


def assert_search_kept(result: AnswerResult, direct: SearchResult) -> None:
    assert result.answer is None
    assert result.degraded is not None
    assert result.search == direct
    assert len(result.search.results) == 3


# -- no evidence -------------------------------------------------------------------


def test_no_evidence_means_the_generator_is_never_called() -> None:
    generator = ScriptedGenerator([Step(payload=segments(("Invented.", ["E1"])))])
    _, svc = service(generator)
    result = run(lambda: svc.answer(request("zebra xylophone"), ACTOR))
    assert generator.calls == 0
    assert result.answer is None
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.NO_EVIDENCE
    assert result.search.results == ()
    assert result.manifest is None


def test_evidence_refused_by_selection_also_keeps_the_generator_idle() -> None:
    # Search finds passages, but every one is over the per-passage byte limit.
    generator = ScriptedGenerator([Step(payload=segments(("Invented.", ["E1"])))])
    result, direct = answer(generator, Limits(max_passage_bytes=16))
    assert generator.calls == 0
    assert_search_kept(result, direct)
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.NO_EVIDENCE


def test_another_tenant_sees_no_evidence() -> None:
    generator = ScriptedGenerator([Step(payload=segments(("Invented.", ["E1"])))])
    _, svc = service(generator)
    outsider = Actor(user_id="reader-2", tenant="other")
    result = run(lambda: svc.answer(request(), outsider))
    assert generator.calls == 0
    assert result.search.results == ()
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.NO_EVIDENCE


# -- generation fails: search is kept, the answer omitted ---------------------------


@pytest.mark.parametrize(
    ("step", "reason", "detail"),
    [
        pytest.param(
            Step(error=RuntimeError("provider failed")),
            DegradedReason.GENERATOR_ERROR,
            "RuntimeError: provider failed",
            id="provider error",
        ),
        pytest.param(
            Step(error=ConnectionResetError()),
            DegradedReason.GENERATOR_ERROR,
            "ConnectionResetError",
            id="provider error without message",
        ),
        pytest.param(
            Step(payload=segments(("unsupported", ["evidence-yy"]))),
            DegradedReason.INVALID_OUTPUT,
            "unknown_ref",
            id="unknown ref",
        ),
        pytest.param(
            Step(payload=segments(("unsupported", ["E9"]))),
            DegradedReason.INVALID_OUTPUT,
            "unknown_ref",
            id="ref outside the manifest",
        ),
        pytest.param(
            Step(payload=segments(("duplicate", ["E1", "E1"]))),
            DegradedReason.INVALID_OUTPUT,
            "duplicate_ref",
            id="repeated ref",
        ),
        pytest.param(
            Step(payload=None),
            DegradedReason.INVALID_OUTPUT,
            "not_an_object",
            id="no payload",
        ),
        pytest.param(
            Step(payload=segments(("See https://evil.example now.", ["E1"]))),
            DegradedReason.INVALID_OUTPUT,
            "url_in_text",
            id="url in text",
        ),
    ],
)
def test_generation_failures_keep_search_and_omit_the_answer(
    step: Step, reason: DegradedReason, detail: str
) -> None:
    generator = ScriptedGenerator([step])
    result, direct = answer(generator)
    # An invalid candidate gets one regeneration (it fails the same way); errors get none.
    assert generator.calls == (2 if reason is DegradedReason.INVALID_OUTPUT else 1)
    assert_search_kept(result, direct)
    assert result.degraded is not None
    assert result.degraded.reason is reason
    assert detail in result.degraded.detail
    assert result.manifest is not None  # frozen before generation, kept for the audit


def test_citing_a_real_evidence_id_instead_of_a_ref_is_rejected() -> None:
    # The model cannot know evidence ids; if it guesses one, it is still not a ref.
    search, _ = service(ScriptedGenerator())
    real_id = search.search(request().search, ACTOR).results[0].evidence_id
    generator = ScriptedGenerator([Step(payload=segments(("Guessed.", [real_id])))])
    result, direct = answer(generator)
    assert_search_kept(result, direct)
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.INVALID_OUTPUT
    assert "unknown_ref" in result.degraded.detail


@pytest.mark.parametrize(
    ("payload", "limits"),
    [
        pytest.param(segments(("large", ["E1"])), Limits(max_answer_bytes=4), id="oversized"),
        pytest.param(segments(("ok", ["E1"]), ("bad", ["unknown"])), Limits(), id="mixed validity"),
        pytest.param(
            segments(("ok", ["E1"]), ("ok", ["E2"]), ("bad\u202e", ["E3"])),
            Limits(),
            id="mixed: bidi override in the last segment",
        ),
    ],
)
def test_oversized_or_mixed_validity_output_is_rejected_whole(
    payload: object, limits: Limits
) -> None:
    generator = ScriptedGenerator([Step(payload=payload)])
    result, direct = answer(generator, dataclasses.replace(limits, max_repairs=0))
    assert generator.calls == 1
    assert_search_kept(result, direct)
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.INVALID_OUTPUT


# -- deadlines and cancellation ------------------------------------------------------


def test_the_callers_cancellation_is_an_error_not_a_degraded_success() -> None:
    generator = ScriptedGenerator([Step(payload=segments(("Slow.", ["E1"])), delay_s=30)])
    _, svc = service(generator, Limits(max_concurrent_generations=1))

    async def scenario() -> None:
        task = asyncio.create_task(svc.answer(request(), ACTOR))
        await eventually(lambda: generator.in_flight == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert generator.in_flight == 0

    started = time.monotonic()
    run(scenario)
    assert time.monotonic() - started < 5


def test_a_cancelled_request_gives_its_generation_slot_back() -> None:
    generator = ScriptedGenerator([Step(delay_s=30), cite_first])
    _, svc = service(generator, Limits(max_concurrent_generations=1))

    async def scenario() -> AnswerResult:
        task = asyncio.create_task(svc.answer(request(), ACTOR))
        await eventually(lambda: generator.in_flight == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await svc.answer(request(), ACTOR)

    result = run(scenario)
    assert result.degraded is None, result.degraded
    assert generator.calls == 2


def test_the_request_deadline_is_an_error_even_inside_generation() -> None:
    generator = ScriptedGenerator([Step(payload=segments(("Slow.", ["E1"])), delay_s=30)])
    _, svc = service(generator, Limits(generator_deadline_s=60))
    started = time.monotonic()
    with pytest.raises(RequestDeadlineExceeded):
        run(lambda: svc.answer(request(), ACTOR, deadline_s=0.05))
    assert time.monotonic() - started < 5
    assert generator.calls == 1
    assert generator.in_flight == 0


def test_a_request_deadline_that_is_not_reached_changes_nothing() -> None:
    generator = ScriptedGenerator([cite_first])
    result, _ = answer(generator, deadline_s=30)
    assert result.answer is not None
    assert result.degraded is None


def test_the_generators_own_deadline_degrades_to_search() -> None:
    generator = ScriptedGenerator([Step(payload=segments(("Slow.", ["E1"])), delay_s=30)])
    started = time.monotonic()
    result, direct = answer(generator, Limits(generator_deadline_s=0.05), deadline_s=30)
    assert time.monotonic() - started < 5
    assert_search_kept(result, direct)
    assert result.degraded is not None
    assert result.degraded.reason is DegradedReason.GENERATOR_TIMEOUT
    assert generator.in_flight == 0


# -- the bulkhead ---------------------------------------------------------------------


def test_a_full_bulkhead_degrades_at_once_without_waiting() -> None:
    slow = Step(payload=segments(("The first answer.", ["E1"])), delay_s=SLOW_S)
    generator = ScriptedGenerator([slow, cite_first])
    search, svc = service(generator, Limits(max_concurrent_generations=1))

    async def scenario() -> tuple[AnswerResult, float, AnswerResult, AnswerResult]:
        first = asyncio.create_task(svc.answer(request(), ACTOR))
        await eventually(lambda: generator.in_flight == 1)
        started = time.monotonic()
        # Another reader's request: identical ones would share the running generation.
        second = await svc.answer(request(), reader(2))
        elapsed = time.monotonic() - started
        done = await first
        third = await svc.answer(request(), reader(3))  # the slot is free again
        return second, elapsed, done, third

    second, elapsed, first, third = run(scenario)
    assert elapsed < SLOW_S / 4, f"the busy request waited {elapsed:.3f} s"
    assert second.degraded is not None
    assert second.degraded.reason is DegradedReason.GENERATOR_BUSY
    assert second.answer is None
    assert second.search == search.search(request().search, reader(2))
    assert first.answer is not None and first.degraded is None
    assert third.answer is not None and third.degraded is None
    assert generator.calls == 2  # the busy request never reached the generator


def test_the_bulkhead_admits_up_to_its_capacity() -> None:
    slow = Step(payload=segments(("Concurrent.", ["E1"])), delay_s=0.2)
    generator = ScriptedGenerator([slow])
    _, svc = service(generator, Limits(max_concurrent_generations=3))

    async def scenario() -> list[AnswerResult]:
        tasks = [asyncio.create_task(svc.answer(request(), reader(i))) for i in range(4)]
        return list(await asyncio.gather(*tasks))

    results = run(scenario)
    reasons = sorted(r.degraded.reason.value if r.degraded else "answered" for r in results)
    assert reasons == ["answered", "answered", "answered", "generator_busy"]
    assert generator.calls == 3


# -- what the generator sees, and what the reader is shown -----------------------------


def test_the_generator_sees_refs_never_evidence_ids() -> None:
    generator = ScriptedGenerator([cite_first])
    result, direct = answer(generator)
    assert generator.calls == 1
    sent: GenerationRequest = generator.requests[0]
    assert sent.question == QUESTION
    assert [p.ref for p in sent.evidence] == ["E1", "E2", "E3"]
    assert result.manifest is not None
    assert [e.ref for e in result.manifest.entries] == ["E1", "E2", "E3"]
    shown = repr(sent)
    for e in direct.results:
        for hidden in (e.evidence_id, e.chunk_id, e.source_id, e.content_sha256):
            assert hidden not in shown
    by_ref = {e.ref: e for e in result.manifest.entries}
    for prompt in sent.evidence:
        evidence = result.manifest.evidence_for(prompt.ref)
        assert evidence is not None
        assert prompt.passage == evidence.passage
        assert by_ref[prompt.ref].evidence_id == evidence.evidence_id


def test_attribution_comes_from_stored_metadata_not_from_the_model() -> None:
    lib = library()

    def lying(request: GenerationRequest) -> object:
        queueing = next(p.ref for p in request.evidence if "Admission" in p.passage)
        return segments(
            (
                'According to "Fake Book", chapter 99, page 1234, retries are unlimited.',
                [queueing],
            )
        )

    generator = ScriptedGenerator([lying])
    _, svc = service(generator, lib=lib)
    result = run(lambda: svc.answer(request(), ACTOR))
    assert result.answer is not None, result.degraded
    [segment] = result.answer.segments
    [citation] = segment.citations

    stored_source = lib.get(TENANT, "src-91bc")
    assert stored_source is not None
    [stored_chunk] = lib.chunks(TENANT, "src-91bc", 1)
    assert citation.evidence_id == stored_chunk.chunk_id
    assert citation.chunk_id == stored_chunk.chunk_id
    assert (citation.source_id, citation.version) == ("src-91bc", 1)
    assert citation.title == stored_source.title == "Queueing in Practice"
    assert citation.chapter == stored_chunk.chapter == "2 Load"
    assert citation.section == stored_chunk.section == "2.1 Admission"
    assert citation.pages == "7–8"  # printed labels, not the physical pages 13–14
    for value in (citation.title, citation.chapter, citation.section, citation.pages):
        assert "Fake" not in value and "99" not in value and "1234" not in value
    # The model's prose is kept as prose; it attributes nothing.
    assert segment.text.startswith("According to")


def test_a_valid_answer_is_accepted() -> None:
    generator = ScriptedGenerator(
        [
            Step(
                payload=segments(
                    ("  Bounded retries stop a request from growing without limit.  ", ["E1"]),
                    ("Backoff and admission control keep load in check.", ["E2", "E3"]),
                )
            )
        ]
    )
    result, direct = answer(generator)
    assert result.degraded is None
    assert result.answer is not None
    assert result.answer.generator == "scripted"
    assert [s.text for s in result.answer.segments] == [
        "Bounded retries stop a request from growing without limit.",
        "Backoff and admission control keep load in check.",
    ]
    assert result.search == direct
    assert result.manifest is not None
    evidence_ids = {e.evidence_id for e in direct.results}
    cited = [c for s in result.answer.segments for c in s.citations]
    assert [c.ref for c in cited] == ["E1", "E2", "E3"]
    for citation in cited:
        entry = result.manifest.entry(citation.ref)
        assert entry is not None
        assert citation.evidence_id == entry.evidence_id
        assert citation.evidence_id in evidence_ids
    assert result.answer_id and result.request_id and result.answer_id != result.request_id


def test_request_id_is_the_callers_when_given() -> None:
    result, _ = answer(ScriptedGenerator([cite_first]), request_id="req-42")
    assert result.request_id == "req-42"


def test_the_request_carries_no_passages_or_citations() -> None:
    assert {f.name for f in dataclasses.fields(AnswerRequest)} == {
        "search",
        "minimum_evidence_score",
        "rewrite",
    }
    # A conversation's rewrite is text only: how the query came from the question.
    assert {f.name for f in dataclasses.fields(QueryRewrite)} == {"question", "query", "kind"}


# -- minimum evidence score --------------------------------------------------------------


def test_minimum_evidence_score_filters_on_the_normalised_score() -> None:
    search, _ = service(ScriptedGenerator())
    results = search.search(request().search, ACTOR).results
    scores = sorted({e.score for e in results}, reverse=True)
    # Calibrated, not relative: the best hit scores what the evidence is worth.
    assert 0.0 < scores[0] <= 1.0
    assert len(scores) >= 2, "the fixture must give distinct scores"
    floor = (scores[0] + scores[1]) / 2
    expected = {e.evidence_id for e in results if e.score >= floor}
    assert 0 < len(expected) < len(results)

    generator = ScriptedGenerator([cite_first])
    _, svc = service(generator)
    result = run(lambda: svc.answer(request(minimum_evidence_score=floor), ACTOR))
    assert result.manifest is not None
    assert {e.evidence_id for e in result.manifest.entries} == expected
    assert len(generator.requests[0].evidence) == len(expected)
    assert result.search.results == results  # the floor narrows the context, not the search


@pytest.mark.parametrize("floor", [-0.1, 1.1])
def test_minimum_evidence_score_outside_0_1_is_a_bad_request(floor: float) -> None:
    with pytest.raises(InvalidRequest):
        request(minimum_evidence_score=floor)


# -- end to end through ingestion ---------------------------------------------------------


def ingested_library(tmp_path: Path) -> InMemoryLibrary:
    lib = InMemoryLibrary()
    ingest = IngestService(lib, FixedClock())
    files = FileDocuments([MarkdownParser(), PlainTextParser()], max_file_bytes=1 << 20)
    book = tmp_path / "retries.md"
    book.write_text(
        "# Reliable Service Design\n\n"
        "## Failure Handling\n\n"
        "### Retry Budgets\n\n"
        "A retry policy caps attempts so that transient failures do not create an "
        "unbounded request. Every retry spends part of a budget that the caller sets.\n\n"
        "### Timeouts\n\n"
        "A timeout bounds how long one attempt may take before the client gives up.\n",
        encoding="utf-8",
    )
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Operators should alert when retry attempts exceed the budget for an hour.\n\n"
        "Unrelated paragraph about coffee machines in the office kitchen.\n",
        encoding="utf-8",
    )
    for path in (book, notes):
        ingest.ingest(files.open(path), IngestOptions(tenant=TENANT), actor=operator(TENANT))
    return lib


def test_extractive_answers_from_ingested_files_pass_validation(tmp_path: Path) -> None:
    lib = ingested_library(tmp_path)
    _, svc = service(ExtractiveGenerator(), lib=lib)
    result = run(lambda: svc.answer(request("How many retry attempts are allowed?"), ACTOR))
    assert result.degraded is None, result.degraded
    assert result.answer is not None
    assert result.answer.generator == "extractive"
    titles = {s.title for s in lib.list(TENANT)}
    assert titles == {"Reliable Service Design", "notes"}
    result_ids = {e.evidence_id for e in result.search.results}
    for segment in result.answer.segments:
        assert segment.citations
        for citation in segment.citations:
            assert citation.evidence_id in result_ids
            assert citation.title in titles
            evidence = next(
                e for e in result.search.results if e.evidence_id == citation.evidence_id
            )
            # The cited sentence is quoted from the passage it cites.
            assert segment.text in " ".join(evidence.passage.split())
