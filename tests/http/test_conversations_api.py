"""/v1/conversations: a first question, a follow-up whose query is built from the
conversation, the caller's list, a reopened conversation whose links are resolved for
the reader now, and deletion; another user's conversation is never found."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from citadel.adapters.generators.scripted import ScriptedGenerator, Step
from citadel.app.errors import VersionConflict
from citadel.app.resolver import WITHHELD
from citadel.config import HttpSettings
from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.errors import describe
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, bearer, make_library


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Library, TestClient]]:
    """A library of its own: these tests change its sources' access."""
    lib = make_library(tmp_path / "home")
    with TestClient(create_app(lib.services, session_secret=SECRET)) as client:
        yield lib, client
    lib.services.close()


def _ask(question: str) -> dict[str, Any]:
    return {"search": {"query": question}}


def _start(client: TestClient, library: Library, who: str = "ada") -> dict[str, Any]:
    reply = client.post("/v1/conversations", json=_ask(QUESTION), headers=bearer(library, who))
    assert reply.status_code == 201, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _links(turn: dict[str, Any]) -> list[dict[str, Any]]:
    answer = turn["answer"]["answer"]
    assert answer is not None, turn["answer"]["degraded"]
    return [c["link"] for s in answer["segments"] for c in s["citations"]]


def test_a_conversation_is_asked_followed_up_listed_reopened_and_deleted(
    client: TestClient, library: Library
) -> None:
    ada = bearer(library, "ada")
    started = _start(client, library)
    cid = started["conversation_id"]
    assert started["title"] == QUESTION
    [first] = started["turns"]
    assert first["number"] == 1 and first["question"] == first["query"] == QUESTION
    assert first["rewrite"] == "none" and first["rewritten"] is False
    # The turn's answer is the /v1/answer body, links resolved by the answer service.
    plain = client.post("/v1/answer", json=_ask(QUESTION), headers=ada).json()
    assert set(first["answer"]) == set(plain)
    assert all(link["href"] for link in _links(first))

    reply = client.post(f"/v1/conversations/{cid}/turns", json=_ask("and its cap?"), headers=ada)
    assert reply.status_code == 201, reply.text
    follow = reply.json()
    assert follow["number"] == 2 and follow["question"] == "and its cap?"
    assert follow["rewrite"] == "deterministic" and follow["rewritten"] is True
    assert "retry" in follow["query"].lower() and follow["query"] != follow["question"]
    assert follow["answer"]["query"] == follow["query"]
    assert follow["answer"]["answer_id"] != first["answer"]["answer_id"]

    later = _start(client, library)["conversation_id"]
    listed = client.get("/v1/conversations", headers=ada).json()["items"]
    assert {later, cid} <= {c["conversation_id"] for c in listed}
    order = [(c["created"], c["conversation_id"]) for c in listed]
    assert order == sorted(order, reverse=True)  # newest first (ties: by id)

    reopened = client.get(f"/v1/conversations/{cid}", headers=ada).json()
    assert [t["number"] for t in reopened["turns"]] == [1, 2]
    again = reopened["turns"][1]
    # The recorded answer, not a new one: the same id and text, links resolved again.
    assert again["answer"]["answer_id"] == follow["answer"]["answer_id"]
    texts = [s["text"] for s in again["answer"]["answer"]["segments"]]
    assert texts == [s["text"] for s in follow["answer"]["answer"]["segments"]]
    assert [link["state"] for link in _links(again)] == [link["state"] for link in _links(follow)]
    assert all(link["href"] for link in _links(again))
    assert again["query"] == follow["query"] and again["rewrite"] == "deterministic"

    assert client.delete(f"/v1/conversations/{cid}", headers=ada).status_code == 204
    gone = client.get(f"/v1/conversations/{cid}", headers=ada)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert cid not in [
        c["conversation_id"] for c in client.get("/v1/conversations", headers=ada).json()["items"]
    ]


def test_another_users_conversation_is_not_found(client: TestClient, library: Library) -> None:
    cid = _start(client, library)["conversation_id"]
    for who in ("eve", "lib", "root"):
        headers = bearer(library, who)
        assert client.get(f"/v1/conversations/{cid}", headers=headers).status_code == 404
        turn = client.post(
            f"/v1/conversations/{cid}/turns", json=_ask("and its cap?"), headers=headers
        )
        assert turn.status_code == 404, turn.text
        assert client.delete(f"/v1/conversations/{cid}", headers=headers).status_code == 404
        mine = client.get("/v1/conversations", headers=headers).json()["items"]
        assert cid not in [c["conversation_id"] for c in mine]
    # Still there for its owner.
    ada = bearer(library, "ada")
    assert client.get(f"/v1/conversations/{cid}", headers=ada).status_code == 200


def test_a_reopened_turn_shows_what_the_reader_may_see_now(
    fresh: tuple[Library, TestClient],
) -> None:
    library, client = fresh
    ada = bearer(library, "ada")
    started = _start(client, library)
    cid = started["conversation_id"]
    assert started["turns"][0]["answer"]["search"]["results"]

    library.services.library.set_acl(library.source_id, ["crew"], operator())
    hidden = client.get(f"/v1/conversations/{cid}", headers=ada).json()["turns"][0]
    assert {link["state"] for link in _links(hidden)} == {"forbidden"}
    assert all(link["href"] is None for link in _links(hidden))
    segment = hidden["answer"]["answer"]["segments"][0]
    assert segment["text"] == WITHHELD and "retry" not in segment["text"]
    cited = segment["citations"][0]
    assert cited["title"] == "" and cited["source_id"] == ""
    assert hidden["answer"]["search"]["results"] == []

    library.services.library.set_acl(library.source_id, [], operator())
    library.services.library.delete(library.source_id, operator())
    deleted = client.get(f"/v1/conversations/{cid}", headers=ada).json()["turns"][0]
    assert {link["state"] for link in _links(deleted)} == {"deleted"}
    assert all(link["href"] is None for link in _links(deleted))
    assert deleted["answer"]["search"]["results"] == []
    assert {s["text"] for s in deleted["answer"]["answer"]["segments"]} == {WITHHELD}


def test_errors_are_in_citadels_words(client: TestClient, library: Library) -> None:
    none = client.get("/v1/conversations")
    assert none.status_code == 401 and "WWW-Authenticate" in none.headers
    bad = client.post(
        "/v1/conversations",
        json={"search": {"query": "x"}, "tenant": "other"},
        headers=bearer(library, "ada"),
    )
    assert bad.status_code == 422
    message = bad.json()["error"]["message"]
    assert "unknown field 'tenant'" in message and "pydantic" not in message
    missing = client.post(
        "/v1/conversations/nope/turns", json=_ask("and?"), headers=bearer(library, "ada")
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "no conversation nope"
    # Two follow-ups that race: the later one is a conflict, not an internal error.
    assert describe(VersionConflict("another follow-up was added first"))[:2] == (
        409,
        "conflict",
    )


def test_the_openapi_document_lists_the_conversation_replies(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    assert {"post", "get"} <= set(paths["/v1/conversations"])
    assert {"get", "delete"} <= set(paths["/v1/conversations/{conversation_id}"])
    turns = paths["/v1/conversations/{conversation_id}/turns"]["post"]
    assert turns["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TurnReply"
    }
    assert "409" in turns["responses"]
    components = schema["components"]["schemas"]
    assert {"TurnReply", "ConversationReply", "ConversationsReply"} <= set(components)
    assert components["TurnReply"]["properties"]["answer"]["$ref"].endswith("/AnswerReply")


def test_a_turn_has_the_requests_deadline_and_a_failed_start_keeps_nothing(
    tmp_path: Path,
) -> None:
    library = make_library(
        tmp_path,
        generator=ScriptedGenerator([Step(delay_s=5.0)]),
        http=HttpSettings(rate_per_minute=10_000, deadline_s=0.5),
    )
    ada = bearer(library, "ada")
    try:
        with TestClient(create_app(library.services, session_secret=SECRET)) as client:
            reply = client.post("/v1/conversations", json=_ask(QUESTION), headers=ada)
            assert reply.status_code == 504, reply.text
            assert reply.json()["error"]["code"] == "deadline_exceeded"
            assert client.get("/v1/conversations", headers=ada).json()["items"] == []
    finally:
        library.services.close()
