"""HTTP request metrics: count, latency and in-flight requests by route template.

A pure ASGI middleware around the whole app. The route label is the matched
route's template (``/v1/sources/{source_id}``), never the raw path, so ids,
tokens and queries never become label values; a mounted app (``/static``) is
its mount prefix, and a path no route matches is ``unmatched`` whatever it was,
so a scanner cannot create series. Methods outside the standard set are
``other``. Latency runs to the end of the response body (a streamed answer
included).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
"""The route label of every request no route matched (404s of random paths, redirects)."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetrics(Protocol):
    def http_started(self) -> None: ...

    def http_finished(self, route: str, method: str, status: int, seconds: float) -> None: ...


def route_label(scope: Scope, root_path: str) -> str:
    """The template of the route that handled ``scope`` (mutated by the routers),
    under the mount prefix if any; ``UNMATCHED`` when no route took it."""
    mount = str(scope.get("root_path", ""))[len(root_path) :]
    template = _template(scope.get("route"))
    if template is not None:
        return mount + template
    if mount:
        return mount
    return _top_level(scope) or UNMATCHED


def _template(route: Any) -> str | None:
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return template if isinstance(template, str) else None


def _top_level(scope: Scope) -> str | None:
    """The template of the app's own plain route whose endpoint took ``scope``: FastAPI
    names only its API routes in ``scope["route"]``, not a Starlette ``Route`` added
    beside them (the MCP server's, ``mounting.py``)."""
    endpoint = scope.get("endpoint")
    routes = getattr(getattr(scope.get("app"), "router", None), "routes", ())
    if endpoint is None:
        return None
    for route in routes:
        if getattr(route, "endpoint", None) is endpoint:
            return _template(route)
    return None


class HttpMetrics:
    """Records each HTTP request in ``metrics`` once its response has been sent."""

    def __init__(self, app: ASGIApp, metrics: RequestMetrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        root_path = str(scope.get("root_path", ""))
        method = scope.get("method", "")
        status = 500

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self._metrics.http_started()
        started = time.perf_counter()
        try:
            await self._app(scope, receive, observed)
        finally:
            self._metrics.http_finished(
                route_label(scope, root_path),
                method if method in _METHODS else "other",
                status,
                time.perf_counter() - started,
            )
