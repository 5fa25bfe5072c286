"""The JSON API under ``/v1`` and the operational endpoints: parse, call one use case, serialize.

The bodies are the CLI's ``--json`` objects (``render``), so the two
entrypoints cannot drift apart. Request bodies come from ``bodies.json_body``:
read only after the caller is authenticated, capped, parsed strictly.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from citadel.entrypoints.http.admin_replies import SourcePage
from citadel.entrypoints.http.auth import ApiActor, Librarian, edge
from citadel.entrypoints.http.bodies import body_doc, json_body
from citadel.entrypoints.http.openapi import errors
from citadel.entrypoints.http.paging import DEFAULT_LIMIT, Cursor, Limit, page_of
from citadel.entrypoints.http.presenters import source_view
from citadel.entrypoints.http.replies import (
    AnswerReply,
    CitationLinkReply,
    Health,
    IngestReply,
    Readiness,
    SearchReply,
    StreamEvent,
)
from citadel.entrypoints.http.schemas import AclBody, AnswerBody, NewUserBody, SearchBody
from citadel.entrypoints.http.streaming import EventShapes, answer_events, event_stream
from citadel.entrypoints.http.uploads import MULTIPART_SCHEMA, receive_upload
from citadel.entrypoints.present.shapes import (
    answer_json,
    coverage_json,
    ingest_json,
    link_json,
    search_json,
)

T = TypeVar("T")

router = APIRouter(prefix="/v1", tags=["v1"])
ops = APIRouter(tags=["operations"])

_JSON_ERRORS = errors(413, e422="The body is not standard JSON, or has unknown or invalid fields")

# The JSON bodies (FastAPI would read a body parameter before authenticating), and the
# stream's event, published among the components as they are.
BODIES = (SearchBody, AnswerBody, AclBody, NewUserBody, StreamEvent)
STREAM_EVENT = "#/components/schemas/StreamEvent"
SearchJson = Annotated[SearchBody, Depends(json_body(SearchBody))]
AnswerJson = Annotated[AnswerBody, Depends(json_body(AnswerBody))]


@router.post(
    "/search",
    response_model=SearchReply,
    responses=_JSON_ERRORS,
    openapi_extra=body_doc(SearchBody),
)
def search(request: Request, actor: ApiActor, body: SearchJson) -> dict[str, Any]:
    """Search the library the caller may read; results never depend on a generator."""
    result = edge(request).services.search.search(body.domain(), actor)
    return search_json(result)


@router.post(
    "/answer",
    response_model=AnswerReply,
    responses=errors(413, 504, e422=_JSON_ERRORS[422]["description"]),
    openapi_extra=body_doc(AnswerBody),
)
async def answer(request: Request, actor: ApiActor, body: AnswerJson) -> dict[str, Any]:
    """Answer from the library with citations the application proves, or degrade to search."""
    services = edge(request).services
    result = await edge(request).answering.answer(
        body.domain(),
        actor,
        request_id=request.state.request_id,
        deadline_s=services.settings.http.deadline_s,
    )
    return answer_json(result)


STREAM_SHAPES = EventShapes(search=search_json, final=answer_json)
"""The stream's events carry the API's own bodies: ``answer``/``degraded`` is /v1/answer's."""


@router.post(
    "/answer/stream",
    response_class=StreamingResponse,
    responses={
        **_JSON_ERRORS,
        200: {
            "description": (
                "Server-sent events: `search` (the results, as soon as search finishes),"
                " then `answer` (the validated answer whole, the /v1/answer body) or"
                " `degraded` (the same body, with the reason), then `done`; `error`"
                " before `done` when the deadline passes. Nothing the generator wrote is"
                " sent before it is validated."
            ),
            "content": {"text/event-stream": {"schema": {"$ref": STREAM_EVENT}}},
        },
    },
    openapi_extra=body_doc(AnswerBody),
)
async def answer_stream(request: Request, actor: ApiActor, body: AnswerJson) -> Response:
    """The answer as an event stream: the search results at once, the proven answer whole."""
    state = edge(request)
    events = answer_events(
        state.answering,
        body.domain(),
        actor,
        STREAM_SHAPES,
        request_id=request.state.request_id,
        deadline_s=state.services.settings.http.deadline_s,
    )
    return event_stream(events)


@router.get(
    "/answers/{answer_id}/citations/{ref}",
    response_model=CitationLinkReply,
    responses=errors(404, e404="No such answer in the caller's tenant, or no such ref in it"),
)
def citation(answer_id: str, ref: str, request: Request, actor: ApiActor) -> dict[str, Any]:
    """One citation of an earlier answer, resolved again for this caller now."""
    services = edge(request).services
    target = services.audit.target(answer_id, ref, actor)
    link = services.resolver.resolve([target], actor)[0]
    return {"answer_id": answer_id, "ref": ref, "link": link_json(link)}


@router.get(
    "/sources",
    response_model=SourcePage,
    response_model_exclude_unset=True,
    responses=errors(e422="An invalid limit, or a cursor this list did not return"),
)
def sources(
    request: Request, actor: ApiActor, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> dict[str, Any]:
    """Live sources the caller may read, a page at a time by source id (their server
    paths only to admins). Sources added during a walk appear at most once, and
    every source listed throughout it exactly once (``paging``)."""
    found = edge(request).services.library.list(actor)
    page = page_of(found, lambda s: s.source_id, "sources", limit, cursor)
    return {
        "items": [source_view(s, actor) for s in page.items],
        "next_cursor": page.next_cursor,
    }


@router.post(
    "/sources",
    status_code=201,
    response_model=IngestReply,
    responses=errors(
        404,
        413,
        e404="A new version was asked for a source that is not there",
        e413="The file is over the size limit",
        e422="The form or the file was refused (error.reason says why)",
    ),
    openapi_extra=MULTIPART_SCHEMA,
)
async def upload(request: Request, actor: Librarian) -> dict[str, Any]:
    """Ingest one uploaded file (librarians and admins) into the caller's tenant."""
    report = await receive_upload(request, edge(request).services, actor)
    return ingest_json(report)


@ops.get("/healthz", response_model=Health)
async def healthz() -> dict[str, str]:
    """The process is up (answered on the event loop: never behind the request threads)."""
    return {"status": "ok"}


@ops.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "The store cannot be reached"}},
)
async def readyz(request: Request) -> JSONResponse:
    """Ready when the store answers a read (``database``: sqlite or postgresql; when it
    does not, ``error`` names the failure's kind); the generator's circuit state is reported too,
    and how many chunks lack a vector for the configured embedding model.

    Neither an open circuit nor missing vectors make the instance unready: search,
    and answers degraded to search, still work without the generator, and chunks
    without a vector are still found lexically (``citadel reindex`` fills them in).
    The count reads every current chunk once per change to the library; when it
    takes too long the counts are null, and the count carries on to serve the next probe.
    """
    services = edge(request).services
    local = edge(request).answering is services.answer
    generator = services.answer.generator_circuit.value if local else "remote"
    database = "postgresql" if services.settings.postgres_url is not None else "sqlite"
    try:
        await asyncio.wait_for(probe(request, services.registry.get, "readyz", "readyz-probe"), 2.0)
    except Exception as exc:
        # What failed, by kind only (a timeout, the driver's OperationalError): the
        # message may name hosts and sockets.
        return JSONResponse(
            {
                "status": "unavailable",
                "store": "unreachable",
                "database": database,
                "error": type(exc).__name__,
                "generator": generator,
            },
            status_code=503,
        )
    model = services.reindex.model
    counting = edge(request).counting
    try:
        # One count at a time: a probe that finds one running (slow, on a large
        # library) reports null counts rather than start another beside it.
        coverage = await asyncio.wait_for(
            probe(request, _count_alone, services.reindex.coverage, counting), 2.0
        )
        vectors = coverage_json(model, coverage)
    except Exception:
        vectors = None if model is None else {"model": model, "chunks": None, "missing": None}
    return JSONResponse(
        {
            "status": "ready",
            "store": "ok",
            "database": database,
            "generator": generator,
            "vectors": vectors,
        }
    )


@ops.get("/metrics", response_class=PlainTextResponse)
def metrics(request: Request) -> Response:
    """The trust metrics in the Prometheus text format."""
    body = edge(request).services.metrics.exposition()
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def probe(request: Request, work: Callable[..., T], *args: object) -> T:
    """``work(*args)`` on the probes' own threads: a readiness probe must not queue
    behind requests that hold every shared request thread (a load balancer would
    drop a server that is only busy)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(edge(request).probes, work, *args)


def _count_alone(count: Callable[[], T], lock: threading.Lock) -> T:
    """``count()`` unless another count holds ``lock`` (then ``TimeoutError``). Taken and
    released in the worker thread, so a probe that stops waiting cannot leak it."""
    if not lock.acquire(blocking=False):
        raise TimeoutError("a count is already running")
    try:
        return count()
    finally:
        lock.release()
