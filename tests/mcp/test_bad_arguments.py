"""MCP tools refuse every case of the shared bad-input table, as ``POST /v1/search`` does.

The ``search`` tool's ``limit`` takes each case: over streamable HTTP as the
raw JSON-RPC text a client sends (a tool error; a JSON-RPC parse error, 400,
for text no parsed value can carry), and in process through the SDK's client
(the argument path stdio shares).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from citadel.bootstrap import Services, build
from citadel.config import Settings
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli.serve import http_app
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools
from tests.bad_inputs import BAD_INPUTS, IDS, BadInput

HEAD = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search",'
ARGUMENTS = ' "arguments": {"query": "eigenvalues"'


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    services = build(Settings(home=tmp_path_factory.mktemp("mcp-args"), embedder="hashing"))
    yield services
    services.close()


@pytest.fixture(scope="module")
def client(services: Services) -> Iterator[tuple[TestClient, dict[str, str]]]:
    _, token = services.users.add("ada", Role.READER, "default")
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    with TestClient(http_app(services), raise_server_exceptions=False) as test_client:
        yield test_client, headers


def call(client: tuple[TestClient, dict[str, str]], text: str) -> Any:
    http, headers = client
    return http.post("/mcp", content=text.encode(), headers=headers)


@pytest.mark.parametrize("case", BAD_INPUTS, ids=IDS)
def test_over_http_each_bad_argument_is_refused(
    client: tuple[TestClient, dict[str, str]], case: BadInput
) -> None:
    reply = call(client, case.text(HEAD + ARGUMENTS, "limit", "}}"))
    if case.parsed_form:
        assert reply.status_code == 200, reply.text
        result = reply.json()["result"]
        assert result["isError"] is True
        message = " ".join(block.get("text", "") for block in result["content"])
    else:
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["code"] == -32700
        message = error["message"]
    assert case.expected("limit") in message


def test_over_http_the_same_call_without_the_defect_succeeds(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    reply = call(client, HEAD + ARGUMENTS + ', "limit": 5}}}')
    assert reply.status_code == 200 and reply.json()["result"]["isError"] is False


def test_json_text_for_a_list_is_no_list(client: tuple[TestClient, dict[str, str]]) -> None:
    # The SDK would decode it (HTTP refuses it): one rule, so the tool refuses it too.
    reply = call(client, HEAD + ARGUMENTS + ', "source_ids": "[\\"a\\"]"}}}')
    result = reply.json()["result"]
    assert result["isError"] is True and "source_ids" in json.dumps(result)


@pytest.mark.parametrize("case", [c for c in BAD_INPUTS if c.parsed_form], ids=lambda c: c.id)
def test_in_process_each_bad_argument_is_a_tool_error(services: Services, case: BadInput) -> None:
    arguments = case.parsed('{"query": "eigenvalues"', "limit")
    actor = Actor(user_id="ada", tenant="default", role=Role.READER)
    server = build_server(CitadelTools(services), lambda request: actor)

    async def main() -> None:
        async with Client(server) as mcp:
            result = await mcp.call_tool("search", arguments)
        assert result.is_error
        text = " ".join(getattr(block, "text", "") for block in result.content)
        assert case.expected("limit") in text

    anyio.run(main)
