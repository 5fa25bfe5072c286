"""The MCP server over stdio (``citadel mcp``): JSON-RPC on stdout, nothing else.

While it serves, the SDK points file descriptor 1 at stderr for everything but
the transport, so a stray print or a library's output cannot corrupt the wire;
citadel's logs go to stderr too. File descriptor 0 is likewise pointed at the
null device here, and the wire is read from a private copy of it.

Each line is read by the JSON rule every input surface shares
(``domain.json_input``) before the SDK parses it: a line with a key given twice
or an over-long integer literal is answered with a JSON-RPC parse error
(-32700, naming what is wrong, with the line's id when one can be read) and
never reaches a tool — as over streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError

from citadel.bootstrap import Services
from citadel.domain.errors import InvalidValue
from citadel.domain.json_input import loads_strict
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.server import Fixed, build_server
from citadel.entrypoints.mcp.tools import CitadelTools

PARSE_ERROR = -32700


def run_stdio(services: Services, lookup: Callable[[], Actor]) -> None:
    """Serve the tools on stdin/stdout until the client closes stdin; every call runs
    for ``lookup()``, asked again on each call."""
    server = build_server(CitadelTools(services), Fixed(lookup))
    asyncio.run(serve_stdio(server))


async def serve_stdio(server: MCPServer[Any]) -> None:
    """``server`` on this process's stdin and stdout, each line checked first."""
    refusals_in, refusals_out = anyio.create_memory_object_stream[SessionMessage](64)
    with _claimed_stdin() as wire:
        lines = StrictLines(anyio.wrap_file(wire), refusals_in)
        async with (
            stdio_server(stdin=lines) as (read, write),  # type: ignore[arg-type]
            anyio.create_task_group() as group,
        ):
            group.start_soon(_answer_refusals, refusals_out, write)
            # The SDK runs its transport this way in ``run_stdio_async``.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()


class StrictLines:
    """The lines of ``wire`` that pass the shared JSON rule; a refusal for each other."""

    def __init__(self, wire: Any, refusals: MemoryObjectSendStream[SessionMessage]) -> None:
        self._wire = wire
        self._refusals = refusals

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._wire:
            if not line.strip():
                yield line
                continue
            try:
                loads_strict(line)
            except InvalidValue as exc:
                await self._refusals.send(_refusal(line, str(exc)))
                continue
            yield line


def _refusal(line: str, reason: str) -> SessionMessage:
    error = ErrorData(code=PARSE_ERROR, message=f"the message: {reason}")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=_id_of(line), error=error))


def _id_of(line: str) -> str | int | None:
    """The request id a lenient reader finds in ``line`` (None when there is none)."""
    try:
        # Any number too long to convert is no id: read it as 0 rather than fail.
        value = json.loads(line, parse_int=lambda text: int(text) if len(text) <= 64 else 0)
    except (ValueError, RecursionError):
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


async def _answer_refusals(
    refusals: MemoryObjectReceiveStream[SessionMessage],
    write: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with refusals:
        async for message in refusals:
            await write.send(message)


@contextmanager
def _claimed_stdin() -> Iterator[Any]:
    """A text stream on a private copy of fd 0, with fd 0 on the null device meanwhile
    (a handler or child reading stdin reads nothing of the wire); restored after."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # closefd=False: a worker thread may still block on it after the transport ends.
    wire = open(private, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    try:
        yield wire
    finally:
        os.dup2(private, 0)
