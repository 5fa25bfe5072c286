"""Hostile review of the span-support judge: what the first suite did not try.

Each test states a promise of docs/support.md ("The span-support judge") and attacks
it: the deadline holds for the whole answer, however many parts the pairs are cut in
and however slowly the provider's name resolves; no exception of the judge's own
loop leaves ``check``; a judge on the wrong thread keeps the local labels quietly.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import warnings
from collections.abc import Iterator

import httpx
import pytest

from citadel.adapters.generators.contract import InvalidProviderOutput
from citadel.adapters.support.judge import JudgedSupportChecker, SpanJudge, parse_verdicts
from citadel.domain.secrets import SecretStr
from tests.fakes.openai_server import FakeOpenAIServer, Reply, answer, running_server
from tests.integration.test_support_judge import LABELS, PASSAGE, Scripted, verdicts

PAIRS = [("a paraphrase", PASSAGE)]


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with running_server() as server:
        yield server


def test_the_deadline_is_per_answer_however_many_parts_the_pairs_are_cut_in(
    fake: FakeOpenAIServer,
) -> None:
    # Each part answers just inside the deadline: four parts must not take four deadlines.
    fake.script(Reply(body=verdicts(*["unsupported"] * 16).body, delay_s=0.35))
    judge = SpanJudge(fake.base_url, "judge-model", SecretStr("k"), deadline_s=0.5)
    started = time.monotonic()
    found = JudgedSupportChecker(Scripted(), judge).check(PAIRS * 64)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"{elapsed:.2f} s for a 0.5 s deadline"
    assert found == [LABELS["a paraphrase"]] * 64  # out of time: the local labels stand


def test_a_slow_name_lookup_is_abandoned_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = socket.getaddrinfo

    def slow(host: object, *rest: object, **options: object) -> object:
        time.sleep(3.0)  # a resolver that does not answer in time
        return real("127.0.0.1", *rest, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    judge = SpanJudge("https://judge.example/v1", "judge-model", SecretStr("k"), deadline_s=0.5)
    started = time.monotonic()
    (support,) = JudgedSupportChecker(Scripted(), judge).check(PAIRS)
    elapsed = time.monotonic() - started
    assert support == LABELS["a paraphrase"]
    assert elapsed < 1.5, f"{elapsed:.2f} s for a 0.5 s deadline"


def test_a_cancellation_inside_the_judges_own_loop_keeps_the_local_labels() -> None:
    def cancelled(request: httpx.Request) -> httpx.Response:
        raise asyncio.CancelledError  # a library's cancel scope leaking out of the exchange

    judge = SpanJudge(
        "http://127.0.0.1:1/v1",
        "judge-model",
        SecretStr("k"),
        concurrency=1,
        transport=httpx.MockTransport(cancelled),
    )
    checker = JudgedSupportChecker(Scripted(), judge)
    assert checker.check(PAIRS) == [LABELS["a paraphrase"]]
    assert checker.check(PAIRS) == [LABELS["a paraphrase"]]  # the one slot came back


def test_a_judge_called_on_a_running_loop_keeps_the_local_labels_quietly(
    fake: FakeOpenAIServer,
) -> None:
    fake.script(verdicts("unsupported"))
    checker = JudgedSupportChecker(
        Scripted(), SpanJudge(fake.base_url, "judge-model", SecretStr("k"))
    )

    async def on_the_loop() -> list[object]:
        return list(checker.check(PAIRS))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" is a leak
        found = asyncio.run(on_the_loop())
        import gc

        gc.collect()
    assert found == [LABELS["a paraphrase"]]
    assert fake.requests == []


@pytest.mark.parametrize("label", [["supported"], {"label": "supported"}], ids=["list", "object"])
def test_a_label_that_is_no_string_is_invalid_output_with_its_reason(
    label: object, fake: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    content = json.dumps({"verdicts": [{"pair": 1, "label": label}]})
    with pytest.raises(InvalidProviderOutput):
        parse_verdicts(content, 1)
    fake.script(answer({"verdicts": [{"pair": 1, "label": label}]}))
    judge = SpanJudge(fake.base_url, "judge-model", SecretStr("k"))
    assert JudgedSupportChecker(Scripted(), judge).check(PAIRS) == [LABELS["a paraphrase"]]
    assert "(wrong_type)" in caplog.text  # a stable reason code, not "TypeError"
