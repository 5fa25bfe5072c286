"""Conversations and their turns, kept per owner within a tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citadel.domain.conversation import Conversation, Turn


class ConversationStore(Protocol):
    """Every read and delete names the tenant and the owner: a conversation of another
    user (or tenant) is never found, whoever asks."""

    def create(self, conversation: Conversation) -> None:
        """Store a new conversation; ``ValueError`` when its id is taken."""
        ...

    def get(self, tenant: str, owner: str, conversation_id: str) -> Conversation | None:
        """That owner's conversation; None when there is none (or it is another's)."""
        ...

    def list(self, tenant: str, owner: str) -> Sequence[Conversation]:
        """The owner's conversations, newest first (ties by id)."""
        ...

    def add_turn(self, tenant: str, owner: str, turn: Turn) -> None:
        """Append ``turn`` to its conversation. ``KeyError`` when the conversation is not
        the owner's; ``ValueError`` when a turn of that number is there already (two
        follow-ups raced: the later one is refused, nothing is overwritten)."""
        ...

    def turns(self, tenant: str, owner: str, conversation_id: str) -> Sequence[Turn]:
        """The conversation's turns in order; empty when it is not the owner's."""
        ...

    def turn_of_answer(self, tenant: str, owner: str, answer_id: str) -> Turn | None:
        """The owner's turn that gave the answer ``answer_id``; None when there is none."""
        ...

    def delete(self, tenant: str, owner: str, conversation_id: str) -> bool:
        """Delete the conversation and its turns; False when it is not the owner's."""
        ...
