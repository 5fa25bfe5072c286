"""One-time sign-in links (``citadel users add`` prints one): opening the link only
shows a button, the button's POST spends it, and a spent, unknown or expired link
signs no one in."""

from __future__ import annotations

from fastapi import FastAPI

from tests.http.conftest import Library, browser, csrf_of


def _use(app: FastAPI, secret: str) -> tuple[int, str, list[str]]:
    with browser(app) as client:
        opened = client.get(f"/signin/link/{secret}")
        assert opened.status_code == 200
        assert opened.headers["referrer-policy"] == "no-referrer"
        reply = client.post(
            "/signin/link",
            data={"secret": secret, "csrf_token": csrf_of(opened.text)},
            follow_redirects=False,
        )
        cookies = reply.headers.get_list("set-cookie")
        after = client.get("/ask", follow_redirects=False)
        return reply.status_code, after.text if after.status_code == 200 else "", cookies


def test_a_link_signs_its_user_in_once(app: FastAPI, library: Library) -> None:
    secret = library.services.users.issue_link("ada")
    with browser(app) as scanner:  # a mail scanner fetching the link spends nothing
        assert scanner.get(f"/signin/link/{secret}").status_code == 200
    status, page, cookies = _use(app, secret)
    assert status == 200
    assert any(c.startswith("citadel_session=") for c in cookies)
    assert "ada" in page
    status, page, cookies = _use(app, secret)
    assert status == 401
    assert not any(c.startswith("citadel_session=") for c in cookies)


def test_an_unknown_link_and_a_post_without_the_pages_token_are_refused(
    app: FastAPI, library: Library
) -> None:
    status, _, _ = _use(app, "not-a-secret")
    assert status == 401
    secret = library.services.users.issue_link("ada")
    with browser(app) as client:
        reply = client.post("/signin/link", data={"secret": secret}, follow_redirects=False)
        assert reply.status_code == 403
    status, _, _ = _use(app, secret)
    assert status == 200, "the refused post did not spend the link"


def test_a_disabled_users_link_does_not_sign_in(app: FastAPI, library: Library) -> None:
    library.services.users.enable("gone")
    secret = library.services.users.issue_link("gone")
    library.services.users.disable("gone")
    status, _, cookies = _use(app, secret)
    assert status == 403
    assert not any(c.startswith("citadel_session=") for c in cookies)
