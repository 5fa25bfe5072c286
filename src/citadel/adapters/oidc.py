"""An OpenID Connect provider reached with authlib (the OAuth 2 client: authorization
URL with PKCE, code exchange) and joserfc (the ID token's signature and claims).

The provider's metadata comes from its discovery document
(``<issuer>/.well-known/openid-configuration``), whose ``issuer`` must be the one
configured; it and the provider's keys (``jwks_uri``) are fetched on first use
and kept, and the keys fetched again once when a token names a key not among
them (the provider rotated its keys). Plain http is refused except to loopback
(a provider started for development or tests).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx2
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from citadel.app.errors import ServiceUnavailable, Unauthenticated
from citadel.domain.identity import SignInFlow

log = logging.getLogger("citadel.oidc")

LEEWAY_S = 60
"""Clock skew allowed between this server and the provider when checking exp and iat."""
TIMEOUT_S = 10.0
_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
"""Asymmetric signatures only: ``none`` and the HMAC algorithms (keyed with the client
secret) are never accepted."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint(url: str, what: str) -> str:
    """``url`` when it is https, or http to loopback; ``ValueError`` otherwise."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and _loopback(parts.hostname or ""):
        return url
    raise ValueError(f"the provider's {what} must be an https:// URL (http only to loopback)")


class AuthlibProvider:
    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str,
        *,
        scopes: str = "openid profile email",
        timeout_s: float = TIMEOUT_S,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._issuer = check_endpoint(issuer.rstrip("/"), "issuer")
        self._client_id = client_id
        self._client_secret = client_secret
        scope_words = scopes.split()
        self._scopes = " ".join(
            scope_words if "openid" in scope_words else ["openid", *scope_words]
        )
        self._timeout = timeout_s
        self._transport = transport
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None

    @property
    def issuer(self) -> str:
        return self._issuer

    def _http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=self._timeout, transport=self._transport)

    def _oauth(self, redirect_uri: str) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(
            self._client_id,
            self._client_secret or None,
            scope=self._scopes,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_basic" if self._client_secret else "none",
            timeout=self._timeout,
            transport=self._transport,
        )

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with self._http() as http:
                reply = await http.get(url, headers={"Accept": "application/json"})
            reply.raise_for_status()
            body = reply.json()
        except (httpx2.HTTPError, ValueError) as exc:
            log.warning("the OpenID provider's %s at %s: %s", what, url, exc)
            raise ServiceUnavailable(f"the sign-in provider's {what} could not be read") from None
        if not isinstance(body, dict):
            raise ServiceUnavailable(f"the sign-in provider's {what} is not a JSON object")
        return body

    async def metadata(self) -> dict[str, Any]:
        """The discovery document, fetched once; ``ServiceUnavailable`` when it cannot be
        read or does not describe the configured issuer."""
        if self._metadata is not None:
            return self._metadata
        # No lock: two first requests racing fetch the same document twice, harmlessly.
        found = await self._get_json(
            f"{self._issuer}/.well-known/openid-configuration", "discovery document"
        )
        if str(found.get("issuer", "")).rstrip("/") != self._issuer:
            raise ServiceUnavailable(
                "the sign-in provider's discovery document names another issuer"
            )
        try:
            for endpoint in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                check_endpoint(str(found.get(endpoint, "")), endpoint)
        except ValueError as exc:
            raise ServiceUnavailable(str(exc)) from None
        self._metadata = found
        return self._metadata

    async def _key_set(self, refresh: bool = False) -> KeySet:
        if self._keys is not None and not refresh:
            return self._keys
        metadata = await self.metadata()
        body = await self._get_json(str(metadata["jwks_uri"]), "signing keys")
        try:
            self._keys = KeySet.import_key_set(body)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            raise ServiceUnavailable("the sign-in provider's signing keys are unreadable") from None
        return self._keys

    async def authorization_url(self, flow: SignInFlow, redirect_uri: str) -> str:
        metadata = await self.metadata()
        async with self._oauth(redirect_uri) as client:
            url, _ = client.create_authorization_url(
                str(metadata["authorization_endpoint"]),
                state=flow.state,
                nonce=flow.nonce,
                code_verifier=flow.verifier,
            )
        return str(url)

    async def verified_claims(
        self, code: str, flow: SignInFlow, redirect_uri: str
    ) -> Mapping[str, object]:
        metadata = await self.metadata()
        try:
            async with self._oauth(redirect_uri) as client:
                token = await client.fetch_token(
                    str(metadata["token_endpoint"]),
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=flow.verifier,
                    redirect_uri=redirect_uri,
                )
        except OAuthError as exc:
            raise Unauthenticated(f"the provider refused the sign-in: {exc.error}") from None
        except (httpx2.HTTPError, ValueError) as exc:
            log.warning("the OpenID provider's token endpoint: %s", exc)
            raise ServiceUnavailable("the sign-in provider did not answer") from None
        id_token = token.get("id_token") if isinstance(token, Mapping) else None
        if not isinstance(id_token, str) or not id_token:
            raise Unauthenticated("the provider sent no ID token")
        return await self._checked(id_token, flow.nonce)

    async def _checked(self, id_token: str, nonce: str) -> Mapping[str, object]:
        allowed = [
            alg
            for alg in (await self.metadata()).get(
                "id_token_signing_alg_values_supported", ["RS256"]
            )
            if alg in _ALGORITHMS
        ] or ["RS256"]
        keys = await self._key_set()
        try:
            token = jwt.decode(id_token, keys, algorithms=allowed)
        except JoseError:
            # A key the provider added since the keys were fetched: fetch them once more.
            try:
                token = jwt.decode(id_token, await self._key_set(refresh=True), algorithms=allowed)
            except JoseError as exc:
                raise Unauthenticated(
                    f"the ID token's signature does not check out: {exc}"
                ) from None
        claims = token.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_S,
            iss={"essential": True, "value": self._issuer},
            aud={"essential": True, "value": self._client_id},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise Unauthenticated(f"the ID token does not check out: {exc}") from None
        audience = claims.get("aud")
        if (
            isinstance(audience, list)
            and len(audience) > 1
            and claims.get("azp") != self._client_id
        ):
            raise Unauthenticated("the ID token was issued to another client (azp)")
        return claims
