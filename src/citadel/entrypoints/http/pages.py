"""Server-rendered pages: one Jinja2 environment with autoescaping on, and the CSRF token.

Templates never mark text safe; the only script is ``/static/app.js``. Fragments
(``fragment``) are the same templates' parts, for the streamed ask page.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from citadel.entrypoints.http.auth import edge, session_of
from citadel.entrypoints.http.security import CSRF_COOKIE, set_cookie

HERE = Path(__file__).parent
STATIC = HERE / "static"


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def csrf_token(request: Request) -> str:
    """The token a form on this page must send back (see ``security``)."""
    session = session_of(request)
    if session is not None:
        return session.csrf
    existing = request.cookies.get(CSRF_COOKIE)
    state = edge(request)
    if state.sessions.valid_anonymous_csrf(existing):
        assert existing is not None
        return existing
    fresh: str = getattr(request.state, "new_csrf", "") or state.sessions.anonymous_csrf()
    request.state.new_csrf = fresh
    return fresh


def fragment(template: str, **context: Any) -> str:
    """A part of a page (the answer, the evidence), rendered as the page renders it: the
    streamed ask page inserts exactly what the plain page would have shown."""
    return environment().get_template(template).render(**context)


def page(
    request: Request,
    template: str,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    body = (
        environment()
        .get_template(template)
        .render(
            csrf_token=csrf_token(request), user=getattr(request.state, "user", None), **context
        )
    )
    response = HTMLResponse(body, status, headers=dict(headers or {}))
    response.headers["Cache-Control"] = "no-store"
    fresh = getattr(request.state, "new_csrf", "")
    if fresh:
        set_cookie(response, request, CSRF_COOKIE, fresh, edge(request).cookie_policy)
    return response


def error_page(
    request: Request, status: int, message: str, headers: Mapping[str, str]
) -> HTMLResponse:
    return page(
        request,
        "error.html",
        status,
        headers,
        code=status,
        message=message,
        request_id=getattr(request.state, "request_id", "-"),
    )
