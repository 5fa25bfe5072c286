"""The MCP server over stdio (``citadel mcp``): JSON-RPC on stdout, nothing else.

While it serves, the SDK points file descriptor 1 at stderr for everything but
the transport, so a stray print or a library's output cannot corrupt the wire;
citadel's logs go to stderr too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from citadel.bootstrap import Services
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.server import Fixed, build_server
from citadel.entrypoints.mcp.tools import CitadelTools


def run_stdio(services: Services, lookup: Callable[[], Actor]) -> None:
    """Serve the tools on stdin/stdout until the client closes stdin; every call runs
    for ``lookup()``, asked again on each call."""
    server = build_server(CitadelTools(services), Fixed(lookup))
    asyncio.run(server.run_stdio_async())
