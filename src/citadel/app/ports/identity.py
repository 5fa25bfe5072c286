"""An OpenID provider, as the sign-in use case needs it: where to send a browser, and
the verified claims of the ID token a returned authorization code is worth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from citadel.domain.identity import SignInFlow


class OpenIdProvider(Protocol):
    @property
    def issuer(self) -> str:
        """The provider's issuer identifier, as its ID tokens name it (``iss``)."""
        ...

    async def authorization_url(self, flow: SignInFlow, redirect_uri: str) -> str:
        """Where to send the browser: an authorization code request carrying the flow's
        state, nonce and PKCE challenge (S256). ``ServiceUnavailable`` when the
        provider cannot be reached."""
        ...

    async def verified_claims(
        self, code: str, flow: SignInFlow, redirect_uri: str
    ) -> Mapping[str, object]:
        """Exchange ``code`` (with the flow's PKCE verifier) and return the ID token's
        claims once its signature, issuer, audience, expiry and nonce are checked.
        ``Unauthenticated`` for a code or token that does not check out,
        ``ServiceUnavailable`` when the provider cannot be reached."""
        ...
