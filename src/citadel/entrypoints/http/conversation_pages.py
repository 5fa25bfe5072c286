"""The conversation pages: the reader's list, one conversation with a follow-up form,
and the permalink of one turn's answer.

- ``GET /conversations`` lists the reader's conversations (newest first), each with a
  delete button, and a form that starts one; ``POST /conversations`` starts it (with
  ``follow_up`` too, as the ask page's "Ask a follow-up" sends: the question, then the
  follow-up) and goes to the conversation.
- ``GET /conversations/{id}`` shows every turn: the question, what it searched for
  when that was rewritten, the answer with its footnotes and its evidence, as the ask
  page shows one; ``POST …/turns`` asks a follow-up, ``POST …/delete`` deletes it.
- ``GET /answers/{answer_id}`` is a turn's permalink: the recorded answer
  (``ConversationService.recorded``), never a new ask.

Recorded answers are shown with their citations resolved for the reader now
(``CitationResolver.recorded_for``). Forms check the CSRF token; another reader's
conversation is not found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from citadel.domain.conversation import Turn
from citadel.domain.users import Actor
from citadel.entrypoints.http.ask_query import AskQuery
from citadel.entrypoints.http.auth import edge
from citadel.entrypoints.http.pages import page
from citadel.entrypoints.http.presenters import AnswerView, answer_view
from citadel.entrypoints.http.security import CSRF_FIELD
from citadel.entrypoints.http.shelf import when
from citadel.entrypoints.http.web import Reader, check_csrf, form_fields

router = APIRouter(include_in_schema=False)


def conversation_href(conversation_id: str) -> str:
    return "/conversations/" + quote(conversation_id, safe="")


def turn_permalink(answer_id: str) -> str:
    """Where a turn's answer stays: it opens the answer as recorded."""
    return "/answers/" + quote(answer_id, safe="")


@dataclass(frozen=True, slots=True)
class TurnView:
    number: int
    question: str
    query: str
    rewritten: bool
    kind: str
    created: str
    created_text: str
    permalink: str
    anchor: str
    """What the turn's ids start with, so footnotes of two turns on a page never collide."""
    view: AnswerView


def turn_view(request: Request, turn: Turn, actor: Actor) -> TurnView:
    """A recorded turn as the reader may see it now (its links resolved again)."""
    answer = edge(request).services.resolver.recorded_for(turn.answer, actor)
    permalink = turn_permalink(turn.answer_id)
    return TurnView(
        number=turn.number,
        question=turn.question,
        query=turn.query,
        rewritten=turn.rewrite.rewritten,
        kind=turn.rewrite.kind.value,
        created=turn.created,
        created_text=when(turn.created),
        permalink=permalink,
        anchor=f"t{turn.number}-",
        view=answer_view(answer, permalink),
    )


def _asking(request: Request) -> dict[str, Any]:
    """What every turn is asked with, as the ask page asks: the request's id and deadline."""
    deadline = edge(request).services.settings.http.deadline_s
    return {"request_id": request.state.request_id, "deadline_s": deadline}


def _list_page(
    request: Request, actor: Actor, status: int = 200, *, question: str = "", error: str = ""
) -> Response:
    found = edge(request).services.conversations.list(actor)
    rows = [
        {
            "conversation_id": c.conversation_id,
            "title": c.title,
            "href": conversation_href(c.conversation_id),
            "created": c.created,
            "created_text": when(c.created),
        }
        for c in found
    ]
    return page(
        request, "conversations.html", status, conversations=rows, question=question, error=error
    )


def _conversation_page(
    request: Request,
    actor: Actor,
    conversation_id: str,
    status: int = 200,
    *,
    question: str = "",
    error: str = "",
) -> Response:
    opened = edge(request).services.conversations.open(actor, conversation_id)
    return page(
        request,
        "conversation.html",
        status,
        conversation=opened.conversation,
        turns=[turn_view(request, t, actor) for t in opened.turns],
        href=conversation_href(conversation_id),
        question=question,
        error=error,
    )


@router.get("/conversations")
async def conversations(request: Request, actor: Reader) -> Response:
    return await run_in_threadpool(_list_page, request, actor)


@router.post("/conversations")
async def start(request: Request, actor: Reader) -> Response:
    """Start a conversation; with ``follow_up``, ask it as the second turn at once."""
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    query = AskQuery.of(fields)
    follow = AskQuery.of({**fields, "question": fields.get("follow_up", "")})
    problem = query.problem() or (follow.problem() if "follow_up" in fields else None)
    if problem is not None:
        return await run_in_threadpool(
            _list_page, request, actor, 422, question=query.question, error=problem
        )
    state = edge(request)
    service = state.services.conversations.using(state.answering)
    asking = _asking(request)
    conversation, turn = await service.start(actor, query.request(), **asking)
    if "follow_up" in fields:
        turn = await service.follow_up(
            actor, conversation.conversation_id, follow.request(), **asking
        )
    href = f"{conversation_href(conversation.conversation_id)}#turn-{turn.number}"
    return RedirectResponse(href, status_code=303)


@router.get("/conversations/{conversation_id}")
async def conversation(conversation_id: str, request: Request, actor: Reader) -> Response:
    return await run_in_threadpool(_conversation_page, request, actor, conversation_id)


@router.post("/conversations/{conversation_id}/turns")
async def follow_up(conversation_id: str, request: Request, actor: Reader) -> Response:
    """A follow-up, searched for as the conversation rewrites it; then back to the page."""
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    query = AskQuery.of(fields)
    problem = query.problem()
    if problem is not None:
        return await run_in_threadpool(
            _conversation_page,
            request,
            actor,
            conversation_id,
            422,
            question=query.question,
            error=problem,
        )
    state = edge(request)
    turn = await state.services.conversations.using(state.answering).follow_up(
        actor, conversation_id, query.request(), **_asking(request)
    )
    return RedirectResponse(
        f"{conversation_href(conversation_id)}#turn-{turn.number}", status_code=303
    )


@router.post("/conversations/{conversation_id}/delete")
async def delete(conversation_id: str, request: Request, actor: Reader) -> Response:
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    await run_in_threadpool(edge(request).services.conversations.delete, actor, conversation_id)
    return RedirectResponse("/conversations", status_code=303)


def _turn_page(request: Request, actor: Actor, answer_id: str) -> Response:
    conversations = edge(request).services.conversations
    turn = conversations.recorded(actor, answer_id)
    opened = conversations.open(actor, turn.conversation_id)
    return page(
        request,
        "turn.html",
        turn=turn_view(request, turn, actor),
        conversation=opened.conversation,
        href=conversation_href(turn.conversation_id),
    )


@router.get("/answers/{answer_id}")
async def recorded(answer_id: str, request: Request, actor: Reader) -> Response:
    """A turn's permalink: its answer as recorded, links resolved for the reader now."""
    return await run_in_threadpool(_turn_page, request, actor, answer_id)
