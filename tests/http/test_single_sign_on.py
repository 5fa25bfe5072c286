"""Single sign-on against a real OpenID provider on loopback (``tests/oidc_provider``):
the authorization code flow with PKCE and a nonce, users made on first sign-in
as readers, groups and tenant from the configured claims, and every way a
callback can be wrong refused without a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from citadel.config import OidcSettings
from citadel.domain.secrets import SecretStr
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests.http.conftest import SECRET, Library, browser, make_library
from tests.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider, query_of, running_provider


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with running_provider() as running:
        yield running


@pytest.fixture(scope="module")
def sso(tmp_path_factory: pytest.TempPathFactory, provider: Provider) -> Iterator[Library]:
    lib = make_library(
        tmp_path_factory.mktemp("sso"),
        oidc=OidcSettings(
            issuer=provider.issuer,
            client_id=CLIENT_ID,
            client_secret=SecretStr(CLIENT_SECRET),
            groups_claim="groups",
            tenant_claim="org.tenant",
            label="Example SSO",
        ),
    )
    yield lib
    lib.services.close()


@pytest.fixture
def client(sso: Library) -> Iterator[TestClient]:
    with browser(create_app(sso.services, session_secret=SECRET)) as c:
        yield c


def leave_for_provider(client: TestClient, next_path: str | None = None) -> str:
    """Click "Sign in with ...": the URL the browser is sent to at the provider."""
    reply = client.get(
        "/signin/oidc",
        params={"next": next_path} if next_path else None,
        follow_redirects=False,
    )
    assert reply.status_code == 303, reply.text
    return reply.headers["location"]


def come_back(client: TestClient, callback_url: str) -> object:
    parts = callback_url.split("citadel.test", 1)
    assert len(parts) == 2, f"the provider sent the browser elsewhere: {callback_url}"
    return client.get(parts[1], follow_redirects=False)


def sign_in(client: TestClient, provider: Provider, subject: str) -> object:
    return come_back(client, provider.authorize(leave_for_provider(client), subject))


def test_the_sign_in_page_offers_the_provider_first(client: TestClient) -> None:
    page = client.get("/signin").text
    assert "Sign in with Example SSO" in page
    assert page.index('href="/signin/oidc') < page.index('name="token"')


def test_without_a_provider_there_is_no_button_and_no_route(library: Library) -> None:
    with browser(create_app(library.services, session_secret=SECRET)) as plain:
        assert "/signin/oidc" not in plain.get("/signin").text
        assert plain.get("/signin/oidc", follow_redirects=False).status_code in (303, 401)


def test_the_authorization_request_carries_state_nonce_and_an_s256_challenge(
    client: TestClient, provider: Provider
) -> None:
    url = leave_for_provider(client)
    assert url.startswith(provider.issuer + "/")
    asked = query_of(url)
    assert asked["response_type"] == "code"
    assert asked["client_id"] == CLIENT_ID
    assert asked["code_challenge_method"] == "S256"
    assert len(asked["code_challenge"]) == 43  # base64url of a SHA-256
    assert len(asked["state"]) >= 32 and len(asked["nonce"]) >= 32
    assert "openid" in asked["scope"].split()
    assert asked["redirect_uri"] == "https://citadel.test/signin/oidc/callback"
    flow = client.cookies.get("citadel_oidc_flow")
    assert flow and asked["code_challenge"] not in flow
    cookie = next(h for h in _set_cookies(client, "/signin/oidc") if "citadel_oidc_flow" in h)
    assert "samesite=lax" in cookie.lower() and "httponly" in cookie.lower()
    assert "path=/signin/oidc" in cookie.lower()


def _set_cookies(client: TestClient, path: str) -> list[str]:
    reply = client.get(path, follow_redirects=False)
    return reply.headers.get_list("set-cookie")


def test_a_first_sign_in_makes_a_reader_with_the_claims_groups_and_tenant(
    client: TestClient, provider: Provider, sso: Library
) -> None:
    provider.claims(
        "sub-grace-1",
        preferred_username="grace",
        email="grace@example.org",
        groups=["ops", "bad group name"],
        org={"tenant": "default"},
    )
    landed = sign_in(client, provider, "sub-grace-1")
    assert landed.status_code == 200, landed.text
    assert 'http-equiv="refresh"' in landed.text and "url=/ask" in landed.text
    session = next(h for h in landed.headers.get_list("set-cookie") if "citadel_session=" in h)
    assert "samesite=strict" in session.lower()
    user = sso.services.users.get("grace")
    assert user.role is Role.READER
    assert user.tenant == "default"
    assert user.groups == frozenset({"ops"})  # a name citadel cannot hold is left out
    page = client.get("/ask")
    assert page.status_code == 200 and "grace" in page.text


def test_signing_in_again_is_the_same_user_with_the_claims_of_now(
    client: TestClient, provider: Provider, sso: Library
) -> None:
    provider.claims("sub-hopper", preferred_username="hopper", groups=["ops"])
    assert sign_in(client, provider, "sub-hopper").status_code == 200
    provider.claims("sub-hopper", preferred_username="hopper", groups=["eng"])
    client.cookies.clear()
    assert sign_in(client, provider, "sub-hopper").status_code == 200
    assert sso.services.users.get("hopper").groups == frozenset({"eng"})
    assert [u.name for u in sso.services.users.list() if u.name.startswith("hopper")] == ["hopper"]


def test_a_taken_name_gets_a_suffix_and_never_the_other_users_account(
    client: TestClient, provider: Provider, sso: Library
) -> None:
    provider.claims("sub-impostor", preferred_username="ada", email="ada@example.org")
    assert sign_in(client, provider, "sub-impostor").status_code == 200
    assert sso.services.users.get("ada").role is Role.READER
    assert sso.services.users.get("ada-2").role is Role.READER
    assert "ada-2" in client.get("/ask").text


def test_the_page_to_come_back_to_survives_the_trip(client: TestClient, provider: Provider) -> None:
    provider.claims("sub-lin", preferred_username="lin")
    url = leave_for_provider(client, "/ask?q=retry+budgets")
    landed = come_back(client, provider.authorize(url, "sub-lin"))
    assert "url=/ask?q=retry+budgets" in landed.text
    evil = leave_for_provider(client, "https://evil.example/")
    landed = come_back(client, provider.authorize(evil, "sub-lin"))
    assert "evil.example" not in landed.text


def test_a_callback_this_browser_did_not_start_is_refused(
    client: TestClient, provider: Provider, sso: Library
) -> None:
    provider.claims("sub-mallory", preferred_username="mallory")
    callback = provider.authorize(leave_for_provider(client), "sub-mallory")
    with browser(create_app(sso.services, session_secret=SECRET)) as victim:
        refused = come_back(victim, callback)  # no flow cookie: login CSRF
        assert refused.status_code == 401
        assert "citadel_session" not in refused.headers.get("set-cookie", "")
        assert "mallory" not in [u.name for u in sso.services.users.list()]


def test_a_state_that_differs_from_the_flow_is_refused(
    client: TestClient, provider: Provider
) -> None:
    provider.claims("sub-state", preferred_username="stately")
    callback = provider.authorize(leave_for_provider(client), "sub-state")
    forged = callback.replace("state=", "state=x")
    refused = come_back(client, forged)
    assert refused.status_code == 401
    assert "not started by this browser" in refused.text


def test_a_tampered_flow_cookie_is_refused(client: TestClient, provider: Provider) -> None:
    provider.claims("sub-tamper", preferred_username="tamper")
    callback = provider.authorize(leave_for_provider(client), "sub-tamper")
    sealed = client.cookies.get("citadel_oidc_flow")
    assert sealed
    body, _, mac = sealed.partition(".")
    client.cookies.clear()
    client.cookies.set(
        "citadel_oidc_flow", f"{body}x.{mac}", domain="citadel.test", path="/signin/oidc"
    )
    assert come_back(client, callback).status_code == 401


def test_a_code_is_good_for_one_sign_in(client: TestClient, provider: Provider) -> None:
    provider.claims("sub-replay", preferred_username="replay")
    url = leave_for_provider(client)
    sealed = client.cookies.get("citadel_oidc_flow")
    callback = provider.authorize(url, "sub-replay")
    assert come_back(client, callback).status_code == 200
    client.cookies.clear()
    client.cookies.set(
        "citadel_oidc_flow", sealed or "", domain="citadel.test", path="/signin/oidc"
    )
    again = come_back(client, callback)
    assert again.status_code == 401, "the provider refuses a spent code"


def test_a_refusal_at_the_provider_is_said_plainly(client: TestClient) -> None:
    leave_for_provider(client)
    reply = client.get(
        "/signin/oidc/callback?error=access_denied&state=whatever", follow_redirects=False
    )
    assert reply.status_code == 401
    assert "The provider did not sign you in: access_denied" in reply.text


def test_a_disabled_user_is_refused_at_the_callback(
    client: TestClient, provider: Provider, sso: Library
) -> None:
    provider.claims("sub-off", preferred_username="offline")
    assert sign_in(client, provider, "sub-off").status_code == 200
    sso.services.users.disable("offline")
    client.cookies.clear()
    refused = sign_in(client, provider, "sub-off")
    assert refused.status_code == 403
    assert "citadel_session=" not in " ".join(refused.headers.get_list("set-cookie"))


def test_an_unreachable_provider_is_a_503_with_the_token_form_still_there(
    tmp_path: Path,
) -> None:
    lib = make_library(
        tmp_path / "down",
        oidc=OidcSettings(issuer="http://127.0.0.1:9", client_id=CLIENT_ID),
    )
    try:
        with browser(create_app(lib.services, session_secret=SECRET)) as c:
            reply = c.get("/signin/oidc", follow_redirects=False)
            assert reply.status_code == 503
            assert "Single sign-on is unavailable" in reply.text
            assert 'name="token"' in reply.text
    finally:
        lib.services.close()
