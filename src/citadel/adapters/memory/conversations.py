"""The in-memory conversation store: conversations and turns in dictionaries."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from citadel.domain.conversation import Conversation, Turn


class InMemoryConversations:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conversations: dict[str, Conversation] = {}
        self._turns: dict[str, list[Turn]] = {}

    def _owned(self, tenant: str, owner: str, conversation_id: str) -> Conversation | None:
        found = self._conversations.get(conversation_id)
        if found is None or found.tenant != tenant or found.owner != owner:
            return None
        return found

    def create(self, conversation: Conversation) -> None:
        with self._lock:
            if conversation.conversation_id in self._conversations:
                raise ValueError("conversation id taken")
            self._conversations[conversation.conversation_id] = conversation
            self._turns[conversation.conversation_id] = []

    def get(self, tenant: str, owner: str, conversation_id: str) -> Conversation | None:
        with self._lock:
            return self._owned(tenant, owner, conversation_id)

    def list(self, tenant: str, owner: str) -> Sequence[Conversation]:
        with self._lock:
            mine = [
                c for c in self._conversations.values() if (c.tenant, c.owner) == (tenant, owner)
            ]
        return sorted(mine, key=lambda c: (c.created, c.conversation_id), reverse=True)

    def add_turn(self, tenant: str, owner: str, turn: Turn) -> None:
        with self._lock:
            if self._owned(tenant, owner, turn.conversation_id) is None:
                raise KeyError(turn.conversation_id)
            turns = self._turns[turn.conversation_id]
            if any(t.number == turn.number for t in turns):
                raise ValueError(f"turn {turn.number} is there already")
            turns.append(turn)
            turns.sort(key=lambda t: t.number)

    def turns(self, tenant: str, owner: str, conversation_id: str) -> Sequence[Turn]:
        with self._lock:
            if self._owned(tenant, owner, conversation_id) is None:
                return []
            return list(self._turns[conversation_id])

    def turn_of_answer(self, tenant: str, owner: str, answer_id: str) -> Turn | None:
        with self._lock:
            for conversation_id, turns in self._turns.items():
                if self._owned(tenant, owner, conversation_id) is None:
                    continue
                for turn in turns:
                    if turn.answer_id == answer_id:
                        return turn
        return None

    def delete(self, tenant: str, owner: str, conversation_id: str) -> bool:
        with self._lock:
            if self._owned(tenant, owner, conversation_id) is None:
                return False
            del self._conversations[conversation_id]
            del self._turns[conversation_id]
            return True
