"""The MCP server over streamable HTTP, served by ``citadel serve`` at ``/mcp``.

``McpHttp`` is an ASGI app the HTTP edge mounts (``create_app(mounted=...)``; the
serve command composes the two, so neither wing imports the other). Every HTTP
request to it is authenticated first by ``authenticate`` — the HTTP API's own
bearer-token check, with its rate limits — which raises the API's errors (401
without a valid token, before the MCP transport reads a byte of the body); the
actor it returns rides in the request's ASGI scope to ``dispatch``, so each tool
call runs for the user of the request that carried it.

The transport is stateless and answers with JSON (no server-side sessions, no
event stream): any of several servers on one database can take any request,
and the edge's middleware (request ids, logs, security headers) sees plain
responses. DNS-rebinding checks are off: they protect servers that trust a
browser's ambient credentials, and this one takes only a bearer token a page
cannot attach.

A message is read whole (up to ``http.max_json_bytes``) and checked by the
JSON rule every surface shares (``domain.json_input``) before the SDK sees it:
a duplicate key or an over-long integer is a JSON-RPC parse error (400).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from citadel.app.answer import Answering
from citadel.app.errors import Unauthenticated
from citadel.bootstrap import Services
from citadel.domain.errors import InvalidValue
from citadel.domain.json_input import loads_strict
from citadel.domain.users import Actor
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools

PATH = "/mcp"
ACTOR_KEY = "citadel.mcp.actor"
"""Where the authenticated actor rides in the ASGI scope, from ``McpHttp`` to the tools."""

Authenticate = Callable[[Request], Actor]
"""The HTTP API's caller check: the actor of ``Authorization: Bearer``, or an error."""


def scope_actor(request: Any | None) -> Actor:
    """The ``Caller`` of the HTTP transport: the actor ``McpHttp`` authenticated for the
    HTTP request that carried this tool call."""
    scope = getattr(request, "scope", None)
    actor = scope.get(ACTOR_KEY) if isinstance(scope, dict) else None
    if not isinstance(actor, Actor):
        raise Unauthenticated("this request was not authenticated")
    return actor


class McpHttp:
    """``/mcp``: authenticate, then hand the request to the SDK's streamable HTTP app."""

    path = PATH

    def __init__(
        self,
        services: Services,
        authenticate: Authenticate,
        *,
        answering: Answering | None = None,
    ) -> None:
        self._authenticate = authenticate
        self._max_bytes = services.settings.http.max_json_bytes
        server: MCPServer[Any] = build_server(CitadelTools(services, answering), scope_actor)
        self._inner = server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._manager = server.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            # Nothing but HTTP reaches the transport (a WebSocket is closed at once).
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        if scope["method"] != "POST":
            # Stateless JSON replies: a request is one POST. The SDK would answer GET with
            # an event stream that never ends (one token could hold any number open), and
            # DELETE ends sessions this server does not keep.
            await _refuse_method(send)
            return
        scope[ACTOR_KEY] = await run_in_threadpool(self._authenticate, Request(scope, receive))
        body = await _read_body(receive, self._max_bytes)
        if body is None:
            await _refuse_message(
                send, 413, f"the message is over the {self._max_bytes}-byte limit"
            )
            return
        try:
            # The input rule of every surface: the SDK's own reader would let the
            # last of two equal keys win, and turn a long integer into its own error.
            loads_strict(body)
        except InvalidValue as exc:
            await _refuse_message(send, 400, f"the message: {exc}")
            return
        await self._inner(scope, _replay(body, receive), send)

    def running(self) -> AbstractAsyncContextManager[None]:
        """What must run while the server serves: the SDK's session manager."""
        return self._manager.run()


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The request's whole body, or None once it is over ``limit`` bytes."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then what the client sends next."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


async def _refuse_message(send: Send, status: int, text: str) -> None:
    """A JSON-RPC parse error (-32700), as the SDK answers a body it cannot read."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": text}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _refuse_method(send: Send) -> None:
    body = json.dumps(
        {
            "error": {
                "status": 405,
                "code": "method_not_allowed",
                "message": "the MCP endpoint takes POST only (stateless, JSON replies)",
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 405,
            "headers": [
                (b"allow", b"POST"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
