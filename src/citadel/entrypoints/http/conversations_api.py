"""Conversations under ``/v1/conversations``: a first question, follow-ups, the list,
one conversation reopened, and deletion — each only for the caller who started it.

A turn's answer is the ``/v1/answer`` body. A turn asked now carries the links the
answer service resolved; a turn reopened is the answer as recorded, its citations
resolved again for the caller at display time (``CitationResolver.recorded_for``), so
a source the caller may no longer see, or that was deleted since, shows as such.
Another user's conversation is not found (404), whoever asks. Callers authenticate
with a bearer token, as on ``/v1/answer``; the web UI's pages are ``conversation_pages``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from citadel.domain.conversation import Turn
from citadel.domain.users import Actor
from citadel.entrypoints.http.api import AnswerJson
from citadel.entrypoints.http.auth import ApiActor, edge
from citadel.entrypoints.http.bodies import body_doc
from citadel.entrypoints.http.openapi import errors
from citadel.entrypoints.http.replies import (
    ConversationReply,
    ConversationsReply,
    TurnReply,
)
from citadel.entrypoints.http.schemas import AnswerBody
from citadel.entrypoints.present.shapes import conversation_json, turn_json

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])

_NOT_YOURS = "No conversation of the caller's with this id"
_ASKING = errors(
    404, 409, 413, 504, e404=_NOT_YOURS, e409="Another follow-up was added first; reopen it"
)


def _asking(request: Request) -> dict[str, Any]:
    """What every turn is asked with, as /v1/answer asks: the request's id and deadline."""
    deadline = edge(request).services.settings.http.deadline_s
    return {"request_id": request.state.request_id, "deadline_s": deadline}


def shown(request: Request, turn: Turn, actor: Actor) -> Turn:
    """A recorded turn with its answer as ``actor`` may see it now."""
    resolver = edge(request).services.resolver
    return Turn(
        turn.conversation_id,
        turn.number,
        turn.rewrite,
        resolver.recorded_for(turn.answer, actor),
        turn.created,
    )


@router.post(
    "",
    status_code=201,
    response_model=ConversationReply,
    responses=errors(413, 504),
    openapi_extra=body_doc(AnswerBody),
)
async def start(request: Request, actor: ApiActor, body: AnswerJson) -> dict[str, Any]:
    """Start a conversation with its first question (the /v1/answer body): its first
    turn is answered as /v1/answer answers."""
    state = edge(request)
    conversation, turn = await state.services.conversations.using(state.answering).start(
        actor, body.domain(), **_asking(request)
    )
    return {**conversation_json(conversation), "turns": [turn_json(turn)]}


@router.post(
    "/{conversation_id}/turns",
    status_code=201,
    response_model=TurnReply,
    responses=_ASKING,
    openapi_extra=body_doc(AnswerBody),
)
async def follow_up(
    conversation_id: str, request: Request, actor: ApiActor, body: AnswerJson
) -> dict[str, Any]:
    """Ask a follow-up: its search query is built from the conversation (``rewrite``
    says how), searched as the caller with the body's filters, and answered anew."""
    state = edge(request)
    turn = await state.services.conversations.using(state.answering).follow_up(
        actor, conversation_id, body.domain(), **_asking(request)
    )
    return turn_json(turn)


@router.get("", response_model=ConversationsReply, responses=errors())
def listed(request: Request, actor: ApiActor) -> dict[str, Any]:
    """The caller's conversations, newest first."""
    found = edge(request).services.conversations.list(actor)
    return {"items": [conversation_json(c) for c in found]}


@router.get(
    "/{conversation_id}",
    response_model=ConversationReply,
    responses=errors(404, e404=_NOT_YOURS),
)
def reopen(conversation_id: str, request: Request, actor: ApiActor) -> dict[str, Any]:
    """A conversation with every turn as it was answered, its links resolved for the
    caller now."""
    view = edge(request).services.conversations.open(actor, conversation_id)
    turns = [turn_json(shown(request, t, actor)) for t in view.turns]
    return {**conversation_json(view.conversation), "turns": turns}


@router.delete(
    "/{conversation_id}",
    status_code=204,
    response_class=Response,
    responses=errors(404, e404=_NOT_YOURS),
)
def delete(conversation_id: str, request: Request, actor: ApiActor) -> Response:
    """Delete the conversation and its turns (their audit records stay in the audit log)."""
    edge(request).services.conversations.delete(actor, conversation_id)
    return Response(status_code=204)
