"""A tool call with refused arguments is told in citadel's words, as the HTTP API's
422 bodies are: which argument, what is wrong, the limit; none of pydantic's text
(its documentation URLs, type codes, model names) and not the refused value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from citadel.bootstrap import Services, build
from citadel.config import Settings
from citadel.domain.users import Actor, Role
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": "q", "limit": 1000}, "'limit' must be at most 100"),
    ("search", {"query": "q", "limit": "5"}, "'limit' must be a whole number"),
    ("search", {"limit": 5}, "'query' is required"),
    ("search", {"query": "q", "colour": "red"}, "unknown field 'colour'"),
    ("search", {"query": "q", "mode": "fuzzy"}, "'mode' must be one of"),
    ("ask", {"question": ""}, "'question' needs at least 1 character"),
    ("ask", {"question": "q", "minimum_evidence_score": 2.0}, "must be at most 1.0"),
    ("get_passage", {"evidence_id": 5}, "'evidence_id' must be text"),
]
PYDANTIC = ("pydantic", "Input should", "Field required", "type=", "Arguments", "input_value")


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    services = build(Settings(home=tmp_path_factory.mktemp("mcp-words"), embedder="hashing"))
    yield services
    services.close()


@pytest.mark.parametrize(("tool", "arguments", "words"), CASES, ids=[w for _, _, w in CASES])
def test_refused_arguments_name_the_field_and_the_fault(
    services: Services, tool: str, arguments: dict[str, Any], words: str
) -> None:
    actor = Actor(user_id="ada", tenant="default", role=Role.READER)
    server = build_server(CitadelTools(services), lambda request: actor)

    async def call() -> tuple[bool, str]:
        async with Client(server) as mcp:
            result = await mcp.call_tool(tool, arguments)
        return result.is_error, " ".join(getattr(block, "text", "") for block in result.content)

    is_error, text = anyio.run(call)
    assert is_error
    assert words in text, text
    assert text.startswith(f"{tool} refused its arguments: "), text
    assert not any(mark in text for mark in PYDANTIC), text
