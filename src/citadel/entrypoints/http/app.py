"""``create_app``: the HTTP API, the web UI and the operational endpoints in one ASGI app."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

from citadel.app.answer import Answering
from citadel.bootstrap import Services
from citadel.config import HttpSettings
from citadel.entrypoints.http import (
    admin_sources,
    admin_users,
    api,
    asking,
    conversation_pages,
    conversations_api,
    docs,
    handlers,
    library_pages,
    single_sign_on,
    uploads,
    viewer,
    web,
)
from citadel.entrypoints.http.auth import Edge
from citadel.entrypoints.http.http_metrics import HttpMetrics
from citadel.entrypoints.http.image_limits import ReaderImages
from citadel.entrypoints.http.observability import request_context
from citadel.entrypoints.http.openapi import typed
from citadel.entrypoints.http.pages import STATIC
from citadel.entrypoints.http.security import RateLimiter, SessionSigner, TrustedProxies


def create_app(
    services: Services,
    *,
    session_secret: bytes | None = None,
    answering: Answering | None = None,
) -> FastAPI:
    """The app for ``services``; the session key is the settings', else ``session_secret``,
    else a random one for this process (sessions then end when it stops). ``answering``
    is a remote Answer service in split mode (default: ``services.answer``)."""
    http = services.settings.http
    # What a server that died mid-upload left behind (the folders of dead processes).
    uploads.clean_spool(uploads.spool_root(services))
    configured = http.session_secret.get_secret_value().encode("utf-8")
    secret = configured or session_secret or secrets.token_bytes(32)
    app = FastAPI(
        title="citadel",
        version="1",
        summary="Answers over technical books with citations the application proves.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.edge = Edge(
        services=services,
        sessions=SessionSigner(secret, http.session_ttl_s),
        limiter=RateLimiter(http.rate_per_minute),
        cookie_policy=http.cookie_secure,
        answering=answering or services.answer,
        proxies=TrustedProxies(http.trusted_proxies),
        images=ReaderImages(http.image_concurrency, http.image_rate_per_minute),
    )
    handlers.install(app)
    app.include_router(api.router)
    app.include_router(conversations_api.router)
    app.include_router(admin_sources.router)
    app.include_router(admin_users.users)
    app.include_router(admin_users.audit)
    app.include_router(viewer.router)
    app.include_router(api.ops)
    app.include_router(web.router)
    app.include_router(single_sign_on.router)
    app.include_router(asking.router)
    app.include_router(conversation_pages.router)
    app.include_router(library_pages.router)
    app.include_router(docs.router)
    app.add_api_route("/favicon.ico", favicon, include_in_schema=False)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    typed(app, api.BODIES)

    @app.middleware("http")
    async def context(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        async def guarded(inner: Request) -> Response:
            try:
                return await call_next(inner)
            except Exception as exc:
                return await handlers.handle(inner, exc)

        return await request_context(request, guarded)

    # Outside the context middleware: a handled failure is counted with its status.
    app.add_middleware(HttpMetrics, metrics=services.metrics)
    return app


def favicon() -> Response:
    """Browsers ask for /favicon.ico whatever the page says: the same drawn SVG."""
    body = (STATIC / "favicon.svg").read_bytes()
    return Response(
        body, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"}
    )


def server_options(http: HttpSettings) -> dict[str, Any]:
    """How uvicorn treats forwarded headers: believed only from the configured trusted
    proxies (``CITADEL_HTTP_TRUSTED_PROXIES``), and not at all when there are none —
    never uvicorn's default of trusting loopback, nor its ``FORWARDED_ALLOW_IPS``."""
    trusted = list(http.trusted_proxies)
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted}
