"""An answer as a server-sent event stream: the passages at once, the proven answer whole.

Events, in this order, each ``data`` one line of JSON:

- ``search``: the search result the answer is built from, as soon as search
  finishes (before the generator is called);
- ``answer`` (the answer validated against its manifest, whole) or ``degraded``
  (no written answer, and why);
- ``done``, last, also after ``error`` (the request's deadline passed, or it failed).

Nothing the generator writes is sent before the application has validated it:
the use case (``AnswerService.answer``) hands over the search through its
``on_search`` hook and returns the answer only once it is proven. The API
sends JSON shapes (``answer_json``); the web UI sends the same events with its
server-rendered, escaped fragments (``web_stream``), so one rule and one
renderer serve both. A remote Answer service (split mode) has no such hook: the
``search`` event then comes just before the answer.

While waiting, a comment line goes out every ``KEEPALIVE_S`` so proxies keep the
connection open.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import StreamingResponse

from citadel.app.answer import Answering, AnswerRequest, AnswerService
from citadel.domain.answer import AnswerResult
from citadel.domain.search import SearchResult
from citadel.domain.users import Actor
from citadel.entrypoints.http.errors import HIDDEN, describe, error_body
from citadel.entrypoints.present.json_lines import json_line

log = logging.getLogger("citadel.http")

KEEPALIVE_S = 15.0
MEDIA_TYPE = "text/event-stream"


@dataclass(frozen=True, slots=True)
class EventShapes:
    """What each event carries: the search's shape, and the finished answer's."""

    search: Callable[[SearchResult], Mapping[str, Any]]
    final: Callable[[AnswerResult], Mapping[str, Any]]


def event(name: str, data: Mapping[str, Any]) -> bytes:
    """One event; ``json_line`` escapes every line break (U+2028, U+0085 and the like
    too), so ``data`` is a single line for any client's line splitting."""
    body = json_line(data, compact=True)
    return f"event: {name}\ndata: {body}\n\n".encode()


def final_event(result: AnswerResult) -> str:
    return "answer" if result.degraded is None else "degraded"


async def answer_events(
    answering: Answering,
    request: AnswerRequest,
    actor: Actor,
    shapes: EventShapes,
    *,
    request_id: str,
    deadline_s: float | None,
    keepalive_s: float = KEEPALIVE_S,
    finished: Callable[[AnswerResult], None] | None = None,
) -> AsyncIterator[bytes]:
    """The events of one answer (see the module's docstring)."""
    seen: asyncio.Queue[SearchResult] = asyncio.Queue(maxsize=1)

    async def run() -> AnswerResult:
        if isinstance(answering, AnswerService):
            return await answering.answer(
                request,
                actor,
                request_id=request_id,
                deadline_s=deadline_s,
                on_search=seen.put_nowait,
            )
        return await answering.answer(request, actor, request_id=request_id, deadline_s=deadline_s)

    task = asyncio.create_task(run())
    waiting = asyncio.ensure_future(seen.get())
    sent_search = False
    try:
        while not task.done():
            done, _ = await asyncio.wait(
                {task, waiting} if not sent_search else {task},
                timeout=keepalive_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not sent_search and waiting in done:
                sent_search = True
                yield event("search", shapes.search(waiting.result()))
            elif not done:
                yield b": waiting for the answer to be checked\n\n"
        try:
            result = task.result()
        except Exception as exc:
            yield event("error", _error(exc, request_id))
            yield event("done", {"answer_id": None})
            return
        if not sent_search:
            yield event("search", shapes.search(result.search))
        if finished is not None:
            finished(result)
        yield event(final_event(result), shapes.final(result))
        yield event("done", {"answer_id": result.answer_id})
    finally:
        waiting.cancel()
        if not task.done():
            # The client went away: stop the work (its generation slot goes back).
            task.cancel()


def _error(exc: Exception, request_id: str) -> dict[str, Any]:
    status, code, message = describe(exc)
    if status >= 500:
        log.error(
            "answer stream failed",
            extra={"error": type(exc).__name__, "status": status},
            exc_info=code not in HIDDEN or None,
        )
    error: dict[str, Any] = error_body(status, code, message, request_id)["error"]
    return error


def event_stream(events: AsyncIterator[bytes]) -> StreamingResponse:
    return StreamingResponse(
        events,
        media_type=MEDIA_TYPE,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
