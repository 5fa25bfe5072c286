"""One contract for the AnswerGenerator port, run against every generator adapter.

The port (``citadel.app.ports.AnswerGenerator``) writes a candidate from the
closed evidence and is never an authority: it returns a ``Candidate`` or raises,
and the application validates and degrades. Every adapter must also:

- name itself, its model and its prompt version with non-empty strings that do not
  change between calls (they are part of the answer cache key), and record the
  model, prompt version and a prompt hash (empty or sha256 hex) on each candidate;
- given a model that behaves, return a candidate the application's validator accepts
  against the frozen manifest: only refs it was given, inside the answer limits,
  even with the evidence at its own limits;
- pass on what its model wrote without "repairing" it: refs it was not given reach
  the validator as written (or the adapter refuses the output itself);
- never see or emit an evidence id, chunk id, source id or content hash;
- ask its model for no more than ``max_output_tokens``, and pass it the repair note;
- add no randomness of its own: the same request gives the same candidate, in a
  fresh event loop each time (the service may run each request in its own loop);
- serve concurrent requests without mixing them up;
- let the caller cancel it, or the caller's deadline stop it, promptly and as a
  cancellation or timeout (never a success or a swallowed error), leaving no task
  behind; and fail as an ``Exception`` that is not "invalid output" when its
  provider fails.

An adapter joins by adding a ``Harness`` below and its name to ``ADAPTERS`` (a test
fails while a generator of the composition root's table, ``bootstrap/families.py``,
has none). Each harness builds the adapter as that table does, over a model that
behaves (a fake that answers from the evidence it was sent), and where the adapter
has a model at all, over one that writes a given payload, one that hangs and one
that fails. The openai adapter runs against the loopback fake provider
(``tests/fakes/openai_server.py``) over real TCP.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import Protocol

import pytest

from citadel.adapters.generators.scripted import ScriptedGenerator, Step
from citadel.app.errors import InvalidGeneratorOutput
from citadel.app.ports import AnswerGenerator
from citadel.bootstrap.families import GENERATORS
from citadel.config import LlmSettings, Settings
from citadel.domain.answer import Candidate, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence, Manifest, freeze_manifest, prompt_evidence
from citadel.domain.secrets import SecretStr
from citadel.domain.validation import Accepted, Rejection, RejectionReason, validate_candidate
from tests.builders import make_evidence
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Received,
    Reply,
    answer,
    error,
    running_server,
)

LIMITS = Limits()
QUESTION = "Why should retry attempts be bounded?"
SLACK_S = 0.5  # event-loop start-up and the fake provider's thread around a deadline
HANG_S = 30.0  # a model that answers this late has not answered
SHA256_HEX = re.compile(r"[0-9a-f]{64}")

PASSAGES = (
    "A retry policy caps attempts so that transient failures do not create an unbounded "
    "request. Every retry spends part of a budget that the caller sets.",
    "Exponential backoff spaces retry attempts so that a struggling service can recover "
    "before the next attempts arrive.",
    "Admission control rejects work early instead of letting retry storms build queues "
    "that never drain.",
    "A timeout bounds how long one attempt may take, so that retry attempts stay inside "
    "the caller's deadline.",
)


def manifest_of(passages: Sequence[str], tag: str = "a") -> Manifest:
    """A frozen manifest whose ids are distinctive, so any leak of them can be seen."""
    return freeze_manifest(
        [
            ContextEvidence(
                make_evidence(
                    f"evidence-{tag}{i}-5d0c9e",
                    passage,
                    source_id=f"source-{tag}{i}-a4f1",
                    chunk_id=f"chunk-{tag}{i}-77b2",
                )
            )
            for i, passage in enumerate(passages, start=1)
        ]
    )


def request_for(
    manifest: Manifest, *, max_output_tokens: int = LIMITS.max_output_tokens, repair: str = ""
) -> GenerationRequest:
    """What the answer service sends: the generator's view of the manifest, no ids."""
    return GenerationRequest(
        question=QUESTION,
        evidence=prompt_evidence(manifest),
        max_output_tokens=max_output_tokens,
        repair=repair,
    )


def hidden_ids(manifest: Manifest) -> list[str]:
    return [
        value
        for entry in manifest.entries
        for value in (entry.evidence_id, entry.source_id, entry.chunk_id, entry.content_sha256)
    ]


def generate(generator: AnswerGenerator, request: GenerationRequest) -> Candidate:
    return asyncio.run(generator.generate(request))


def failure_of(generator: AnswerGenerator, request: GenerationRequest) -> Exception | None:
    """What ``generate`` raised, as the answer service catches it; None for a candidate."""
    try:
        generate(generator, request)
    except Exception as exc:
        return exc
    return None


def accepted(candidate: Candidate, manifest: Manifest) -> Accepted:
    verdict = validate_candidate(candidate.payload, manifest, LIMITS)
    assert isinstance(verdict, Accepted), verdict
    return verdict


# -- the fake models ----------------------------------------------------------------------


def behaving_answer(evidence: Sequence[tuple[str, str]]) -> dict[str, object]:
    """What a model that behaves writes for (ref, passage) pairs: the first sentence of
    the first and of the last passage, each citing the ref it came from."""
    chosen = [evidence[0]] if len(evidence) == 1 else [evidence[0], evidence[-1]]
    return {
        "segments": [
            {"text": passage.split(". ")[0].rstrip(".") + ".", "evidence_ids": [ref]}
            for ref, passage in chosen
        ]
    }


def behaving_script(request: GenerationRequest) -> object:
    return behaving_answer([(e.ref, e.passage) for e in request.evidence])


def behaving_provider(received: Received) -> Reply:
    """A provider whose model reads the user message (the question and evidence as JSON)."""
    messages = received.json()["messages"]
    sent = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
    return answer(behaving_answer([(e["ref"], e["passage"]) for e in sent["evidence"]]))


# -- one harness per adapter ---------------------------------------------------------------


class Harness(Protocol):
    """Builds one adapter over fake models, and reports what reached them."""

    def behaving(self) -> AnswerGenerator:
        """Over a model that answers from the evidence it is given, citing only its refs."""
        ...

    def writing(self, payload: object) -> AnswerGenerator | None:
        """Over a model that writes exactly ``payload``; None when the adapter has no model."""
        ...

    def hanging(self) -> AnswerGenerator | None:
        """Over a model that takes ``HANG_S`` to answer; None when it has no model."""
        ...

    def failing(self) -> AnswerGenerator | None:
        """Over a provider that fails (not with bad output); None when it has no model."""
        ...

    def sent(self) -> list[str]:
        """Everything the adapter passed to its models so far, as text ([] with no model)."""
        ...

    def output_tokens_asked(self) -> list[int]:
        """The output budget asked of a model on each call ([] when it asks for none)."""
        ...


class ExtractiveHarness:
    """Quotes the evidence itself: no model, so nothing to misbehave, hang or fail."""

    def behaving(self) -> AnswerGenerator:
        return GENERATORS["extractive"](Settings(limits=LIMITS), None, None)

    def writing(self, payload: object) -> AnswerGenerator | None:
        return None

    def hanging(self) -> AnswerGenerator | None:
        return None

    def failing(self) -> AnswerGenerator | None:
        return None

    def sent(self) -> list[str]:
        return []

    def output_tokens_asked(self) -> list[int]:
        return []


class ScriptedHarness:
    """Its "model" is the script; what it was sent is the requests it recorded."""

    def __init__(self) -> None:
        self._made: list[ScriptedGenerator] = []

    def _make(self, step: Step | Callable[[GenerationRequest], object]) -> ScriptedGenerator:
        generator = ScriptedGenerator([step])
        self._made.append(generator)
        return generator

    def behaving(self) -> AnswerGenerator:
        return self._make(behaving_script)

    def writing(self, payload: object) -> AnswerGenerator | None:
        return self._make(Step(payload=payload))

    def hanging(self) -> AnswerGenerator | None:
        return self._make(Step(delay_s=HANG_S))

    def failing(self) -> AnswerGenerator | None:
        return self._make(Step(error=RuntimeError("the scripted provider is down")))

    def sent(self) -> list[str]:
        return [repr(request) for generator in self._made for request in generator.requests]

    def output_tokens_asked(self) -> list[int]:
        return []


class OpenAIHarness:
    """The OpenAI-compatible adapter over real TCP to the loopback fake provider."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self._server = server

    def _make(self, *replies: Reply | Callable[[Received], Reply]) -> AnswerGenerator:
        self._server.script(*replies)
        llm = LlmSettings(self._server.base_url, "fake-model", SecretStr("sk-contract"))
        limits = replace(LIMITS, generator_deadline_s=HANG_S * 2)
        return GENERATORS["openai"](Settings(llm=llm, limits=limits), None, None)

    def behaving(self) -> AnswerGenerator:
        return self._make(behaving_provider)

    def writing(self, payload: object) -> AnswerGenerator | None:
        return self._make(answer(payload))

    def hanging(self) -> AnswerGenerator | None:
        return self._make(Reply(body=b"{}", delay_s=HANG_S))

    def failing(self) -> AnswerGenerator | None:
        return self._make(error(401, "invalid api key"))

    def sent(self) -> list[str]:
        return [received.body.decode("utf-8") for received in self._server.requests]

    def output_tokens_asked(self) -> list[int]:
        return [int(received.json()["max_tokens"]) for received in self._server.requests]


@contextmanager
def extractive() -> Iterator[Harness]:
    yield ExtractiveHarness()


@contextmanager
def scripted() -> Iterator[Harness]:
    yield ScriptedHarness()


@contextmanager
def openai() -> Iterator[Harness]:
    with running_server() as server:
        yield OpenAIHarness(server)
    assert not server.errors, server.errors


ADAPTERS: dict[str, Callable[[], AbstractContextManager[Harness]]] = {
    "extractive": extractive,
    "scripted": scripted,
    "openai": openai,
}


def test_every_generator_the_setting_names_has_a_harness() -> None:
    """A generator registered in the composition root's table is under this contract."""
    assert set(GENERATORS) <= set(ADAPTERS)


@pytest.fixture(params=list(ADAPTERS))
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with ADAPTERS[request.param]() as built:
        yield built


def needs_a_model(generator: AnswerGenerator | None, what: str) -> AnswerGenerator:
    if generator is None:
        pytest.skip(f"this adapter has no model that could {what}")
    return generator


# -- identity and records -------------------------------------------------------------------


def test_it_names_itself_its_model_and_its_prompt_stably(harness: Harness) -> None:
    generator = harness.behaving()
    before = (generator.name, generator.model, generator.prompt_version)
    for value in before:
        assert isinstance(value, str) and value.strip(), before
    generate(generator, request_for(manifest_of(PASSAGES)))
    assert (generator.name, generator.model, generator.prompt_version) == before


def test_a_candidate_records_what_wrote_it(harness: Harness) -> None:
    generator = harness.behaving()
    candidate = generate(generator, request_for(manifest_of(PASSAGES)))
    assert isinstance(candidate, Candidate)
    assert isinstance(candidate.raw, str) and candidate.raw
    json.dumps(candidate.payload)  # any JSON value, and only that
    assert candidate.model == generator.model
    assert candidate.prompt_version == generator.prompt_version
    assert candidate.prompt_sha256 == "" or SHA256_HEX.fullmatch(candidate.prompt_sha256)


# -- what it writes -------------------------------------------------------------------------


def test_a_behaving_model_gives_a_candidate_the_validator_accepts(harness: Harness) -> None:
    manifest = manifest_of(PASSAGES)
    verdict = accepted(generate(harness.behaving(), request_for(manifest)), manifest)
    cited = {ref for segment in verdict.segments for ref in segment.refs}
    assert cited and cited <= manifest.refs()


def test_evidence_at_its_limits_still_gives_an_answer_inside_the_limits(
    harness: Harness,
) -> None:
    # max_evidence passages filling the whole context, with sentences of every length
    # up to far past a segment's limit.
    per_passage = LIMITS.max_context_bytes // LIMITS.max_evidence
    sentences = [
        " ".join(["Bounded retry attempts protect the caller's budget"] * n) + "."
        for n in (1, 3, 9, 27)
    ]
    passages = []
    for i in range(LIMITS.max_evidence):
        text = " ".join(sentences[i % 2 :] + sentences[: i % 2])
        passages.append(text.encode("utf-8")[:per_passage].decode("utf-8", "ignore"))
    manifest = manifest_of(passages)
    accepted(generate(harness.behaving(), request_for(manifest)), manifest)


@pytest.mark.parametrize(
    "refs",
    [["E9"], ["E1", "E7"], [" E1"], ["e1"], ["E01"], ["evidence-a1-5d0c9e"]],
    ids=["unknown", "one-unknown", "padded", "lower-case", "renumbered", "an-evidence-id"],
)
def test_refs_it_was_not_given_reach_the_validator_as_written(
    harness: Harness, refs: list[str]
) -> None:
    payload = {"segments": [{"text": "Retries are bounded by a budget.", "evidence_ids": refs}]}
    generator = needs_a_model(harness.writing(payload), "invent a ref")
    manifest = manifest_of(PASSAGES)
    try:
        candidate = generate(generator, request_for(manifest))
    except InvalidGeneratorOutput:
        return  # the adapter refused the output itself: the answer degrades
    assert candidate.payload == payload  # never "repaired" into a ref it was given
    verdict = validate_candidate(candidate.payload, manifest, LIMITS)
    assert isinstance(verdict, Rejection) and verdict.reason is RejectionReason.UNKNOWN_REF


@pytest.mark.parametrize("payload", [[1, 2], {"answer": "x"}, {"segments": "all of them"}])
def test_output_that_is_no_answer_never_becomes_one(harness: Harness, payload: object) -> None:
    generator = needs_a_model(harness.writing(payload), "write nonsense")
    manifest = manifest_of(PASSAGES)
    try:
        candidate = generate(generator, request_for(manifest))
    except InvalidGeneratorOutput:
        return
    assert candidate.payload == payload
    assert isinstance(validate_candidate(candidate.payload, manifest, LIMITS), Rejection)


# -- what it sees and asks for --------------------------------------------------------------


def test_evidence_ids_never_reach_the_model_or_the_candidate(harness: Harness) -> None:
    manifest = manifest_of(PASSAGES)
    candidate = generate(harness.behaving(), request_for(manifest))
    seen = harness.sent()
    for value in hidden_ids(manifest):
        assert value not in candidate.raw
        assert value not in json.dumps(candidate.payload)
        for text in seen:
            assert value not in text


def test_it_asks_its_model_for_no_more_than_the_output_budget(harness: Harness) -> None:
    manifest = manifest_of(PASSAGES)
    for budget in (1, 64, LIMITS.max_output_tokens):
        generate(harness.behaving(), request_for(manifest, max_output_tokens=budget))
        assert all(asked <= budget for asked in harness.output_tokens_asked()[-1:])
    assert all(asked >= 1 for asked in harness.output_tokens_asked())


def test_the_repair_note_reaches_the_model(harness: Harness) -> None:
    note = "Your previous answer was rejected by the application (reason: unknown_ref)."
    manifest = manifest_of(PASSAGES)
    candidate = generate(harness.behaving(), request_for(manifest, repair=note))
    accepted(candidate, manifest)
    seen = harness.sent()
    assert not seen or note in seen[-1]


# -- determinism and concurrency ------------------------------------------------------------


def test_the_same_request_gives_the_same_candidate(harness: Harness) -> None:
    generator = harness.behaving()
    request = request_for(manifest_of(PASSAGES))
    first, second = generate(generator, request), generate(generator, request)
    assert first == second


def test_concurrent_requests_are_not_mixed_up(harness: Harness) -> None:
    generator = harness.behaving()
    # Manifests of 1..4 passages: an answer that went to the wrong request cites a ref
    # its own manifest does not have, or quotes text its evidence does not hold.
    manifests = [manifest_of(PASSAGES[:n], tag=f"m{n}") for n in range(1, len(PASSAGES) + 1)]

    async def all_at_once() -> list[Candidate]:
        return list(await asyncio.gather(*(generator.generate(request_for(m)) for m in manifests)))

    for manifest, candidate in zip(manifests, asyncio.run(all_at_once()), strict=True):
        verdict = accepted(candidate, manifest)
        passages = " ".join(e.passage for e in manifest.evidence)
        for segment in verdict.segments:
            assert segment.text.rstrip(".") in passages


# -- cancellation, deadlines and failure ----------------------------------------------------


def test_the_caller_can_cancel_it(harness: Harness) -> None:
    generator = needs_a_model(harness.hanging(), "keep the caller waiting")
    request = request_for(manifest_of(PASSAGES))

    async def cancel_soon() -> set[asyncio.Task[object]]:
        task = asyncio.create_task(generator.generate(request))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}

    started = time.monotonic()
    left_behind = asyncio.run(cancel_soon())
    assert time.monotonic() - started < 0.2 + SLACK_S
    assert not left_behind


def test_the_callers_deadline_stops_it_as_a_timeout(harness: Harness) -> None:
    generator = needs_a_model(harness.hanging(), "keep the caller waiting")
    request = request_for(manifest_of(PASSAGES))

    async def with_deadline() -> Candidate:
        async with asyncio.timeout(0.3):
            return await generator.generate(request)

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(with_deadline())
    assert time.monotonic() - started < 0.3 + SLACK_S


def test_a_failing_provider_raises_an_error_that_is_not_invalid_output(
    harness: Harness,
) -> None:
    generator = needs_a_model(harness.failing(), "fail")
    # The service degrades on any Exception (a BaseException would escape it), and
    # invalid output is repaired rather than degraded: a provider failure is neither.
    failure = failure_of(generator, request_for(manifest_of(PASSAGES)))
    assert failure is not None, "a failing provider gave a candidate"
    assert not isinstance(failure, InvalidGeneratorOutput), failure
