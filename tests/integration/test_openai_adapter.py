"""The OpenAI-compatible adapter against a real loopback server, through the real AnswerService.

Every hostile output from issue 5 is played by a scripted HTTP server on
127.0.0.1. Whatever it sends, the search result survives, nothing hostile is
shown, the degraded reason says what happened, and the answer comes back
inside the generator deadline. Two valid answers (JSON mode, and the two-line
fallback after the provider refuses JSON mode) are accepted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import pickle
import shutil
import socket
import ssl
import subprocess
import time
import traceback
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.generators.contract import (
    PROMPT_SHA256,
    PROMPT_VERSION,
    SYSTEM_POLICY,
    TWO_LINE_POLICY,
    TWO_LINE_PROMPT_SHA256,
    GeneratorConfigError,
    GeneratorError,
    InvalidProviderOutput,
    ProviderStatusError,
    ProviderTimeout,
    ProviderUnavailable,
    RequestTooLarge,
)
from citadel.adapters.generators.openai import OpenAICompatibleGenerator
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.app.answer import AnswerRequest, AnswerService
from citadel.app.errors import AppError, RequestDeadlineExceeded
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.search import SearchService
from citadel.domain.answer import AnswerResult, DegradedReason, GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.manifest import PromptEvidence
from citadel.domain.search import SearchRequest, SearchResult
from citadel.domain.secrets import SecretStr
from citadel.domain.text import forbidden_character
from citadel.domain.users import Actor
from tests.builders import operator
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Reply,
    answer,
    completion,
    error,
    running_server,
)

DEADLINE_S = 2.0
SLACK_S = 0.3  # search and event-loop start-up around the generator's own deadline
LIMITS = Limits(generator_deadline_s=DEADLINE_S, max_answer_bytes=4096)
TENANT = "acme"
ACTOR = Actor(user_id="reader-1", tenant=TENANT)
QUESTION = "Why should retry attempts be bounded?"
API_KEY = "sk-citadel-test-5f1e0c7a9b3d42e8"
MIB = 1024 * 1024

# Output the adapter itself refuses (bad JSON, tool calls, ...) reaches the service as
# InvalidProviderOutput, which it reports (after its one repair) as invalid_output.
ADAPTER_OUTPUT = DegradedReason.INVALID_OUTPUT

GOOD = "Bounded retries keep a transient failure from growing into an unbounded request."
GOOD_2 = "Backoff spaces the attempts so a struggling service can recover."
EVIL_URL = "https://evil.example/login"
ALWAYS_HIDDEN = (
    API_KEY,
    EVIL_URL,
    "evil.example",
    "javascript:",
    "<script",
    "\x1b",
    "\u202e",
    "\u200b",
)

BOOK = """\
# Reliable Service Design

## Failure Handling

### Retry Budgets

A retry policy caps attempts so that transient failures do not create an unbounded \
request. Every retry spends part of a budget that the caller sets.

### Backoff

Exponential backoff spaces retry attempts so that a struggling service can recover \
before the next attempts arrive.

### Admission Control

Admission control rejects work early instead of letting retry storms build queues \
that never drain.

### Timeouts

A timeout bounds how long one attempt may take, so that retry attempts stay inside \
the caller's deadline.
"""


# -- fixtures ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> InMemoryLibrary:
    lib = InMemoryLibrary()
    path = tmp_path_factory.mktemp("books") / "reliable-service-design.md"
    path.write_text(BOOK, encoding="utf-8")
    IngestService(lib, FixedClock()).ingest(
        FileDocuments([MarkdownParser()], max_file_bytes=1 << 20).open(path),
        IngestOptions(tenant=TENANT),
        actor=operator(TENANT),
    )
    return lib


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server() as fake:
        yield fake
    assert not fake.errors, fake.errors


def generator_for(server: FakeOpenAIServer, **options: object) -> OpenAICompatibleGenerator:
    return OpenAICompatibleGenerator(
        server.base_url,
        "fake-model",
        SecretStr(API_KEY),
        deadline_s=DEADLINE_S,
        **options,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class Outcome:
    result: AnswerResult
    direct: SearchResult
    elapsed: float


def ask(
    library: InMemoryLibrary, generator: OpenAICompatibleGenerator, limits: Limits = LIMITS
) -> Outcome:
    search = SearchService(library, library, limits)
    service = AnswerService(search, generator, limits)
    request = AnswerRequest(SearchRequest(query=QUESTION, limit=10))
    started = time.monotonic()
    result = asyncio.run(service.answer(request, ACTOR))
    elapsed = time.monotonic() - started
    return Outcome(result, search.search(request.search, ACTOR), elapsed)


def segments(*items: tuple[object, object]) -> dict[str, object]:
    return {"segments": [{"text": text, "evidence_ids": refs} for text, refs in items]}


def assert_search_kept(outcome: Outcome) -> None:
    assert outcome.result.search == outcome.direct
    assert len(outcome.result.search.results) == 4


def assert_nothing_hostile(outcome: Outcome, hidden: tuple[str, ...] = ()) -> None:
    result = outcome.result
    shown = repr(result.answer) + (result.degraded.detail if result.degraded else "")
    for marker in (*ALWAYS_HIDDEN, *hidden):
        assert marker not in shown, f"{marker!r} is shown"
    if result.degraded is not None:
        detail = result.degraded.detail
        assert forbidden_character(detail) is None, detail
        # Errors never carry the prompt: no passage, and not the question.
        assert QUESTION not in detail
        for evidence in outcome.direct.results:
            assert evidence.passage[:40] not in detail


def assert_accepted(outcome: Outcome, refs: list[list[str]]) -> None:
    result = outcome.result
    assert result.degraded is None, result.degraded
    assert result.answer is not None
    assert result.answer.generator == "openai"
    assert_search_kept(outcome)
    assert_nothing_hostile(outcome)
    assert result.manifest is not None
    assert [[c.ref for c in s.citations] for s in result.answer.segments] == refs
    found = {e.evidence_id for e in outcome.direct.results}
    for segment in result.answer.segments:
        for citation in segment.citations:
            entry = result.manifest.entry(citation.ref)
            assert entry is not None
            assert citation.evidence_id == entry.evidence_id
            assert citation.evidence_id in found
    assert outcome.elapsed < DEADLINE_S + SLACK_S


# -- the hostile cases ---------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    replies: tuple[Reply, ...]
    reason: DegradedReason
    detail: str
    hidden: tuple[str, ...] = ()
    requests: int | None = None


def case(
    replies: Reply | tuple[Reply, ...],
    reason: DegradedReason,
    detail: str,
    *,
    hidden: tuple[str, ...] = (),
    requests: int | None = None,
    id: str,
) -> object:
    replies = replies if isinstance(replies, tuple) else (replies,)
    return pytest.param(Case(replies, reason, detail, hidden, requests), id=id)


INVALID = DegradedReason.INVALID_OUTPUT
INTERNAL_ID = "chunk:src-7f3a:v1:0003:" + hashlib.sha256(b"internal").hexdigest()
VALID_ENVELOPE = answer(segments((GOOD, ["E1"]))).body
REFUSE_SCHEMA = error(400, "response_format json_schema is not supported by this model")
REFUSE_OBJECT_SCHEMA = error(400, "response_format: unknown field 'schema'")
REFUSE_OBJECT = error(400, "Invalid value for response_format: json_object is not supported")
REFUSE_ALL = (REFUSE_SCHEMA, REFUSE_OBJECT_SCHEMA, REFUSE_OBJECT)
HTML_PAGE = b"<html><body><h1>502 Bad Gateway</h1><script>alert(1)</script></body></html>"
TWO_LINE_HOSTILE = (
    f"Citations: E1, E9\nAnswer: {GOOD}",
    f"Citations: E1\nAnswer: Read {EVIL_URL} for more.",
)

HOSTILE = [
    # Refs the model made up: the validator, not the adapter, turns them away.
    case(answer(segments((GOOD, ["evidence-yy"]))), INVALID, "unknown_ref", id="fabricated ref"),
    case(answer(segments((GOOD, ["E9"]))), INVALID, "unknown_ref", id="ref past the range"),
    case(
        answer(segments((GOOD, [INTERNAL_ID]))),
        INVALID,
        "unknown_ref",
        hidden=(INTERNAL_ID,),
        id="long internal-looking id",
    ),
    case(
        answer(segments((f"Bounded retries are explained at {EVIL_URL} in depth.", ["E1"]))),
        INVALID,
        "url_in_text",
        id="url in text",
    ),
    case(
        answer(segments((f"See [the retry guide]({EVIL_URL}) for details.", ["E1"]))),
        INVALID,
        "url_in_text",
        id="markdown link",
    ),
    case(
        answer(segments(("Retries are [bounded](javascript:alert(document.cookie)).", ["E1"]))),
        INVALID,
        "url_in_text",
        id="javascript link",
    ),
    case(
        answer(segments(("![chart](retries.png) Retries are bounded.", ["E1"]))),
        INVALID,
        "markup_in_text",
        hidden=("retries.png",),
        id="markdown image",
    ),
    case(
        answer(segments(("<b>Bounded</b> retries keep requests finite.", ["E1"]))),
        INVALID,
        "markup_in_text",
        hidden=("<b>",),
        id="html tag",
    ),
    case(
        answer(segments(("<script>alert(1)</script> Retries are bounded.", ["E1"]))),
        INVALID,
        "markup_in_text",
        id="script tag",
    ),
    case(
        answer({**segments((GOOD, ["E1"])), "url": EVIL_URL}),
        INVALID,
        "unknown_field",
        id="url field beside segments",
    ),
    case(
        answer({"segments": [{"text": GOOD, "evidence_ids": ["E1"], "url": EVIL_URL}]}),
        INVALID,
        "unknown_field",
        id="url field in a segment",
    ),
    case(
        completion(
            '{"segments": [{"text": "Retries are bounded.", "text": "<script>", '
            '"evidence_ids": ["E1"]}]}'
        ),
        ADAPTER_OUTPUT,
        "duplicate_key",
        id="duplicate key in a segment",
    ),
    case(
        completion(
            '{"segments": [{"text": "Retries are bounded.", "evidence_ids": ["E1"]}], '
            '"segments": [{"text": "Retries are unbounded.", "evidence_ids": ["E2"]}]}'
        ),
        ADAPTER_OUTPUT,
        "duplicate_key",
        hidden=("unbounded",),
        id="duplicate segments key",
    ),
    case(
        Reply(body=VALID_ENVELOPE[:-1] + b', "choices": []}'),
        ADAPTER_OUTPUT,
        "duplicate_key",
        id="duplicate key in the envelope",
    ),
    case(answer(segments((GOOD, ["E1", "E1"]))), INVALID, "duplicate_ref", id="repeated ref"),
    case(
        answer(segments((GOOD, ["E1"]), (GOOD_2, ["E2", "E42"]))),
        INVALID,
        "unknown_ref",
        hidden=(GOOD, GOOD_2),
        id="mixed validity",
    ),
    case(answer({"segments": []}), INVALID, "no_segments", id="empty segments"),
    case(answer(segments(("", ["E1"]))), INVALID, "empty_text", id="empty text"),
    case(answer(segments((" \n\t ", ["E1"]))), INVALID, "empty_text", id="blank text"),
    case(answer(segments((GOOD, []))), INVALID, "no_citations", id="uncited segment"),
    case(
        answer({"segments": [{"text": GOOD}]}),
        INVALID,
        "citations_not_a_list",
        id="segment without evidence_ids",
    ),
    case(
        answer(segments(("Retries are bounded. " * 150, ["E1"]))),
        INVALID,
        "segment_too_long",
        id="oversized segment",
    ),
    case(
        answer(
            segments(*[(f"Retries are bounded ({i}). " * 40, [f"E{i % 4 + 1}"]) for i in range(6)])
        ),
        INVALID,
        "answer_too_long",
        id="oversized answer",
    ),
    case(
        answer(segments(*[(GOOD, ["E1"]) for _ in range(300)])),
        INVALID,
        "too_many_segments",
        id="hundreds of segments",
    ),
    case(
        answer(segments(("Retries are \u202ednuob\u202c and safe.", ["E1"]))),
        INVALID,
        "format_character",
        id="bidi override",
    ),
    case(
        answer(segments(("Retries are \u2067bounded\u2069.", ["E1"]))),
        INVALID,
        "format_character",
        hidden=("\u2067",),
        id="bidi isolate",
    ),
    case(answer(segments((GOOD, ["E\u200b1"]))), INVALID, "unknown_ref", id="zero-width in ref"),
    case(
        answer(segments(("Retries\u200d are bounded.", ["E1"]))),
        INVALID,
        "format_character",
        hidden=("\u200d",),
        id="zero-width joiner in text",
    ),
    case(
        answer(segments(("\x1b[2J\x1b[31mRetries are bounded.\x1b[0m", ["E1"]))),
        INVALID,
        "control_character",
        id="ansi escapes",
    ),
    case(
        completion('{"segments": [{"text": "Bounded retries keep a transient failure'),
        ADAPTER_OUTPUT,
        "invalid_json",
        id="truncated json",
    ),
    case(
        completion('{"segments": [{"text": "Retries.", "evidence_ids": ["E1"]}], "n": NaN}'),
        ADAPTER_OUTPUT,
        "invalid_json",
        id="NaN",
    ),
    case(
        completion("[" * 100_000),
        ADAPTER_OUTPUT,
        "invalid_json",
        id="deeply nested json",
    ),
    case(
        completion("Retries should be bounded because otherwise they never stop."),
        ADAPTER_OUTPUT,
        "two_line_format",
        requests=2,
        id="plain prose",
    ),
    case(
        completion(f"```json\n{json.dumps(segments((GOOD, ['E1'])))}\n```"),
        ADAPTER_OUTPUT,
        "two_line_format",
        requests=2,
        id="fenced json",
    ),
    case(answer(segments((GOOD, [1]))), INVALID, "ref_not_a_string", id="ref as integer"),
    case(answer(segments((GOOD, ["e1"]))), INVALID, "unknown_ref", id="lower-cased ref"),
    case(answer(segments((GOOD, [" E1 "]))), INVALID, "unknown_ref", id="padded ref"),
    case(
        answer(segments((GOOD, "E1"))),
        INVALID,
        "citations_not_a_list",
        id="evidence_ids as a string",
    ),
    case(answer([{"text": GOOD, "evidence_ids": ["E1"]}]), INVALID, "not_an_object", id="array"),
    case(answer({}), INVALID, "segments_not_a_list", id="empty object"),
    case(
        Reply(status=500, body=b'{"error": {"message": "internal"}}'),
        DegradedReason.GENERATOR_ERROR,
        "http_status: the provider answered HTTP 500 again after one retry",
        requests=2,
        id="http 500",
    ),
    case(
        Reply(status=502, body=HTML_PAGE, content_type="text/html"),
        DegradedReason.GENERATOR_ERROR,
        "HTTP 502 again after one retry",
        hidden=("Bad Gateway",),
        requests=2,
        id="html error page",
    ),
    case(
        Reply(status=200, body=HTML_PAGE, content_type="text/html; charset=utf-8"),
        ADAPTER_OUTPUT,
        "unexpected_content_type",
        requests=1,
        id="html page with 200",
    ),
    case(
        Reply(status=401, body=b'{"error": {"message": "bad key"}}'),
        DegradedReason.GENERATOR_ERROR,
        "HTTP 401 (check CITADEL_LLM_API_KEY)",
        requests=1,
        id="http 401",
    ),
    case(
        Reply(body=VALID_ENVELOPE, delay_s=10.0),
        DegradedReason.GENERATOR_TIMEOUT,
        "did not answer within 2 s",
        requests=1,
        id="slower than the deadline",
    ),
    case(
        Reply(body=VALID_ENVELOPE, trickle_s=0.1),
        DegradedReason.GENERATOR_TIMEOUT,
        "did not answer within 2 s",
        requests=1,
        id="body trickling past the deadline",
    ),
    case(
        Reply(stream_bytes=48 * MIB, chunked=True),
        ADAPTER_OUTPUT,
        "oversized_response",
        id="48 MiB chunked body",
    ),
    case(
        Reply(stream_bytes=48 * MIB),
        ADAPTER_OUTPUT,
        "oversized_response",
        id="48 MiB declared body",
    ),
    case(
        Reply(body=VALID_ENVELOPE.replace(b"Bounded", b"Bound\xff\xfeed")),
        ADAPTER_OUTPUT,
        "invalid_utf8",
        id="invalid utf-8",
    ),
    case(
        answer(segments(("Retries \ud800 are bounded.", ["E1"]))),
        ADAPTER_OUTPUT,
        "invalid_utf8",
        id="lone surrogate escape",
    ),
    case(
        Reply(body=VALID_ENVELOPE, headers=(("Content-Encoding", "gzip"),)),
        ADAPTER_OUTPUT,
        "unexpected_encoding",
        id="compressed body",
    ),
    case(
        (*REFUSE_ALL, completion(TWO_LINE_HOSTILE[0])),
        INVALID,
        "unknown_ref",
        requests=4,
        id="json mode refused, two lines cite E9",
    ),
    case(
        (*REFUSE_ALL, completion(TWO_LINE_HOSTILE[1])),
        INVALID,
        "url_in_text",
        requests=4,
        id="json mode refused, two lines with a url",
    ),
    case(
        (*REFUSE_ALL, completion(f"Answer: {GOOD}\nSources: E1")),
        ADAPTER_OUTPUT,
        "two_line_format",
        requests=4,
        id="json mode refused, malformed two lines",
    ),
    case(
        Reply(status=429, headers=(("Retry-After", "3600"),), body=b"{}"),
        DegradedReason.GENERATOR_ERROR,
        "rate_limited: the provider answered HTTP 429; not retried",
        requests=1,
        id="429 with Retry-After past the deadline",
    ),
    case(
        Reply(status=429, headers=(("Retry-After", "0"),), body=b"{}"),
        DegradedReason.GENERATOR_ERROR,
        "rate_limited: the provider answered HTTP 429 again after one retry",
        requests=2,
        id="429 twice",
    ),
    case(completion(None), ADAPTER_OUTPUT, "null_content", id="null content"),
    case(
        completion(
            None,
            finish_reason="tool_calls",
            tool_calls=[
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "fetch", "arguments": json.dumps({"url": EVIL_URL})},
                }
            ],
        ),
        ADAPTER_OUTPUT,
        "tool_call",
        id="tool call",
    ),
    case(
        completion(None, function_call={"name": "fetch", "arguments": "{}"}),
        ADAPTER_OUTPUT,
        "tool_call",
        id="legacy function call",
    ),
    case(
        completion(None, refusal="I cannot help with that."),
        ADAPTER_OUTPUT,
        "refusal",
        id="refusal",
    ),
    case(
        completion(json.dumps(segments((GOOD, ["E1"]))), citations=[EVIL_URL]),
        ADAPTER_OUTPUT,
        "unexpected_field",
        id="unknown field in the message",
    ),
    case(
        Reply(body=b'{"error": {"message": "overloaded"}}'),
        ADAPTER_OUTPUT,
        "provider_error",
        id="error object with 200",
    ),
    case(Reply(body=b'{"id": "x", "choices": []}'), ADAPTER_OUTPUT, "empty", id="no choices"),
    case(completion(""), ADAPTER_OUTPUT, "empty", id="empty content"),
    case(
        completion('{"segments": [{"text": "Retries', finish_reason="length"),
        ADAPTER_OUTPUT,
        "truncated",
        id="cut off at max_tokens",
    ),
]


@pytest.mark.parametrize("repairs", [0, 1], ids=["no repair", "one repair"])
@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_output_keeps_search_and_shows_nothing(
    hostile: Case, repairs: int, library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    # The fake repeats its last reply, so a repair meets the same hostility again.
    server.script(*hostile.replies)
    outcome = ask(library, generator_for(server), dataclasses.replace(LIMITS, max_repairs=repairs))
    result = outcome.result
    assert result.answer is None
    assert result.degraded is not None
    assert result.degraded.reason is hostile.reason, result.degraded
    assert hostile.detail in result.degraded.detail, result.degraded.detail
    assert_search_kept(outcome)
    assert_nothing_hostile(outcome, hostile.hidden)
    assert outcome.elapsed < DEADLINE_S + SLACK_S, f"took {outcome.elapsed:.2f} s"
    if hostile.requests is not None and not repairs:
        assert len(server.requests) == hostile.requests


# -- the valid cases ---------------------------------------------------------------


def test_a_valid_json_answer_is_accepted(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(answer(segments((GOOD, ["E1"]), (GOOD_2, ["E2", "E3"]))))
    outcome = ask(library, generator_for(server))
    assert_accepted(outcome, [["E1"], ["E2", "E3"]])
    assert outcome.result.answer is not None
    assert [s.text for s in outcome.result.answer.segments] == [GOOD, GOOD_2]
    [sent] = server.requests
    assert sent.json()["response_format"]["type"] == "json_schema"


def assert_grammar_schema(sent: dict[str, Any], strict: dict[str, Any]) -> None:
    """json_object carrying the strict schema, its text also bounded in length."""
    assert set(sent) == {"type", "schema"} and sent["type"] == "json_object"
    schema = sent["schema"]
    text = schema["properties"]["segments"]["items"]["properties"]["text"]
    assert (text.pop("minLength"), text.pop("maxLength")) == (1, 1000)
    assert schema == strict["json_schema"]["schema"]


def test_the_two_line_fallback_is_accepted_when_json_mode_is_refused(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(*REFUSE_ALL, completion(f"Citations: E2, E3\nAnswer: {GOOD}"))
    outcome = ask(library, generator_for(server))
    assert_accepted(outcome, [["E2", "E3"]])
    assert outcome.result.answer is not None
    assert outcome.result.answer.segments[0].text == GOOD
    first, second, third, fourth = (r.json() for r in server.requests)
    assert first["response_format"]["type"] == "json_schema"
    assert_grammar_schema(second["response_format"], first["response_format"])
    assert third["response_format"] == {"type": "json_object"}
    third = fourth
    assert "response_format" not in third
    assert third["messages"][0] == {"role": "system", "content": TWO_LINE_POLICY}
    assert third["messages"][1] == first["messages"][1]  # the same evidence, as data


def test_json_object_mode_is_used_when_only_the_schema_is_refused(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(REFUSE_SCHEMA, REFUSE_OBJECT_SCHEMA, answer(segments((GOOD, ["E1"]))))
    generator = generator_for(server)
    assert_accepted(ask(library, generator), [["E1"]])
    assert len(server.requests) == 3
    # The refusals are remembered: the next question goes straight to json_object.
    assert_accepted(ask(library, generator), [["E1"]])
    assert len(server.requests) == 4
    assert server.requests[3].json()["response_format"] == {"type": "json_object"}


def test_a_server_error_naming_the_response_format_is_a_refusal_not_an_outage(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    # What llama-cpp-python's server answers to a json_schema response_format.
    llama_cpp_refusal = error(
        500,
        "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format',"
        " 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}",
    )
    server.script(llama_cpp_refusal, answer(segments((GOOD, ["E1"]))))
    assert_accepted(ask(library, generator_for(server)), [["E1"]])
    first, second = (r.json() for r in server.requests)  # no retry of the refusal
    assert first["response_format"]["type"] == "json_schema"
    # json_object with the schema beside it, which llama.cpp's servers turn into a grammar
    assert_grammar_schema(second["response_format"], first["response_format"])


def test_prose_in_json_mode_gets_one_two_line_retry(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(
        completion("Retries should be bounded."), completion(f"Citations: E1\nAnswer: {GOOD}")
    )
    assert_accepted(ask(library, generator_for(server)), [["E1"]])
    assert len(server.requests) == 2


def test_without_the_two_line_fallback_refusal_and_prose_are_errors(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(*REFUSE_ALL)
    refused = ask(library, generator_for(server, two_line_fallback=False))
    assert refused.result.degraded is not None
    assert "ProviderStatusError: refused_json_mode" in refused.result.degraded.detail
    assert len(server.requests) == 3
    assert_search_kept(refused)

    server.script(completion("Retries should be bounded."))
    prose = ask(library, generator_for(server, two_line_fallback=False))
    assert prose.result.degraded is not None
    assert "InvalidProviderOutput: prose" in prose.result.degraded.detail
    assert len(server.requests) == 5  # the prose, and the service's one repair


def test_a_repair_is_the_applications_note_after_the_same_evidence(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(
        answer(segments((f"{GOOD} See {EVIL_URL}", ["E1"]))), answer(segments((GOOD, ["E1"])))
    )
    outcome = ask(library, generator_for(server))
    assert_accepted(outcome, [["E1"]])
    first, second = (r.json() for r in server.requests)
    assert second["messages"][:2] == first["messages"], "same policy, same evidence"
    note = second["messages"][2]
    assert note["role"] == "system" and "url_in_text" in note["content"]
    assert "evil" not in note["content"]
    record = outcome.result.generation
    assert record is not None
    assert (record.attempts, record.model, record.prompt_version) == (
        2,
        "fake-model",
        "citadel-answer/1",
    )
    assert record.prompt_sha256 == PROMPT_SHA256


def test_the_candidate_names_the_prompt_it_was_written_under(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(*REFUSE_ALL, completion(f"Citations: E1\nAnswer: {GOOD}"))
    outcome = ask(library, generator_for(server))
    assert outcome.result.generation is not None
    assert outcome.result.generation.prompt_sha256 == TWO_LINE_PROMPT_SHA256
    raw = server.requests[-1].json()
    assert raw["messages"][0]["content"] == TWO_LINE_POLICY


def test_a_5xx_is_retried_once(library: InMemoryLibrary, server: FakeOpenAIServer) -> None:
    server.script(Reply(status=503, body=b"{}"), answer(segments((GOOD, ["E1"]))))
    assert_accepted(ask(library, generator_for(server)), [["E1"]])
    assert len(server.requests) == 2


def test_429_retry_after_is_honoured_when_it_fits_the_deadline(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(
        Reply(status=429, headers=(("Retry-After", "1"),), body=b"{}"),
        answer(segments((GOOD, ["E1"]))),
    )
    outcome = ask(library, generator_for(server))
    assert_accepted(outcome, [["E1"]])
    assert len(server.requests) == 2
    assert outcome.elapsed >= 1.0


# -- what is sent --------------------------------------------------------------------


def test_the_request_is_the_policy_and_the_evidence_as_data(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(answer(segments((GOOD, ["E1"]))))
    outcome = ask(library, generator_for(server))
    assert outcome.result.answer is not None
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["content-type"] == "application/json"
    body = sent.json()
    assert set(body) == {
        "model",
        "messages",
        "max_tokens",
        "temperature",
        "n",
        "stream",
        "response_format",
    }
    assert body["model"] == "fake-model"
    assert body["max_tokens"] == LIMITS.max_output_tokens
    assert body["stream"] is False
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_POLICY}
    assert user["role"] == "user"
    data = json.loads(user["content"])
    assert set(data) == {"question", "evidence"}
    assert data["question"] == QUESTION
    manifest = outcome.result.manifest
    assert manifest is not None
    assert [item["ref"] for item in data["evidence"]] == ["E1", "E2", "E3", "E4"]
    for item in data["evidence"]:
        assert set(item) == {"ref", "passage", "title", "author", "chapter", "section", "pages"}
        evidence = manifest.evidence_for(item["ref"])
        assert evidence is not None
        assert item["passage"] == evidence.passage
        assert item["title"] == "Reliable Service Design"
    raw = sent.body.decode("utf-8")
    for evidence in outcome.direct.results:
        for hidden in (evidence.evidence_id, evidence.chunk_id, evidence.source_id):
            assert hidden not in raw
        assert evidence.content_sha256 not in raw
    assert hashlib.sha256(SYSTEM_POLICY.encode()).hexdigest() == PROMPT_SHA256
    generator = generator_for(server)
    assert (generator.prompt_version, generator.prompt_sha256) == (PROMPT_VERSION, PROMPT_SHA256)


def test_a_request_over_the_cap_is_refused_before_sending(server: FakeOpenAIServer) -> None:
    big = PromptEvidence(
        ref="E1",
        passage="Retries are bounded. " * 7000,  # ~147 KiB, over the 128 KiB default
        title="Reliable Service Design",
        author="",
        chapter="Failure Handling",
        section="Retry Budgets",
        pages="42",
    )
    generator = generator_for(server)
    with pytest.raises(RequestTooLarge) as caught:
        asyncio.run(generator.generate(GenerationRequest(QUESTION, (big,), 256)))
    assert caught.value.reason == "oversized_request"
    assert "Retries are bounded" not in str(caught.value)
    assert server.requests == []


def test_an_oversized_request_degrades_the_answer_without_a_call(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    outcome = ask(library, generator_for(server, max_request_bytes=2048))
    assert outcome.result.degraded is not None
    assert outcome.result.degraded.reason is DegradedReason.GENERATOR_ERROR
    assert "oversized_request" in outcome.result.degraded.detail
    assert_search_kept(outcome)
    assert server.requests == []


# -- limits and failure modes ---------------------------------------------------------


def test_a_48_mib_body_is_never_held_in_memory(server: FakeOpenAIServer) -> None:
    server.script(Reply(stream_bytes=48 * MIB, chunked=True))
    generator = generator_for(server)
    request = GenerationRequest(
        QUESTION, (PromptEvidence("E1", "Retries are bounded.", "T", "", "", "", ""),), 256
    )
    tracemalloc.start()
    try:
        with pytest.raises(InvalidProviderOutput) as caught:
            asyncio.run(generator.generate(request))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.reason == "oversized_response"
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB"


def test_an_unreachable_provider_degrades_quickly(library: InMemoryLibrary) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    generator = OpenAICompatibleGenerator(
        f"http://127.0.0.1:{port}/v1", "m", SecretStr(API_KEY), deadline_s=DEADLINE_S
    )
    outcome = ask(library, generator)
    assert outcome.result.degraded is not None
    assert outcome.result.degraded.reason is DegradedReason.GENERATOR_ERROR
    assert "ProviderUnavailable: connect" in outcome.result.degraded.detail
    assert_search_kept(outcome)
    assert outcome.elapsed < DEADLINE_S


def test_the_callers_own_deadline_is_an_error_not_a_degraded_answer(
    library: InMemoryLibrary, server: FakeOpenAIServer
) -> None:
    server.script(Reply(body=VALID_ENVELOPE, delay_s=10.0))
    search = SearchService(library, library, LIMITS)
    service = AnswerService(search, generator_for(server), LIMITS)
    request = AnswerRequest(SearchRequest(query=QUESTION))
    started = time.monotonic()
    with pytest.raises(RequestDeadlineExceeded):
        asyncio.run(service.answer(request, ACTOR, deadline_s=0.3))
    assert time.monotonic() - started < 0.3 + SLACK_S


# -- secrets and configuration --------------------------------------------------------


def test_the_api_key_never_appears_in_errors_reprs_or_logs(
    library: InMemoryLibrary, server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = SecretStr(API_KEY)
    assert API_KEY not in repr(secret) + str(secret) + f"{secret}" + f"{secret!r}"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    generator = generator_for(server)
    assert API_KEY not in repr(generator) + str(generator)

    failures = [
        Reply(status=500, body=b"{}"),
        Reply(status=401, body=API_KEY.encode()),  # a provider that echoes the key back
        Reply(status=400, body=b'{"error": "bad"}'),
        completion("{not json"),
        completion(None, tool_calls=[{"id": "1"}]),
        Reply(stream_bytes=MIB),
        Reply(body=VALID_ENVELOPE, delay_s=10.0),
    ]
    request = GenerationRequest(
        QUESTION, (PromptEvidence("E1", "Retries are bounded.", "T", "", "", "", ""),), 256
    )
    seen: list[str] = []
    for reply in failures:
        server.script(reply)
        with pytest.raises(GeneratorError) as caught:
            asyncio.run(generator.generate(request))
        exc = caught.value
        seen.append(caught.typename)
        text = str(exc) + repr(exc) + "".join(traceback.format_exception(exc))
        for hidden in (API_KEY, QUESTION, "Retries are bounded."):
            assert hidden not in text, (caught.typename, hidden)
    assert seen[-1] == "ProviderTimeout"

    for reply in failures[:2]:
        server.script(reply)
        outcome = ask(library, generator)
        assert outcome.result.degraded is not None
        assert API_KEY not in outcome.result.degraded.detail
    assert caplog.records, "expected httpx and adapter log records"
    for record in caplog.records:
        assert API_KEY not in record.getMessage()
        assert API_KEY not in repr(record.args)
    assert API_KEY not in caplog.text


@pytest.mark.parametrize("key", [API_KEY + "\n", f" {API_KEY}", "sk-\u00e9t\u00e9", "a\x00b"])
def test_a_key_no_header_can_carry_is_refused_without_showing_it(key: str) -> None:
    with pytest.raises(GeneratorConfigError) as caught:
        OpenAICompatibleGenerator("https://api.example.com/v1", "m", SecretStr(key))
    assert key.strip() not in str(caught.value) + repr(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/v1",
        "http://10.0.0.7:8000/v1",
        "http://192.168.1.2/v1",
        "http://127.0.0.1.evil.example/v1",
        "http://localhost.evil.example/v1",
        "http://[::ffff:8.8.8.8]/v1",
        "ftp://127.0.0.1/v1",
        "https://user:pass@api.example.com/v1",
        "https://api.example.com/v1?key=x",
        "not a url",
    ],
)
def test_insecure_or_malformed_base_urls_are_refused(url: str) -> None:
    with pytest.raises(GeneratorConfigError) as caught:
        OpenAICompatibleGenerator(url, "m", SecretStr(API_KEY))
    assert caught.value.reason == "config"
    assert "pass" not in str(caught.value) and API_KEY not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://127.10.0.3/v1/",
        "http://[::1]:8080/v1",
        "http://localhost:11434/v1",
        "https://api.example.com/v1",
    ],
)
def test_loopback_http_and_any_https_are_allowed(url: str) -> None:
    assert OpenAICompatibleGenerator(url, "m").name == "openai"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for 127.0.0.1 it signed: (ca, cert, key)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a test CA")
    d = tmp_path_factory.mktemp("tls")
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    (d / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
    )
    for command in (
        "req -x509 {ec} -keyout ca.key -out ca.pem -days 1 -subj /CN=citadel-test-CA",
        "req {ec} -keyout server.key -out server.csr -subj /CN=127.0.0.1",
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem"
        " -days 1 -extfile server.ext",
    ):
        argv = [openssl, *command.format(ec=ec).split()]
        subprocess.run(argv, cwd=d, check=True, capture_output=True)
    return d / "ca.pem", d / "server.pem", d / "server.key"


def test_https_with_a_custom_ca_file(
    library: InMemoryLibrary, tls_files: tuple[Path, Path, Path]
) -> None:
    ca, cert, key = tls_files
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with running_server(tls=context) as fake:
        fake.script(answer(segments((GOOD, ["E1"]))))
        assert fake.base_url.startswith("https://127.0.0.1:")
        trusted = OpenAICompatibleGenerator(
            fake.base_url, "m", SecretStr(API_KEY), ca_file=ca, deadline_s=DEADLINE_S
        )
        assert_accepted(ask(library, trusted), [["E1"]])
        # Without the CA the certificate is refused: no request, a degraded answer.
        untrusted = OpenAICompatibleGenerator(
            fake.base_url, "m", SecretStr(API_KEY), deadline_s=DEADLINE_S
        )
        outcome = ask(library, untrusted)
        assert outcome.result.degraded is not None
        assert "ProviderUnavailable: connect" in outcome.result.degraded.detail
        assert_search_kept(outcome)
        assert len(fake.requests) == 1
        assert not fake.errors, fake.errors


def test_a_missing_ca_file_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(GeneratorConfigError, match="CA file"):
        OpenAICompatibleGenerator("https://llm.internal/v1", "m", ca_file=tmp_path / "missing.pem")


def test_every_error_is_an_app_error_with_a_stable_reason() -> None:
    for kind in (
        GeneratorConfigError,
        RequestTooLarge,
        ProviderUnavailable,
        ProviderTimeout,
        ProviderStatusError,
        InvalidProviderOutput,
    ):
        assert issubclass(kind, GeneratorError)
        assert issubclass(kind, AppError)
    assert issubclass(ProviderTimeout, TimeoutError)
    assert ProviderStatusError("http_status", "x", 500).status == 500
