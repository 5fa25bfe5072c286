"""The MCP server through the SDK's own client, over stdio and streamable HTTP.

Each transport is the real one: ``python -m citadel mcp --as USER`` spawned by the
SDK's stdio client, and ``citadel serve``'s app under uvicorn on loopback with a
bearer token. Over R-intro: the tools are listed with their schemas, an answer's
every citation carries exactly the link the resolver gives that reader, and a
reader outside a source's ACL gets nothing of it through search, ask or
get_passage.
"""

from __future__ import annotations

import json
import math
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from citadel.app.resolver import Target
from citadel.domain.users import Actor
from citadel.entrypoints.present.shapes import link_json
from tests.conftest import ROOT
from tests.mcp.conftest import (
    SECRET_TERM,
    SECRET_TITLE,
    McpLibrary,
    base_env,
    citadel_command,
)

pytestmark = pytest.mark.shared  # R-intro, from ../shared/books

QUESTION = "How do I read data from a file into a data frame?"
SECRET_QUESTION = "How is the zebracorn bonus pool paid?"

Connect = Callable[[str], Any]


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, mcp_library: McpLibrary) -> Connect:
    """``connect(user)``: an initialized client session for ``user`` over the transport."""
    if request.param == "stdio":
        return lambda user: stdio_session(mcp_library, user)
    url = request.getfixturevalue("mcp_url")
    return lambda user: http_session(url, mcp_library.tokens[user])


@asynccontextmanager
async def stdio_session(library: McpLibrary, user: str) -> AsyncIterator[ClientSession]:
    command = citadel_command()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "mcp", "--as", user],
        # base_env: PYTHONPATH too, so the server runs this checkout's code.
        env={**base_env(), **library.env()},
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(block, "text", "") for block in result.content)


def resolver_link(library: McpLibrary, actor: Actor, citation: dict[str, Any]) -> dict[str, Any]:
    """What the resolver gives ``actor`` for this citation now (as ``resolve_answer``
    builds its target: the cited chunk and the quotation's span)."""
    support = citation["support"]
    span = support["span"] if support else None
    target = Target(
        citation["source_id"],
        citation["version"],
        citation["evidence_id"],
        (span["start"], span["end"]) if span else None,
    )
    return link_json(library.services.resolver.resolve([target], actor)[0])


async def within_a_minute(
    call: Callable[[], Awaitable[dict[str, Any]]],
    expected: Callable[[dict[str, Any]], Any],
) -> tuple[dict[str, Any], Any]:
    """``call()`` and ``expected(its result)``, both within one wall-clock minute: viewer
    links are minted per minute, so the server's and the resolver's are then the same."""
    for _ in range(3):
        started = time.time()
        out = await call()
        want = expected(out)
        if math.floor(started / 60) == math.floor(time.time() / 60):
            return out, want
    raise AssertionError("three calls in a row straddled a minute")


def citations(answer: dict[str, Any]) -> list[dict[str, Any]]:
    assert answer["answer"] is not None, answer["degraded"]
    return [c for s in answer["answer"]["segments"] for c in s["citations"]]


def test_lists_three_typed_tools_and_reports_errors_as_messages(connect: Connect) -> None:
    async def main() -> None:
        async with connect("ada") as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            errors = [
                error_text(await session.call_tool("get_passage", {})),
                error_text(await session.call_tool("get_passage", {"answer_id": "x", "ref": "E1"})),
                error_text(await session.call_tool("search", {"query": "x", "limit": 0})),
            ]
        # Tool errors are messages for the caller, never a stack trace.
        assert "answer_id and ref" in errors[0]
        assert "no answer x" in errors[1]
        assert "limit" in errors[2]
        for text in errors:
            assert "Traceback" not in text and 'File "' not in text
        assert set(listed) == {"search", "ask", "get_passage"}
        assert listed["search"].input_schema["required"] == ["query"]
        assert listed["ask"].input_schema["required"] == ["question"]
        for tool in listed.values():
            assert tool.output_schema is not None, tool.name
            assert tool.annotations is not None and tool.annotations.read_only_hint
        ask = listed["ask"].output_schema or {}
        assert {"answer", "degraded", "results", "answer_id"} <= set(ask["properties"])
        hit = (listed["search"].output_schema or {})["$defs"]["SearchHit"]["properties"]
        assert {"title", "chapter", "section", "pages", "score"} <= set(hit)

    run(main)


def test_an_answer_over_r_intro_carries_the_resolvers_links(
    connect: Connect, mcp_library: McpLibrary
) -> None:
    ada = mcp_library.actor("ada")

    async def main() -> None:
        async with connect("ada") as session:

            async def ask() -> dict[str, Any]:
                return structured(await session.call_tool("ask", {"question": QUESTION}))

            answer, expected = await within_a_minute(
                ask, lambda out: [resolver_link(mcp_library, ada, c) for c in citations(out)]
            )
            cited = citations(answer)
            assert cited, "the answer cites nothing"
            assert [c["link"] for c in cited] == expected
            for c in cited:
                assert c["source_id"] == mcp_library.r_intro
                assert c["link"]["state"] == "viewer"
                assert "token=" in c["link"]["href"]
                assert c["attribution"].startswith("An Introduction to R")
                assert c["support"]["label"] in {"verbatim", "supported", "partial"}
            assert all(r["title"] == "An Introduction to R" for r in answer["results"])
            assert all(r["pages"] for r in answer["results"]), "R-intro has printed pages"

            # The first citation's passage, resolved again for ada now.
            first = cited[0]

            async def passage() -> dict[str, Any]:
                args = {"answer_id": answer["answer_id"], "ref": first["ref"]}
                return structured(await session.call_tool("get_passage", args))

            def again(_: dict[str, Any]) -> dict[str, Any]:
                target = mcp_library.services.audit.target(answer["answer_id"], first["ref"], ada)
                return link_json(mcp_library.services.resolver.resolve([target], ada)[0])

            read, link = await within_a_minute(passage, again)
            assert read["link"] == link
            assert read["chunk_id"] == first["evidence_id"]
            assert read["title"] == "An Introduction to R"
            assert read["pages"] == first["pages"]
            if first["support"]["span"]:
                assert read["quoted"] and read["quoted"] in read["text"]

            # A degraded answer: no written answer, the reason, and the search results.
            floor = {"question": QUESTION, "minimum_evidence_score": 1.0}
            degraded = structured(await session.call_tool("ask", floor))
            assert degraded["answer"] is None
            assert degraded["degraded"]["reason"] == "no_evidence"
            assert isinstance(degraded["results"], list)

    run(main)


def test_a_reader_outside_the_acl_gets_nothing_of_the_source(
    connect: Connect, mcp_library: McpLibrary
) -> None:
    async def main() -> None:
        # The finance reader finds and is answered from the restricted book: the
        # control that the checks below could fail.
        async with connect("fin") as fin:
            found = structured(await fin.call_tool("search", {"query": SECRET_TERM}))
            mine = [r for r in found["results"] if r["source_id"] == mcp_library.secret]
            assert mine and mine[0]["title"] == SECRET_TITLE
            answered = structured(await fin.call_tool("ask", {"question": SECRET_QUESTION}))
            secret_refs = [
                c["ref"] for c in citations(answered) if c["source_id"] == mcp_library.secret
            ]
            assert secret_refs, "fin's answer cites the restricted book"
            readable = await fin.call_tool("get_passage", {"evidence_id": mine[0]["evidence_id"]})
            assert SECRET_TERM in structured(readable)["text"]

        async with connect("ada") as ada:
            outputs: list[str] = []
            searched = structured(await ada.call_tool("search", {"query": SECRET_TERM}))
            assert all(r["source_id"] != mcp_library.secret for r in searched["results"])
            asked = structured(await ada.call_tool("ask", {"question": SECRET_QUESTION}))
            assert all(r["source_id"] != mcp_library.secret for r in asked["results"])
            if asked["answer"] is not None:
                assert all(c["source_id"] != mcp_library.secret for c in citations(asked))
            # Everything but the query itself, which echoes the caller's own words (as
            # the conversation turn does: a first question searches as asked).
            turn = asked["conversation"]
            assert turn["rewrite"] == "none"
            assert turn["question"] == turn["searched_for"] == SECRET_QUESTION
            for out in (searched, asked):
                echoes = ("query", "conversation")
                outputs.append(json.dumps({k: v for k, v in out.items() if k not in echoes}))

            by_id = await ada.call_tool("get_passage", {"evidence_id": mine[0]["evidence_id"]})
            assert "no passage" in error_text(by_id)
            by_ref = await ada.call_tool(
                "get_passage", {"answer_id": answered["answer_id"], "ref": secret_refs[0]}
            )
            assert "may not see" in error_text(by_ref)
            outputs += [error_text(by_id), error_text(by_ref)]
            for text in outputs:
                assert SECRET_TERM not in text.lower()
                assert SECRET_TITLE not in text
                assert mcp_library.secret not in text

    run(main)


def test_http_without_a_valid_token_is_refused(mcp_url: str, mcp_library: McpLibrary) -> None:
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=30) as http:
        bare = http.post(mcp_url, json=hello, headers=accept)
        assert bare.status_code == 401
        assert bare.headers["www-authenticate"].startswith("Bearer")
        assert bare.json()["error"]["code"] == "unauthenticated"
        wrong = http.post(mcp_url, json=hello, headers={**accept, "Authorization": "Bearer x"})
        assert wrong.status_code == 401
        gone = {**accept, "Authorization": f"Bearer {mcp_library.tokens['gone']}"}
        assert http.post(mcp_url, json=hello, headers=gone).status_code == 403
        ok = {**accept, "Authorization": f"Bearer {mcp_library.tokens['ada']}"}
        reply = http.post(mcp_url, json=hello, headers=ok)
        # The edge's security headers ride on the MCP reply without breaking it.
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-security-policy"].startswith("default-src 'self'")
        assert reply.json()["result"]["serverInfo"]["name"] == "citadel"


def test_stdio_writes_only_json_rpc_to_stdout(mcp_library: McpLibrary) -> None:
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "read.table", "limit": 2}},
    }
    with subprocess.Popen(
        [*citadel_command(), "mcp", "--as", "ada"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**base_env(), **mcp_library.env()},
        cwd=ROOT,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        watchdog = threading.Timer(120, process.kill)
        watchdog.start()
        try:
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            for message in (hello, initialized, search):
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
            replies: list[dict[str, Any]] = []
            while not any(r.get("id") == 2 for r in replies):
                line = process.stdout.readline()
                assert line, "the server closed stdout before answering"
                replies.append(json.loads(line))  # every line on stdout is one message
            process.stdin.close()
            rest = process.stdout.read()
            process.wait(30)
        finally:
            watchdog.cancel()
            process.kill()
    assert rest.strip() == ""
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert [r.get("id") for r in replies] == [1, 2]
    found = replies[1]["result"]["structuredContent"]
    assert found["results"] and found["results"][0]["title"] == "An Introduction to R"


def test_stdio_refuses_an_unknown_user_before_serving(mcp_library: McpLibrary) -> None:
    done = subprocess.run(
        [*citadel_command(), "mcp", "--as", "nobody"],
        check=False,
        input="",
        capture_output=True,
        text=True,
        env={**base_env(), **mcp_library.env()},
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "nobody" in done.stderr


def test_stdio_refuses_a_line_the_shared_json_rule_refuses(mcp_library: McpLibrary) -> None:
    # A duplicate key (the SDK alone would take the last) and a 5,001-digit literal:
    # each a JSON-RPC parse error with its id; the next request is served as usual.
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    call = '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "search",'
    lines = [
        json.dumps(hello),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call % 2 + ' "arguments": {"query": "read.table", "limit": 0, "limit": 2}}}',
        call % 3 + ' "arguments": {"query": "read.table", "limit": 1' + "0" * 5000 + "}}}",
        call % 4 + ' "arguments": {"query": "read.table", "limit": 2}}}',
    ]
    with subprocess.Popen(
        [*citadel_command(), "mcp", "--as", "ada"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**base_env(), **mcp_library.env()},
        cwd=ROOT,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        watchdog = threading.Timer(120, process.kill)
        watchdog.start()
        try:
            for line in lines:
                process.stdin.write(line + "\n")
                process.stdin.flush()
            replies: dict[Any, dict[str, Any]] = {}
            while not {2, 3, 4} <= replies.keys():
                line = process.stdout.readline()
                assert line, "the server closed stdout before answering"
                reply = json.loads(line)
                replies[reply.get("id")] = reply
            process.stdin.close()
            process.wait(30)
        finally:
            watchdog.cancel()
            process.kill()
    assert replies[2]["error"]["code"] == -32700
    assert "duplicate key 'limit'" in replies[2]["error"]["message"]
    assert replies[3]["error"]["code"] == -32700
    assert "5001 digits" in replies[3]["error"]["message"]
    assert replies[4]["result"]["structuredContent"]["results"]
