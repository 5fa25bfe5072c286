"""A conversation: one reader's follow-up questions, each turn a whole answer of its own.

A conversation belongs to the user who started it, in their tenant; no one else
sees it, an admin included (it holds what they asked). Each turn keeps the
question as asked, the search query it ran (``domain.rewrite``) and the answer as
it was given, so reopening a conversation shows that answer again under its own
answer id rather than asking anew.
"""

from __future__ import annotations

from dataclasses import dataclass

from citadel.domain.answer import AnswerResult
from citadel.domain.errors import InvalidValue
from citadel.domain.rewrite import QueryRewrite
from citadel.domain.users import Actor

MAX_TITLE_CHARS = 120
MAX_TURNS = 100
"""Turns one conversation may hold: past this, a new conversation is started."""


def title_of(question: str) -> str:
    """A conversation's title: its first question, on one line, cut at a word."""
    line = " ".join(question.split())
    if len(line) <= MAX_TITLE_CHARS:
        return line
    cut = line[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0]
    return cut + "…"


@dataclass(frozen=True, slots=True)
class Conversation:
    conversation_id: str
    owner: str
    """The user id of the reader who started it."""
    tenant: str
    title: str
    created: str
    """ISO 8601, UTC."""

    def __post_init__(self) -> None:
        if not self.conversation_id or not self.owner or not self.tenant:
            raise InvalidValue("a conversation needs an id, an owner and a tenant")

    def owned_by(self, actor: Actor) -> bool:
        return self.owner == actor.user_id and self.tenant == actor.tenant


@dataclass(frozen=True, slots=True)
class Turn:
    conversation_id: str
    number: int
    """1 for the first question, then 2, 3, … in the order they were asked."""
    rewrite: QueryRewrite
    """The question as asked, the query searched, and how the one became the other."""
    answer: AnswerResult
    """The answer as it was given (citation links are resolved again on display)."""
    created: str

    def __post_init__(self) -> None:
        if self.number < 1:
            raise InvalidValue("turns are numbered from 1")

    @property
    def question(self) -> str:
        return self.rewrite.question

    @property
    def query(self) -> str:
        return self.rewrite.query

    @property
    def answer_id(self) -> str:
        return self.answer.answer_id


@dataclass(frozen=True, slots=True)
class ConversationView:
    """A conversation with its turns, oldest first."""

    conversation: Conversation
    turns: tuple[Turn, ...]
