"""Follow-ups over MCP: each ``ask`` is a turn of a conversation; its
``conversation.conversation_id`` passed back to ``ask`` asks a follow-up whose search is
built from the conversation (shown, and in the turn's audit record); another reader's
conversation is not found. In process, through the SDK's client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from citadel.domain.rewrite import RewriteKind
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools
from tests.http.conftest import QUESTION, Library, make_library


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    lib = make_library(tmp_path_factory.mktemp("mcp-chat"), relevance="off")
    yield lib
    lib.services.close()


def call(library: Library, actor: Actor, tool: str, arguments: dict[str, Any]) -> Any:
    server = build_server(CitadelTools(library.services), lambda request: actor)
    out: list[Any] = []

    async def main() -> None:
        async with Client(server) as client:
            out.append(await client.call_tool(tool, arguments))

    anyio.run(main)
    return out[0]


def listed_tools(library: Library, actor: Actor) -> dict[str, Any]:
    server = build_server(CitadelTools(library.services), lambda request: actor)
    out: dict[str, Any] = {}

    async def main() -> None:
        async with Client(server) as client:
            out.update({t.name: t for t in (await client.list_tools()).tools})

    anyio.run(main)
    return out


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_an_ask_starts_a_conversation_and_its_id_asks_a_follow_up(library: Library) -> None:
    ada = library.services.users.actor("ada")
    first = call(library, ada, "ask", {"question": QUESTION})
    assert not first.is_error, first.content
    turn = first.structured_content["conversation"]
    cid = turn["conversation_id"]
    assert turn["turn"] == 1 and turn["rewrite"] == "none"
    assert turn["question"] == turn["searched_for"] == QUESTION
    assert f"conversation\\_id {cid}, turn 1" in text_of(first)
    assert "Searched for" not in text_of(first)

    follow = call(library, ada, "ask", {"question": "and its cap?", "conversation_id": cid})
    assert not follow.is_error, follow.content
    record = follow.structured_content
    second = record["conversation"]
    assert second["conversation_id"] == cid and second["turn"] == 2
    assert second["rewrite"] == "deterministic" and second["question"] == "and its cap?"
    assert "retry" in second["searched_for"].lower()
    assert record["query"] == second["searched_for"]
    assert text_of(follow).startswith(f"Searched for: {second['searched_for']}")

    view = library.services.conversations.open(ada, cid)
    assert [t.answer_id for t in view.turns] == [
        first.structured_content["answer_id"],
        record["answer_id"],
    ]
    audited = library.services.audit.show(record["answer_id"], ada)
    assert audited.rewrite is not None and audited.rewrite.kind is RewriteKind.DETERMINISTIC


def test_another_readers_conversation_is_not_found(library: Library) -> None:
    ada = library.services.users.actor("ada")
    cid = call(library, ada, "ask", {"question": QUESTION}).structured_content["conversation"][
        "conversation_id"
    ]
    root = library.services.users.actor("root")
    refused = call(library, root, "ask", {"question": "and its cap?", "conversation_id": cid})
    assert refused.is_error and f"no conversation {cid}" in text_of(refused)
    assert [t.number for t in library.services.conversations.open(ada, cid).turns] == [1]


def test_the_ask_tool_takes_an_optional_conversation_id(library: Library) -> None:
    ask = listed_tools(library, library.services.users.actor("ada"))["ask"]
    assert ask.input_schema["required"] == ["question"]
    assert "conversation_id" in ask.input_schema["properties"]
    assert "conversation" in (ask.output_schema or {})["properties"]
    too_long = call(
        library,
        library.services.users.actor("ada"),
        "ask",
        {"question": QUESTION, "conversation_id": "x" * 129},
    )
    assert too_long.is_error and "conversation_id" in text_of(too_long)


def test_an_agents_conversation_is_the_readers_own(tmp_path: Path) -> None:
    """Listed with the reader's other conversations (the web UI's, the CLI's)."""
    lib = make_library(tmp_path / "home", relevance="off")
    try:
        ada = lib.services.users.actor("ada")
        call(lib, ada, "ask", {"question": QUESTION})
        listed = lib.services.conversations.list(ada)
        assert [c.title for c in listed] == [QUESTION]
        assert lib.services.conversations.list(lib.services.users.actor("eve")) == []
    finally:
        lib.services.close()
