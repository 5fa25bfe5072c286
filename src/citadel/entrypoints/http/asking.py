"""The ask page: permalinks, the streamed answer, and footnotes that keep working.

- ``GET /ask?q=…`` (with ``source``, ``tag``, ``year_from``, ``year_to``) renders the
  answer: answers can be reloaded, bookmarked and shared. ``POST /ask`` (the form
  without JavaScript) checks the CSRF token and redirects there.
- ``POST /ask/stream`` (the form, sent by ``app.js``) is the answer as an event
  stream (``streaming``): the passages as soon as search finishes, then the
  validated answer with the passages again, numbered as its footnotes, each as the
  same escaped fragment the plain page renders.
- ``GET /answers/{answer_id}/citations/{ref}`` is where a footnote goes: the
  citation is resolved again for the reader now, and a link the resolver gives is
  followed with a freshly signed one, so a page left open keeps working past a
  viewer link's lifetime; a reader who may no longer see the source gets the label.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from citadel.domain.answer import AnswerResult, LinkState
from citadel.domain.search import SearchResult
from citadel.domain.users import Actor
from citadel.entrypoints.http.ask_query import AskQuery
from citadel.entrypoints.http.auth import edge
from citadel.entrypoints.http.home_page import home_view
from citadel.entrypoints.http.pages import csrf_token, fragment, page
from citadel.entrypoints.http.presenters import LINK_WORDS, answer_view, passages
from citadel.entrypoints.http.security import CSRF_FIELD
from citadel.entrypoints.http.streaming import EventShapes, answer_events, event_stream
from citadel.entrypoints.http.viewer_pages import back_link, with_params
from citadel.entrypoints.http.web import Reader, check_csrf, form_fields

router = APIRouter(include_in_schema=False)

MISSING_STATUS = {
    LinkState.FORBIDDEN: 403,
    LinkState.DELETED: 410,
    LinkState.SUPERSEDED: 410,
    LinkState.UNAVAILABLE: 404,
}
"""The status of a footnote's page when there is nowhere to send the reader."""


def _choices(request: Request, actor: Actor) -> dict[str, Any]:
    """The filters' choices: the books the reader may read, and their tags."""
    sources = edge(request).services.library.list(actor)
    return {
        "books": sorted(sources, key=lambda s: (s.title.casefold(), s.source_id)),
        "tags": sorted({t for s in sources for t in s.tags}, key=str.casefold),
    }


def _ask_page(
    request: Request,
    actor: Actor,
    query: AskQuery,
    status: int = 200,
    *,
    result: AnswerResult | None = None,
    error: str | None = None,
) -> Response:
    return page(
        request,
        "ask.html",
        status,
        query=query,
        view=answer_view(result, query.permalink) if result is not None else None,
        permalink=query.permalink if result is not None else "",
        error=error,
        recent=edge(request).questions.of(actor),
        home=home_view(edge(request).services, actor) if _at_home(query, result, error) else None,
        **_choices(request, actor),
    )


def _at_home(query: AskQuery, result: AnswerResult | None, error: str | None) -> bool:
    """The ask page with no question asked: the home page."""
    return not query.question and result is None and error is None


@router.get("/ask")
async def ask_page(request: Request, actor: Reader) -> Response:
    """The ask form; with ``q``, the answer to it (a permalink)."""
    params = request.query_params
    if "q" not in params:
        return await run_in_threadpool(_ask_page, request, actor, AskQuery())
    query = AskQuery.of(params)
    problem = query.problem()
    if problem is not None:
        return await run_in_threadpool(_ask_page, request, actor, query, 422, error=problem)
    state = edge(request)
    result = await state.answering.answer(
        query.request(),
        actor,
        request_id=request.state.request_id,
        deadline_s=state.services.settings.http.deadline_s,
    )
    state.questions.add(actor, query)
    return await run_in_threadpool(_ask_page, request, actor, query, result=result)


@router.post("/ask")
async def ask(request: Request, actor: Reader) -> Response:
    """The form without JavaScript: to the permalink, which answers (and can be reloaded)."""
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    query = AskQuery.of(fields)
    problem = query.problem()
    if problem is not None:
        return await run_in_threadpool(_ask_page, request, actor, query, 422, error=problem)
    return RedirectResponse(query.permalink, status_code=303)


@router.post("/ask/stream")
async def ask_stream(request: Request, actor: Reader) -> Response:
    """The form, answered as an event stream of the page's own fragments."""
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    query = AskQuery.of(fields)
    problem = query.problem()
    if problem is not None:
        html = fragment("_message.html", error=problem)
        return Response(html, 422, media_type="text/html; charset=utf-8")
    state = edge(request)

    def search_shape(search: SearchResult) -> dict[str, Any]:
        shown = passages(search.results)
        return {
            "html": fragment("_evidence.html", passages=shown, closest=False),
            "pending": fragment("_pending.html"),
            "count": len(shown),
            "permalink": query.permalink,
        }

    def final_shape(result: AnswerResult) -> dict[str, Any]:
        view = answer_view(result, query.permalink)
        html = fragment("_answer.html", view=view, permalink=query.permalink)
        html += fragment("_follow_up.html", query=query, csrf_token=csrf_token(request))
        # The passages again, now numbered as the footnotes and marked where cited;
        # for not_in_library, relabelled: they are the closest passages, not evidence.
        evidence = fragment("_evidence.html", passages=view.passages, closest=view.closest)
        return {
            "html": html,
            "evidence": evidence,
            "answer_id": result.answer_id,
            "permalink": query.permalink,
        }

    events = answer_events(
        state.answering,
        query.request(),
        actor,
        EventShapes(search_shape, final_shape),
        request_id=request.state.request_id,
        deadline_s=state.services.settings.http.deadline_s,
        finished=lambda _: state.questions.add(actor, query),
    )
    stream: StreamingResponse = event_stream(events)
    return stream


@router.get("/answers/{answer_id}/citations/{ref}")
def open_citation(
    answer_id: str,
    ref: str,
    request: Request,
    actor: Reader,
    back: Annotated[str | None, Query(max_length=2048)] = None,
) -> Response:
    """A footnote, resolved for the reader now: to a fresh link, or a page saying why not.
    ``back``, the answer's permalink, is passed on to the viewer (which checks it)."""
    services = edge(request).services
    target = services.audit.target(answer_id, ref, actor)
    link = services.resolver.resolve([target], actor)[0]
    href = link.href or ""
    viewer = link.state in (LinkState.VIEWER, LinkState.SUPERSEDED)
    # Only the two shapes the resolver makes are followed (as on the answer page).
    if viewer and href.startswith("/v1/sources/") and back_link(back):
        href = with_params(href, [("back", back or "")])
    if (viewer and href.startswith("/v1/sources/")) or (
        link.state is LinkState.CANONICAL and href.startswith("https://")
    ):
        return RedirectResponse(href, status_code=303, headers={"Cache-Control": "no-store"})
    return page(
        request,
        "citation.html",
        MISSING_STATUS.get(link.state, 404),
        state=link.state.value,
        label=LINK_WORDS[link.state],
    )
