"""Another entrypoint's ASGI app served inside the HTTP edge (the MCP server at /mcp).

The edge knows only this shape, not the wing that provides it: the serve
command composes the two (``mount(create_app(...), McpHttp(...))``), so the HTTP
wing imports no other wing. A mounted app sits behind the edge's middleware
(request ids, JSON logs, security headers, metrics) and error handlers, so an
authentication error it raises is answered as the API answers it (401 with
``WWW-Authenticate``); what it needs running while the server runs is entered
in the app's lifespan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from fastapi import FastAPI
from starlette.routing import Route
from starlette.types import Receive, Scope, Send


class Mounted(Protocol):
    """An ASGI app served at ``path``, and what must run while the server serves."""

    path: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def running(self) -> AbstractAsyncContextManager[None]: ...


def mount(app: FastAPI, mounted: Mounted) -> FastAPI:
    """``app`` serving ``mounted`` at its path (every method; not in the OpenAPI document),
    with ``mounted.running()`` entered for as long as the app's lifespan runs."""
    # A Route whose endpoint is an ASGI app (not a function) hands it the request as is.
    app.router.routes.append(Route(mounted.path, endpoint=mounted, include_in_schema=False))
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(inner: Any) -> AsyncIterator[Any]:
        async with mounted.running(), previous(inner) as state:
            yield state

    app.router.lifespan_context = lifespan
    return app
