"""An in-process span-support judge: an httpx transport that answers every pair it is
asked about with one label, as an OpenAI-compatible provider would.

For tests that need the judge's path without a server (the contract suite, the audit
replay); the hostile provider cases run against the real loopback fake server.
"""

from __future__ import annotations

import json

import httpx

from citadel.adapters.support.judge import JudgedSupportChecker, SpanJudge
from citadel.app.ports.support import SupportChecker
from citadel.domain.secrets import SecretStr


def judging(label: str) -> httpx.MockTransport:
    async def reply(request: httpx.Request) -> httpx.Response:
        asked = json.loads(json.loads(await request.aread())["messages"][1]["content"])
        verdicts = [{"pair": p["pair"], "label": label} for p in asked["pairs"]]
        message = {"role": "assistant", "content": json.dumps({"verdicts": verdicts})}
        body = json.dumps({"choices": [{"message": message, "finish_reason": "stop"}]})
        # A stream, not json=: the judge reads the body as a stream, capped.
        return httpx.Response(
            200,
            headers={"content-type": "application/json"},
            stream=httpx.ByteStream(body.encode("utf-8")),
        )

    return httpx.MockTransport(reply)


def judged_by(local: SupportChecker, label: str, model: str) -> JudgedSupportChecker:
    """``local`` under a judge that says ``label`` of every pair."""
    judge = SpanJudge(
        "http://127.0.0.1:1/v1", model, SecretStr(""), concurrency=16, transport=judging(label)
    )
    return JudgedSupportChecker(local, judge)
