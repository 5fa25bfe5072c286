"""The conversation use case on the in-memory store and a recording fake of the answer
use case: each turn is one ask; follow-ups search the rewritten query as the same actor
with the caller's filters; another reader's conversation is not found."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

import pytest

from citadel.adapters.memory.conversations import InMemoryConversations
from citadel.app.answer import AnswerRequest
from citadel.app.conversations import ConversationService
from citadel.app.errors import NotFound, RequestDeadlineExceeded
from citadel.domain.answer import AnswerResult, LinkState
from citadel.domain.rewrite import RewriteKind
from citadel.domain.search import SearchFilters, SearchRequest
from citadel.domain.users import Actor
from tests.conversation_builders import answered

ADA, BO = Actor("ada", "acme"), Actor("bo", "acme")


class FixedClock:
    def now_iso(self) -> str:
        return "2026-01-01T00:00:00+00:00"


class RecordingAnswers:
    def __init__(self) -> None:
        self.asked: list[tuple[AnswerRequest, Actor]] = []
        self.deadlines: list[float | None] = []
        self.failing: Exception | None = None
        self._ids = itertools.count(1)

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> AnswerResult:
        self.asked.append((request, actor))
        self.deadlines.append(deadline_s)
        if self.failing is not None:
            raise self.failing
        result = answered(f"ans-{next(self._ids)}", request.search.query)
        assert result.answer is not None
        segments = tuple(
            replace(
                s,
                citations=tuple(
                    replace(c, link_state=LinkState.VIEWER, link_href="/v1/x") for c in s.citations
                ),
            )
            for s in result.answer.segments
        )
        return replace(result, answer=replace(result.answer, segments=segments))


NO_FILTERS = SearchFilters()


def ask(question: str, filters: SearchFilters = NO_FILTERS) -> AnswerRequest:
    return AnswerRequest(SearchRequest(question, limit=20, filters=filters))


def service() -> tuple[ConversationService, RecordingAnswers]:
    answers = RecordingAnswers()
    ids = iter(f"c{n}" for n in itertools.count(1))
    return ConversationService(
        InMemoryConversations(), answers, FixedClock(), new_id=lambda: next(ids)
    ), answers


def test_a_follow_up_is_its_own_ask_of_the_rewritten_query_as_the_same_actor() -> None:
    chat, answers = service()
    only = SearchFilters(tags_any=frozenset({"r"}))
    conversation, first = asyncio.run(
        chat.start(ADA, ask("How do I create a numeric vector?", only))
    )
    assert first.rewrite.kind is RewriteKind.NONE
    second = asyncio.run(
        chat.follow_up(ADA, conversation.conversation_id, ask("How do I sort it?", only))
    )
    assert second.number == 2 and second.answer_id != first.answer_id
    request, actor = answers.asked[1]
    assert actor == ADA and request.search.filters == only and request.search.limit == 20
    assert request.search.query == second.query != second.question
    assert request.rewrite == second.rewrite and second.rewrite.kind is RewriteKind.DETERMINISTIC
    assert "numeric" in second.query and second.answer.rewrite == second.rewrite


def test_reopening_shows_the_recorded_answers_without_a_new_ask() -> None:
    chat, answers = service()
    conversation, first = asyncio.run(chat.start(ADA, ask("What is a retry budget?")))
    view = chat.open(ADA, conversation.conversation_id)
    assert len(answers.asked) == 1
    assert [t.answer_id for t in view.turns] == [first.answer_id]
    assert chat.recorded(ADA, first.answer_id).answer_id == first.answer_id
    stored = view.turns[0].answer.answer
    assert stored is not None
    assert all(c.link_href is None for s in stored.segments for c in s.citations), (
        "links are resolved on display"
    )
    assert [c.conversation_id for c in chat.list(ADA)] == ["c1"]


def test_another_reader_finds_nothing_and_cannot_add_or_delete() -> None:
    chat, answers = service()
    conversation, first = asyncio.run(chat.start(ADA, ask("What is a retry budget?")))
    cid = conversation.conversation_id
    with pytest.raises(NotFound):
        chat.open(BO, cid)
    with pytest.raises(NotFound):
        asyncio.run(chat.follow_up(BO, cid, ask("and it?")))
    with pytest.raises(NotFound):
        chat.delete(BO, cid)
    with pytest.raises(NotFound):
        chat.recorded(BO, first.answer_id)
    assert chat.list(BO) == [] and len(answers.asked) == 1
    chat.delete(ADA, cid)
    with pytest.raises(NotFound):
        chat.open(ADA, cid)


def test_each_turn_asks_with_the_callers_deadline() -> None:
    chat, answers = service()
    conversation, _ = asyncio.run(chat.start(ADA, ask("What is a retry budget?"), deadline_s=7.5))
    asyncio.run(chat.follow_up(ADA, conversation.conversation_id, ask("and it?"), deadline_s=2.0))
    asyncio.run(chat.follow_up(ADA, conversation.conversation_id, ask("and then?")))
    assert answers.deadlines == [7.5, 2.0, None]


def test_a_first_question_that_fails_leaves_no_conversation() -> None:
    chat, answers = service()
    answers.failing = RequestDeadlineExceeded("the request's deadline passed")
    with pytest.raises(RequestDeadlineExceeded):
        asyncio.run(chat.start(ADA, ask("What is a retry budget?")))
    assert chat.list(ADA) == []
    # A follow-up that fails leaves the conversation as it was.
    answers.failing = None
    conversation, _ = asyncio.run(chat.start(ADA, ask("What is a retry budget?")))
    answers.failing = RequestDeadlineExceeded("the request's deadline passed")
    with pytest.raises(RequestDeadlineExceeded):
        asyncio.run(chat.follow_up(ADA, conversation.conversation_id, ask("and it?")))
    assert [t.number for t in chat.open(ADA, conversation.conversation_id).turns] == [1]
