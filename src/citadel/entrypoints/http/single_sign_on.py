"""Sign-in without pasting a token: through the OpenID provider, or a one-time link.

``/signin/oidc`` starts the authorization code flow (``app.sign_in``): the flow
(state, nonce, PKCE verifier, where to land) goes to the browser in a signed
cookie that lives ten minutes and only travels to ``/signin/oidc``; it is
``SameSite=Lax``, since the provider sends the browser back with a cross-site
navigation, which a ``Strict`` cookie would not join. The callback signs the
user in and answers with a page of its own that then moves on: the session
cookie is ``Strict``, so a redirect straight from the provider's navigation
would arrive without it.

``/signin/link/<secret>`` is a one-time link from ``citadel users add``: opening
it shows a button, and only the button's POST (with the page's CSRF token)
spends the link, so a mail scanner that fetches links cannot use it up.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from citadel.app.errors import ServiceUnavailable, Unauthenticated, UserDisabled
from citadel.app.sign_in import ExternalSignIn
from citadel.app.users import LINK_TTL_S
from citadel.domain.identity import SignInFlow
from citadel.domain.users import Actor
from citadel.entrypoints.http.auth import edge
from citadel.entrypoints.http.errors import SignInRequired
from citadel.entrypoints.http.pages import page
from citadel.entrypoints.http.returning import safe_next
from citadel.entrypoints.http.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    cookie_secure,
    set_cookie,
)
from citadel.entrypoints.http.web import check_csrf, form_fields, signin_page

router = APIRouter(include_in_schema=False)

FLOW_COOKIE = "citadel_oidc_flow"
FLOW_PATH = "/signin/oidc"
FLOW_TTL_S = 600
CALLBACK = "/signin/oidc/callback"
_FLOW_PURPOSE = "oidc-flow"


def _provider(request: Request) -> ExternalSignIn:
    sign_in = edge(request).services.sign_in
    if sign_in is None:
        raise SignInRequired("single sign-on is not configured here: sign in with a token")
    return sign_in


def redirect_uri(request: Request) -> str:
    """Where the provider sends the browser back: under the public URL when one is set
    (what the provider has registered), else under the URL this request came to."""
    public = edge(request).services.settings.public_url
    base = public or str(request.base_url).rstrip("/")
    return f"{base}{CALLBACK}"


def _signed_in(request: Request, actor: Actor, stamp: str, next_path: str) -> Response:
    """The page a sign-in ends on: it sets the session and moves on to ``next_path``."""
    state = edge(request)
    cookie, _ = state.sessions.issue(actor.user_id, stamp)
    response = page(request, "signed_in.html", name=actor.user_id, next=next_path)
    set_cookie(response, request, SESSION_COOKIE, cookie, state.cookie_policy)
    response.delete_cookie(CSRF_COOKIE, path="/")
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@router.get(FLOW_PATH)
async def start(request: Request) -> Response:
    sign_in = _provider(request)
    back = safe_next(request.query_params.get("next"))
    try:
        flow, url = await sign_in.begin(redirect_uri(request), back)
    except ServiceUnavailable as exc:
        return signin_page(request, 503, error=f"Single sign-on is unavailable: {exc}", next=back)
    sealed = edge(request).sessions.seal(
        _FLOW_PURPOSE,
        {"s": flow.state, "n": flow.nonce, "v": flow.verifier, "x": flow.next},
        FLOW_TTL_S,
    )
    response = RedirectResponse(url, status_code=303)
    response.set_cookie(
        FLOW_COOKIE,
        sealed,
        max_age=FLOW_TTL_S,
        httponly=True,
        samesite="lax",
        secure=cookie_secure(request, edge(request).cookie_policy),
        path=FLOW_PATH,
    )
    return response


def _flow(request: Request) -> SignInFlow | None:
    fields = edge(request).sessions.unseal(_FLOW_PURPOSE, request.cookies.get(FLOW_COOKIE))
    if fields is None or not {"s", "n", "v", "x"} <= fields.keys():
        return None
    return SignInFlow(fields["s"], fields["n"], fields["v"], safe_next(fields["x"]))


@router.get(CALLBACK)
async def callback(request: Request) -> Response:
    sign_in = _provider(request)
    query = request.query_params
    flow = _flow(request)
    back = flow.next if flow else safe_next(None)
    refused = query.get("error")
    if refused:
        described = query.get("error_description") or refused
        response = signin_page(
            request, 401, error=f"The provider did not sign you in: {described[:200]}", next=back
        )
    else:
        try:
            actor = await sign_in.complete(
                flow, query.get("state", ""), query.get("code", ""), redirect_uri(request)
            )
            stamp = await run_in_threadpool(sign_in.session_stamp, actor)
            response = _signed_in(request, actor, stamp, back)
        except UserDisabled:
            response = signin_page(request, 403, error="This user is disabled.", next=back)
        except Unauthenticated as exc:
            response = signin_page(request, 401, error=f"Sign-in failed: {exc}", next=back)
        except ServiceUnavailable as exc:
            response = signin_page(
                request, 503, error=f"Single sign-on is unavailable: {exc}", next=back
            )
    response.delete_cookie(FLOW_COOKIE, path=FLOW_PATH)  # a flow is good for one callback
    return response


@router.get("/signin/link/{secret}")
def link_page(request: Request, secret: str) -> Response:
    response = page(request, "signin_link.html", secret=secret, minutes=LINK_TTL_S // 60)
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@router.post("/signin/link")
async def use_link(request: Request) -> Response:
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    users = edge(request).services.users
    try:
        actor = await run_in_threadpool(users.use_link, fields.get("secret", ""))
        stamp = await run_in_threadpool(users.session_stamp_of, actor.user_id)
    except UserDisabled:
        return signin_page(request, 403, error="This user is disabled.")
    except Unauthenticated:
        return signin_page(
            request,
            401,
            error="This sign-in link is unknown, used or expired: ask for a new one.",
        )
    return _signed_in(request, actor, stamp, safe_next(None))
