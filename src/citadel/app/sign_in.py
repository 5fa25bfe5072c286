"""Signing in through an OpenID provider: the authorization code flow with PKCE.

``begin`` makes a flow (fresh state, nonce and PKCE verifier) and the URL to send
the browser to; the entrypoint keeps the flow with the browser (a signed cookie).
``complete`` takes what the provider sent back: the returned state must be the
flow's (else the callback was not started by this browser), the code is
exchanged and the ID token verified by the provider adapter, its claims mapped
to an identity (``domain.identity``) and the user found or registered as a
reader (``UserService.sign_in_external``). Every way in shares these checks.
"""

from __future__ import annotations

import hmac
import secrets

from citadel.app.errors import Unauthenticated
from citadel.app.ports.identity import OpenIdProvider
from citadel.app.users import UserService
from citadel.domain.errors import InvalidValue
from citadel.domain.identity import ClaimNames, SignInFlow, map_claims
from citadel.domain.users import Actor

_SECRET_BYTES = 32


class ExternalSignIn:
    def __init__(
        self, provider: OpenIdProvider, users: UserService, claims: ClaimNames, label: str
    ) -> None:
        self._provider = provider
        self._users = users
        self._claims = claims
        self.label = label
        """What the sign-in button calls the provider ("Sign in with <label>")."""

    async def begin(self, redirect_uri: str, next_path: str = "/") -> tuple[SignInFlow, str]:
        flow = SignInFlow(
            state=secrets.token_urlsafe(_SECRET_BYTES),
            nonce=secrets.token_urlsafe(_SECRET_BYTES),
            verifier=secrets.token_urlsafe(_SECRET_BYTES * 2),  # 86 characters (RFC 7636)
            next=next_path,
        )
        return flow, await self._provider.authorization_url(flow, redirect_uri)

    async def complete(
        self, flow: SignInFlow | None, returned_state: str, code: str, redirect_uri: str
    ) -> Actor:
        """The actor the provider's answer signs in; ``Unauthenticated`` when the flow is
        missing or expired, the state differs, or the token does not check out;
        ``UserDisabled`` for a disabled user."""
        if flow is None:
            raise Unauthenticated("this sign-in expired or was started in another browser")
        if not returned_state or not hmac.compare_digest(
            flow.state.encode("utf-8"), returned_state.encode("utf-8")
        ):
            raise Unauthenticated("this sign-in was not started by this browser")
        if not code:
            raise Unauthenticated("the provider sent no authorization code")
        claims = await self._provider.verified_claims(code, flow, redirect_uri)
        try:
            identity = map_claims(claims, self._claims)
        except InvalidValue as exc:
            raise Unauthenticated(f"the provider's ID token cannot sign in: {exc}") from None
        return self._users.sign_in_external(identity)

    def session_stamp(self, actor: Actor) -> str:
        """The stamp a session of this actor carries (its hidden token's)."""
        return self._users.session_stamp_of(actor.user_id)
