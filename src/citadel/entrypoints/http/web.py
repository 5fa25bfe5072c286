"""The web UI's sessions: sign in and out, and what every page's forms rely on.

Forms post back with a CSRF token (``check_csrf``). The pages call the same use
cases as the API; a browser without a session is sent to the sign-in form. The
ask page is ``asking``, the library's pages ``library_pages``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from citadel.app.errors import Unauthenticated, UserDisabled
from citadel.domain.users import Actor
from citadel.entrypoints.http.auth import (
    authenticate_token,
    browser_actor,
    edge,
    session_of,
)
from citadel.entrypoints.http.errors import CsrfRefused, RateLimited, SignInRequired
from citadel.entrypoints.http.pages import page
from citadel.entrypoints.http.returning import HOME, safe_next
from citadel.entrypoints.http.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    csrf_matches,
    set_cookie,
)

router = APIRouter(include_in_schema=False)


def signed_in(request: Request) -> Actor:
    actor = browser_actor(request)
    if actor is None:
        raise SignInRequired("sign in first")
    return actor


Reader = Annotated[Actor, Depends(signed_in)]


def check_csrf(request: Request, given: str | None) -> None:
    session = session_of(request)
    if session is not None:
        ok = csrf_matches(session.csrf, given)
    else:
        cookie = request.cookies.get(CSRF_COOKIE)
        ok = edge(request).sessions.valid_anonymous_csrf(cookie) and csrf_matches(cookie, given)
    if not ok:
        raise CsrfRefused(
            "this form expired or was not sent from this site: reload the page and try again"
        )


async def form_fields(request: Request) -> dict[str, str]:
    form = await request.form(max_files=0, max_fields=10, max_part_size=64 * 1024)
    return {k: v for k, v in form.items() if isinstance(v, str)}


@router.get("/")
def home(request: Request) -> Response:
    return RedirectResponse("/ask" if session_of(request) else "/signin", status_code=303)


def signin_page(
    request: Request,
    status: int = 200,
    *,
    error: str | None = None,
    name: str = "",
    next: str = HOME,
) -> Response:
    """The sign-in page: single sign-on first when a provider is configured, then the
    name-and-token form (scripts' way in, and every way in without a provider)."""
    sign_in = edge(request).services.sign_in
    return page(
        request,
        "signin.html",
        status,
        error=error,
        name=name,
        next=next,
        sso=sign_in.label if sign_in else None,
    )


@router.get("/signin")
def signin_form(request: Request) -> Response:
    return signin_page(request, next=safe_next(request.query_params.get("next")))


@router.post("/signin")
async def signin(request: Request) -> Response:
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    name = fields.get("name", "").strip()
    token = fields.get("token", "").strip()
    back = safe_next(fields.get("next"))
    try:
        actor = await run_in_threadpool(authenticate_token, request, token)
        if actor.user_id != name:
            raise Unauthenticated("name and token do not match")
    except UserDisabled:
        return signin_page(request, 403, error="This user is disabled.", name=name, next=back)
    except RateLimited:
        raise
    except Unauthenticated:
        return signin_page(request, 401, error="Unknown name or API token.", name=name, next=back)
    state = edge(request)
    cookie, _ = state.sessions.issue(actor.user_id, state.services.users.stamp(token))
    response = RedirectResponse(back, status_code=303)
    set_cookie(response, request, SESSION_COOKIE, cookie, state.cookie_policy)
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


@router.post("/signout")
async def signout(request: Request) -> Response:
    """End the session for good: the server forgets it, not only the browser (a copy of
    the cookie taken before stops working too)."""
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    session = session_of(request)
    if session is not None:
        actor = browser_actor(request)
        if actor is not None:
            edge(request).questions.forget(actor.tenant, actor.user_id)
        edge(request).revoked.revoke(session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
