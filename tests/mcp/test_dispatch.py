"""``dispatch``: the one place a tool call runs, and what a failure tells the caller.

In process, with the SDK's in-memory client: no ../shared, no subprocess.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from citadel.app.errors import Forbidden, NotFound
from citadel.bootstrap import build
from citadel.config import ConfigError, Settings
from citadel.domain.errors import InvalidValue
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.server import INTERNAL, build_server, tool_message
from citadel.entrypoints.mcp.tools import CitadelTools

SECRET = "the passage of a book nobody here may read"


def test_messages_are_the_applications_and_nothing_else() -> None:
    assert tool_message(NotFound("no answer a1")) == "no answer a1"
    assert tool_message(Forbidden("you may not read source s1")) == "you may not read source s1"
    assert tool_message(InvalidValue("limit must be at least 1")) == "limit must be at least 1"
    assert tool_message(ConfigError(SECRET)) == "the server is misconfigured"
    assert tool_message(RuntimeError(SECRET)) == INTERNAL
    assert tool_message(KeyError(SECRET)) == INTERNAL


def test_an_unexpected_failure_is_internal_error_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    services = build(Settings(home=tmp_path, embedder="hashing"))
    calls: list[Any] = []

    def caller(request: Any | None) -> Actor:
        calls.append(request)
        raise RuntimeError(SECRET)

    server = build_server(CitadelTools(services), caller)

    async def main() -> None:
        async with Client(server) as client:
            result = await client.call_tool("search", {"query": "anything"})
        assert result.is_error
        text = " ".join(getattr(block, "text", "") for block in result.content)
        assert INTERNAL in text
        assert SECRET not in text and "Traceback" not in text

    try:
        with caplog.at_level(logging.ERROR, logger="citadel.mcp"):
            anyio.run(main)
    finally:
        services.close()
    assert calls == [None], "the caller is asked once per call (no HTTP request in process)"
    failed = [r for r in caplog.records if r.name == "citadel.mcp"]
    assert failed and failed[0].exc_info is not None, "the details go to the log"
