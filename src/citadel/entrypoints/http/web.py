"""The web UI: sign in, ask, the library. Forms post back here with a CSRF token.

The pages call the same use cases as the API; a browser without a session is
sent to the sign-in form.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from citadel.app.answer import AnswerRequest
from citadel.app.errors import Forbidden, IngestError, Unauthenticated, UserDisabled
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http.auth import (
    RecentIngest,
    authenticate_token,
    browser_actor,
    edge,
    session_of,
)
from citadel.entrypoints.http.errors import CsrfRefused, RateLimited, SignInRequired
from citadel.entrypoints.http.pages import page
from citadel.entrypoints.http.presenters import answer_view, source_view
from citadel.entrypoints.http.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    csrf_matches,
    set_cookie,
)
from citadel.entrypoints.http.uploads import OPTION_FIELDS, ingest_upload, received, spool_root

router = APIRouter(include_in_schema=False)

MAX_QUESTION = 2000


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


@router.get("/signin")
def signin_form(request: Request) -> Response:
    return page(request, "signin.html", error=None, name="")


@router.post("/signin")
async def signin(request: Request) -> Response:
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    name = fields.get("name", "").strip()
    token = fields.get("token", "").strip()
    try:
        actor = await run_in_threadpool(authenticate_token, request, token)
        if actor.user_id != name:
            raise Unauthenticated("name and token do not match")
    except UserDisabled:
        return page(request, "signin.html", 403, error="This user is disabled.", name=name)
    except RateLimited:
        raise
    except Unauthenticated:
        return page(request, "signin.html", 401, error="Unknown name or API token.", name=name)
    state = edge(request)
    cookie, _ = state.sessions.issue(actor.user_id, state.services.users.stamp(token))
    response = RedirectResponse("/ask", status_code=303)
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
        edge(request).revoked.revoke(session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.get("/ask")
def ask_form(request: Request, actor: Reader) -> Response:
    return page(request, "ask.html", question="", view=None, error=None)


@router.post("/ask")
async def ask(request: Request, actor: Reader) -> Response:
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    question = fields.get("question", "").strip()
    if not question or len(question) > MAX_QUESTION:
        return page(
            request,
            "ask.html",
            422,
            question=question[:MAX_QUESTION],
            view=None,
            error=f"Ask a question of 1 to {MAX_QUESTION} characters.",
        )
    services = edge(request).services
    result = await edge(request).answering.answer(
        AnswerRequest(SearchRequest(query=question, limit=20)),
        actor,
        request_id=request.state.request_id,
        deadline_s=services.settings.http.deadline_s,
    )
    return page(request, "ask.html", question=question, view=answer_view(result), error=None)


def _library(request: Request, actor: Actor, status: int = 200, **notes: str | None) -> Response:
    state = edge(request)
    sources = state.services.library.list(actor)
    return page(
        request,
        "library.html",
        status,
        sources=[source_view(s, actor) for s in sources],
        # The same access rule as the listing: uploads of sources shown above, and one's own.
        recent=state.recent_for(actor, {s.source_id for s in sources}),
        may_upload=actor.role in {Role.LIBRARIAN, Role.ADMIN},
        max_bytes=state.services.settings.max_file_bytes,
        message=notes.get("message"),
        error=notes.get("error"),
    )


@router.get("/library")
def library(request: Request, actor: Reader) -> Response:
    return _library(request, actor)


@router.post("/library")
async def upload(request: Request, actor: Reader) -> Response:
    if actor.role not in {Role.LIBRARIAN, Role.ADMIN}:
        raise Forbidden("only librarians and admins add sources")
    state = edge(request)
    allowed = (*OPTION_FIELDS, CSRF_FIELD)
    limit = state.services.settings.max_file_bytes
    async with received(request, limit, allowed, spool_root(state.services)) as file:
        check_csrf(request, file.fields.pop(CSRF_FIELD, None))
        try:
            report = await run_in_threadpool(ingest_upload, state.services, file, actor)
        except IngestError as exc:
            state.remember(actor.tenant, RecentIngest(actor.user_id, exc.path, "failed", str(exc)))
            return _library(request, actor, 422, error=str(exc))
    detail = (
        f"source {report.source_id} v{report.version}: {report.pages} pages,"
        f" {report.sections} sections, {report.chunks} chunks"
    )
    state.remember(
        actor.tenant,
        RecentIngest(actor.user_id, report.path, report.status, detail, report.source_id),
    )
    return _library(request, actor, message=f"{report.status}: {report.title} ({detail})")
