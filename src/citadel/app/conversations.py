"""Conversation use cases: start, follow up, list, open, delete — for the acting reader only.

Each turn is a normal ask through ``Answering`` (the answer use case, in process or
remote): its own search, evidence set, proof and audit record. Only the search
query is built from the conversation (``domain.rewrite``), and the search runs as
the same actor with the caller's filters, so a follow-up reaches nothing the
question asked alone could not. A conversation of another user is not found.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from citadel.app.answer import Answering, AnswerRequest
from citadel.app.errors import InvalidRequest, NotFound, VersionConflict
from citadel.app.ports import Clock
from citadel.app.ports.conversations import ConversationStore
from citadel.domain.answer import AnswerResult
from citadel.domain.conversation import (
    MAX_TURNS,
    Conversation,
    ConversationView,
    Turn,
    title_of,
)
from citadel.domain.rewrite import PreviousTurn, QueryRewrite, follow_up
from citadel.domain.users import Actor


def _new_id() -> str:
    return uuid.uuid4().hex


def _without_links(result: AnswerResult) -> AnswerResult:
    """The answer as recorded: citation links are resolved for each reader on display."""
    if result.answer is None:
        return result
    segments = tuple(
        replace(s, citations=tuple(replace(c, link_href=None) for c in s.citations))
        for s in result.answer.segments
    )
    return replace(result, answer=replace(result.answer, segments=segments))


def _answer_text(result: AnswerResult) -> str:
    return " ".join(s.text for s in result.answer.segments) if result.answer else ""


class ConversationService:
    def __init__(
        self,
        store: ConversationStore,
        answering: Answering,
        clock: Clock,
        *,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self._store = store
        self._answering = answering
        self._clock = clock
        self._new_id = new_id

    def using(self, answering: Answering) -> ConversationService:
        """The same service asking ``answering`` (split mode's remote Answer service)."""
        return ConversationService(self._store, answering, self._clock, new_id=self._new_id)

    async def start(
        self,
        actor: Actor,
        request: AnswerRequest,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> tuple[Conversation, Turn]:
        """A new conversation of ``actor`` with ``request`` as its first question; when
        that question gets no answer (an error, the deadline), no conversation is kept."""
        question = request.search.query.strip()
        conversation = Conversation(
            self._new_id(), actor.user_id, actor.tenant, title_of(question), self._clock.now_iso()
        )
        self._store.create(conversation)
        try:
            turn = await self._turn(
                actor,
                conversation,
                1,
                QueryRewrite.as_asked(question),
                request,
                request_id,
                deadline_s,
            )
        except BaseException:
            self._store.delete(actor.tenant, actor.user_id, conversation.conversation_id)
            raise
        return conversation, turn

    async def follow_up(
        self,
        actor: Actor,
        conversation_id: str,
        request: AnswerRequest,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> Turn:
        """The next turn: its query rewritten from the last turn when it leans on it."""
        view = self.open(actor, conversation_id)
        if len(view.turns) >= MAX_TURNS:
            raise InvalidRequest(f"a conversation holds at most {MAX_TURNS} turns")
        last = view.turns[-1] if view.turns else None
        previous = (
            PreviousTurn(last.question, last.query, _answer_text(last.answer)) if last else None
        )
        rewrite = follow_up(request.search.query, previous)
        number = len(view.turns) + 1
        return await self._turn(
            actor, view.conversation, number, rewrite, request, request_id, deadline_s
        )

    async def _turn(
        self,
        actor: Actor,
        conversation: Conversation,
        number: int,
        rewrite: QueryRewrite,
        request: AnswerRequest,
        request_id: str | None,
        deadline_s: float | None,
    ) -> Turn:
        asked = replace(
            request, search=replace(request.search, query=rewrite.query), rewrite=rewrite
        )
        result = await self._answering.answer(
            asked, actor, request_id=request_id, deadline_s=deadline_s
        )
        result = replace(result, rewrite=rewrite)
        turn = Turn(
            conversation.conversation_id,
            number,
            rewrite,
            _without_links(result),
            self._clock.now_iso(),
        )
        try:
            self._store.add_turn(actor.tenant, actor.user_id, turn)
        except ValueError:
            raise VersionConflict(
                "another follow-up was added first; reopen and ask again"
            ) from None
        except KeyError:
            raise NotFound(f"no conversation {conversation.conversation_id}") from None
        return replace(turn, answer=result)

    def list(self, actor: Actor) -> Sequence[Conversation]:
        return self._store.list(actor.tenant, actor.user_id)

    def open(self, actor: Actor, conversation_id: str) -> ConversationView:
        conversation = self._store.get(actor.tenant, actor.user_id, conversation_id)
        if conversation is None:
            raise NotFound(f"no conversation {conversation_id}")
        turns = self._store.turns(actor.tenant, actor.user_id, conversation_id)
        return ConversationView(conversation, tuple(turns))

    def recorded(self, actor: Actor, answer_id: str) -> Turn:
        """The turn that gave ``answer_id``, as recorded (a permalink opens it, not a new ask)."""
        turn = self._store.turn_of_answer(actor.tenant, actor.user_id, answer_id)
        if turn is None:
            raise NotFound(f"no answer {answer_id} in your conversations")
        return turn

    def delete(self, actor: Actor, conversation_id: str) -> None:
        if not self._store.delete(actor.tenant, actor.user_id, conversation_id):
            raise NotFound(f"no conversation {conversation_id}")
