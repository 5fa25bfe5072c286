"""The composition root wires conversations onto the library's own database: a
conversation started by one process is listed, reopened and followed up by the
next, and each turn's rewrite is in that turn's audit record."""

from __future__ import annotations

import asyncio
from pathlib import Path

from citadel.app.answer import AnswerRequest
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.rewrite import RewriteKind
from citadel.domain.search import SearchRequest
from tests.http.conftest import make_library


def _ask(question: str) -> AnswerRequest:
    return AnswerRequest(SearchRequest(query=question))


def test_a_conversation_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = make_library(home)
    ada = first.services.users.actor("ada")
    conversations = first.services.conversations
    conversation, turn = asyncio.run(
        conversations.start(ada, _ask("How does a retry budget keep failures bounded?"))
    )
    assert turn.answer.answer is not None, turn.answer.degraded
    first.services.close()

    again = build(Settings(home=home, embedder="hashing"))
    try:
        ada = again.users.actor("ada")
        assert [c.conversation_id for c in again.conversations.list(ada)] == [
            conversation.conversation_id
        ]
        follow = asyncio.run(
            again.conversations.follow_up(ada, conversation.conversation_id, _ask("and its cap?"))
        )
        assert follow.number == 2
        assert follow.rewrite.kind is RewriteKind.DETERMINISTIC
        assert "retry" in follow.rewrite.query.lower()
        record = again.audit.show(follow.answer.answer_id, ada)
        assert record.rewrite == follow.rewrite
        view = again.conversations.open(ada, conversation.conversation_id)
        assert [t.number for t in view.turns] == [1, 2]
        eve = again.users.actor("eve")
        assert again.conversations.list(eve) == []
    finally:
        again.close()
