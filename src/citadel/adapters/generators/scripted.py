"""A scripted generator for tests and demos of failure: it plays back what it is told.

Each step is a payload to return, an exception to raise, or a delay; it counts
calls so tests can assert the generator was (or was not) used.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from citadel.domain.answer import Candidate, GenerationRequest


@dataclass(frozen=True, slots=True)
class Step:
    payload: object = None
    error: BaseException | None = None
    delay_s: float = 0.0


Script = Callable[[GenerationRequest], object]
"""A function from the request to a payload, for answers that depend on the refs."""


class ScriptedGenerator:
    name = "scripted"
    model = "scripted"
    prompt_version = "scripted/1"

    def __init__(self, steps: Sequence[Step | Script] = (), *, quotes: bool = False) -> None:
        self.quotes = quotes
        """Whether it plays a generator that quotes by construction (``AnswerGenerator``)."""
        self._steps = list(steps)
        self.calls = 0
        self.requests: list[GenerationRequest] = []
        self.in_flight = 0

    async def generate(self, request: GenerationRequest) -> Candidate:
        self.calls += 1
        self.requests.append(request)
        step = self._steps[min(self.calls, len(self._steps)) - 1] if self._steps else Step()
        self.in_flight += 1
        try:
            if callable(step):
                payload = step(request)
            else:
                if step.delay_s:
                    await asyncio.sleep(step.delay_s)
                if step.error is not None:
                    raise step.error
                payload = step.payload
        finally:
            self.in_flight -= 1
        try:
            raw = json.dumps(payload, ensure_ascii=False)
        except (TypeError, ValueError):
            raw = repr(payload)
        return Candidate(
            payload=payload, raw=raw, model=self.model, prompt_version=self.prompt_version
        )


def cite_first(request: GenerationRequest) -> object:
    """A valid answer citing the first ref: the happy path for tests."""
    return {
        "segments": [
            {"text": "The evidence answers this.", "evidence_ids": [request.evidence[0].ref]}
        ]
    }
