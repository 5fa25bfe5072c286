"""The ID token checks of the OpenID adapter, against a provider faked at the HTTP
layer (httpx's MockTransport) so each token can be made wrong in one way: the
signature, the algorithm, the issuer, the audience, the expiry, the nonce."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey

from citadel.adapters.oidc import AuthlibProvider, check_endpoint
from citadel.app.errors import ServiceUnavailable, Unauthenticated
from citadel.domain.identity import SignInFlow

ISSUER = "https://idp.example"
CLIENT = "citadel"
FLOW = SignInFlow("state-" * 6, "nonce-" * 6, "verifier-" * 8)
CALLBACK = "https://citadel.example/signin/oidc/callback"


@dataclass
class FakeIdp:
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "k1"}))
    published: list[RSAKey] = field(default_factory=list)
    token: str = ""
    issuer_said: str = ISSUER
    jwks_fetches: int = 0
    token_bodies: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.published = [self.key]

    def sign(self, header: dict[str, Any] | None = None, key: Any = None, **claims: Any) -> str:
        now = int(time.time())
        body = {
            "iss": ISSUER,
            "aud": CLIENT,
            "sub": "s-1",
            "iat": now,
            "exp": now + 300,
            "nonce": FLOW.nonce,
            **claims,
        }
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(header or {"alg": "RS256", "kid": "k1"}, body, key or self.key)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx2.Response(
                200,
                json={
                    "issuer": self.issuer_said,
                    "authorization_endpoint": f"{ISSUER}/authorize",
                    "token_endpoint": f"{ISSUER}/token",
                    "jwks_uri": f"{ISSUER}/jwks",
                    "id_token_signing_alg_values_supported": ["RS256", "HS256", "none"],
                },
            )
        if path == "/jwks":
            self.jwks_fetches += 1
            return httpx2.Response(200, json=KeySet(self.published).as_dict(private=False))
        if path == "/token":
            self.token_bodies.append(request.content)
            return httpx2.Response(
                200, json={"access_token": "at", "token_type": "Bearer", "id_token": self.token}
            )
        return httpx2.Response(404)


def adapter(idp: FakeIdp) -> AuthlibProvider:
    return AuthlibProvider(
        ISSUER, CLIENT, "client-secret", transport=httpx2.MockTransport(idp.handle)
    )


def claims_for(idp: FakeIdp, token: str) -> dict[str, object]:
    idp.token = token
    return dict(asyncio.run(adapter(idp).verified_claims("code-1", FLOW, CALLBACK)))


def test_a_well_made_token_gives_its_claims_and_the_exchange_sends_the_verifier() -> None:
    idp = FakeIdp()
    claims = claims_for(idp, idp.sign(groups=["ops"]))
    assert claims["sub"] == "s-1" and claims["groups"] == ["ops"]
    sent = idp.token_bodies[0].decode()
    assert f"code_verifier={FLOW.verifier}" in sent and "code=code-1" in sent


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"iss": "https://other.example"}, "iss"),
        ({"aud": "someone-else"}, "aud"),
        ({"exp": int(time.time()) - 3600}, "exp"),
        ({"nonce": "a-replayed-nonce"}, "nonce"),
        ({"nonce": None}, "nonce"),
        ({"sub": None}, "sub"),
    ],
)
def test_a_token_wrong_in_one_claim_is_refused(change: dict[str, Any], why: str) -> None:
    idp = FakeIdp()
    with pytest.raises(Unauthenticated, match=why):
        claims_for(idp, idp.sign(**change))


def test_several_audiences_need_this_client_as_the_authorized_party() -> None:
    idp = FakeIdp()
    with pytest.raises(Unauthenticated, match="azp"):
        claims_for(idp, idp.sign(aud=[CLIENT, "other"], azp="other"))
    assert claims_for(idp, idp.sign(aud=[CLIENT, "other"], azp=CLIENT))["sub"] == "s-1"


def test_a_token_signed_with_the_client_secret_or_unsigned_is_refused() -> None:
    idp = FakeIdp()
    hmac_token = idp.sign({"alg": "HS256"}, OctKey.import_key("client-secret" * 3))
    with pytest.raises(Unauthenticated, match="signature"):
        claims_for(idp, hmac_token)
    _, _, rest = idp.sign().partition(".")
    unsigned = "eyJhbGciOiJub25lIn0." + rest.rpartition(".")[0] + "."
    with pytest.raises(Unauthenticated, match="signature"):
        claims_for(idp, unsigned)


def test_a_token_signed_by_another_key_is_refused() -> None:
    idp = FakeIdp()
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    with pytest.raises(Unauthenticated, match="signature"):
        claims_for(idp, idp.sign(key=stranger))


def test_a_rotated_key_is_fetched_once_more_and_then_accepted() -> None:
    idp = FakeIdp()
    provider = adapter(idp)
    idp.token = idp.sign()
    asyncio.run(provider.verified_claims("c", FLOW, CALLBACK))
    new_key = RSAKey.generate_key(2048, parameters={"kid": "k2"})
    idp.published = [idp.key, new_key]
    idp.token = idp.sign({"alg": "RS256", "kid": "k2"}, new_key)
    assert asyncio.run(provider.verified_claims("c", FLOW, CALLBACK))["sub"] == "s-1"
    assert idp.jwks_fetches == 2


def test_a_discovery_document_for_another_issuer_is_refused() -> None:
    idp = FakeIdp(issuer_said="https://evil.example")
    with pytest.raises(ServiceUnavailable, match="another issuer"):
        asyncio.run(adapter(idp).authorization_url(FLOW, CALLBACK))


def test_plain_http_is_only_for_loopback() -> None:
    assert check_endpoint("http://127.0.0.1:9400", "issuer")
    assert check_endpoint("http://localhost:9400/x", "issuer")
    with pytest.raises(ValueError, match="https"):
        check_endpoint("http://idp.example", "issuer")
    with pytest.raises(ValueError, match="https"):
        AuthlibProvider("http://idp.example", CLIENT, "")
