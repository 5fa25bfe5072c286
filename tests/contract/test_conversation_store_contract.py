"""One contract for the ConversationStore port, run against SQLite, PostgreSQL and memory.

A conversation is its owner's, in their tenant: another user, or the same name in
another tenant, never finds, lists, extends or deletes it. Turns come back in order,
each with its recorded answer whole (the same answer id, segments and citations).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.memory.conversations import InMemoryConversations
from citadel.adapters.postgres import database as postgres
from citadel.adapters.postgres.conversations import PostgresConversations
from citadel.adapters.sqlite.conversations import SqliteConversations
from citadel.adapters.sqlite.database import Database
from citadel.app.ports.conversations import ConversationStore
from citadel.domain.rewrite import RewriteKind
from tests.conversation_builders import conversation, turn


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConversationStore]:
    if request.param == "sqlite":
        db = Database(tmp_path / "contract" / "library.db")
        yield SqliteConversations(db)
        db.close()
    elif request.param == "postgresql":
        pg = postgres.Database(request.getfixturevalue("postgres_url"))
        yield PostgresConversations(pg)
        pg.close()
    else:
        yield InMemoryConversations()


def test_a_conversation_reads_back_whole_for_its_owner_only(store: ConversationStore) -> None:
    mine = conversation()
    store.create(mine)
    assert store.get("acme", "ada", "c1") == mine
    assert store.get("acme", "bo", "c1") is None, "another user of the tenant"
    assert store.get("globex", "ada", "c1") is None, "the same name in another tenant"
    assert store.get("acme", "ada", "c2") is None


def test_a_taken_id_is_refused_and_nothing_changes(store: ConversationStore) -> None:
    store.create(conversation())
    with pytest.raises(ValueError, match="taken"):
        store.create(conversation(owner="bo", title="other"))
    assert store.get("acme", "ada", "c1") == conversation()
    assert store.get("acme", "bo", "c1") is None


def test_the_list_is_the_owners_newest_first(store: ConversationStore) -> None:
    store.create(conversation("c1", created="2026-01-01T00:00:00+00:00"))
    store.create(conversation("c3", created="2026-01-03T00:00:00+00:00"))
    store.create(conversation("c2", created="2026-01-02T00:00:00+00:00"))
    store.create(conversation("x1", owner="bo"))
    store.create(conversation("x2", tenant="globex"))
    assert [c.conversation_id for c in store.list("acme", "ada")] == ["c3", "c2", "c1"]
    assert [c.conversation_id for c in store.list("acme", "bo")] == ["x1"]
    assert store.list("acme", "cy") == []


def test_turns_come_back_in_order_with_their_answers_whole(store: ConversationStore) -> None:
    store.create(conversation())
    first = turn(1)
    second = turn(2, question="and its default?", query="and its default? retry budget")
    third = turn(3, question="Nothing here?", accepted=False)
    for t in (second, first, third):
        store.add_turn("acme", "ada", t)
    got = store.turns("acme", "ada", "c1")
    assert got == [first, second, third]
    assert got[1].rewrite.kind is RewriteKind.DETERMINISTIC
    assert got[1].answer.rewrite == second.rewrite
    assert got[0].answer.answer is not None
    assert got[0].answer.answer.segments[0].citations[0].title == "Reliable Service Design"
    assert got[2].answer.degraded is not None


def test_a_turn_number_is_taken_once(store: ConversationStore) -> None:
    store.create(conversation())
    store.add_turn("acme", "ada", turn(1, answer_id="first"))
    with pytest.raises(ValueError, match="already"):
        store.add_turn("acme", "ada", turn(1, answer_id="second"))
    assert [t.answer_id for t in store.turns("acme", "ada", "c1")] == ["first"]


def test_nobody_else_adds_to_or_reads_a_conversation(store: ConversationStore) -> None:
    store.create(conversation())
    with pytest.raises(KeyError):
        store.add_turn("acme", "bo", turn(1))
    with pytest.raises(KeyError):
        store.add_turn("globex", "ada", turn(1))
    with pytest.raises(KeyError):
        store.add_turn("acme", "ada", turn(1, conversation_id="missing"))
    store.add_turn("acme", "ada", turn(1))
    assert store.turns("acme", "bo", "c1") == []
    assert store.turns("globex", "ada", "c1") == []


def test_a_turn_is_found_by_its_answer_id_by_its_owner(store: ConversationStore) -> None:
    store.create(conversation())
    store.create(conversation("c2", owner="bo"))
    store.add_turn("acme", "ada", turn(1, answer_id="ans-ada"))
    store.add_turn("acme", "bo", turn(1, conversation_id="c2", answer_id="ans-bo"))
    found = store.turn_of_answer("acme", "ada", "ans-ada")
    assert found is not None and found.conversation_id == "c1"
    assert store.turn_of_answer("acme", "ada", "ans-bo") is None
    assert store.turn_of_answer("acme", "bo", "ans-ada") is None
    assert store.turn_of_answer("acme", "ada", "nothing") is None


def test_delete_removes_the_owners_conversation_and_its_turns(store: ConversationStore) -> None:
    store.create(conversation())
    store.add_turn("acme", "ada", turn(1, answer_id="ans-1"))
    assert not store.delete("acme", "bo", "c1"), "another user cannot delete it"
    assert not store.delete("globex", "ada", "c1")
    assert store.get("acme", "ada", "c1") is not None
    assert store.delete("acme", "ada", "c1")
    assert store.get("acme", "ada", "c1") is None
    assert store.turns("acme", "ada", "c1") == []
    assert store.turn_of_answer("acme", "ada", "ans-1") is None
    assert not store.delete("acme", "ada", "c1"), "deleted once"
    # The id may be used again, with no turn of the old one left behind.
    store.create(conversation())
    assert store.turns("acme", "ada", "c1") == []
