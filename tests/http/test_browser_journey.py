"""A reader's day in Debian's chromium, against real servers on loopback: single sign-on
through a real OpenID provider (another site, as a real one is), a question and a
follow-up, the conversation reopened from the list, and a footnote opened.
Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from citadel.config import OidcSettings
from citadel.domain.secrets import SecretStr
from citadel.entrypoints.http import create_app
from tests.http.conftest import QUESTION, SECRET, Library, make_library, serving
from tests.http.test_browser import ARTIFACTS, chromium_path
from tests.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider, running_provider

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with running_provider(host="localhost") as running:
        yield running


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> Iterator[tuple[str, Library]]:
    library = make_library(
        tmp_path_factory.mktemp("journey"),
        oidc=OidcSettings(
            issuer=provider.issuer,
            client_id=CLIENT_ID,
            client_secret=SecretStr(CLIENT_SECRET),
            label="Example SSO",
        ),
    )
    with serving(create_app(library.services, session_secret=SECRET)) as base:
        yield base, library
    library.services.close()


def test_sign_in_through_the_provider_ask_follow_up_reopen_and_open_a_footnote(
    site: tuple[str, Library], provider: Provider
) -> None:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    base, library = site
    provider.claims("sub-ada-sso", preferred_username="grace", groups=["ops"])
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-background-networking"],
        )
        try:
            page = browser.new_context().new_page()
            page.goto(f"{base}/ask")
            assert page.url == f"{base}/signin"
            page.screenshot(path=str(ARTIFACTS / "signin.png"), full_page=True)
            page.click("a#sso")
            # At the provider (another site): its own sign-in form.
            page.wait_for_url(f"{provider.issuer}/oauth2/authorize?**")
            page.fill("input[name=sub]", "sub-ada-sso")
            page.locator("button[type=submit]").first.click()
            # Back home, signed in: the Strict session cookie travels from here on.
            page.wait_for_url(f"{base}/ask")
            assert "grace" in page.locator("header .who").inner_text()
            assert library.services.users.get("grace").groups == frozenset({"ops"})

            # Ask, then a follow-up under the answer: a conversation of two turns.
            page.fill("#ask-form textarea[name=question]", QUESTION)
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("#follow-up-form textarea[name=follow_up]")
            page.fill("#follow-up-form textarea[name=follow_up]", "and its cap?")
            page.click("#follow-up-form button[type=submit]")
            page.wait_for_url(f"{base}/conversations/*#turn-2")
            conversation = page.url.split("#", maxsplit=1)[0]
            assert page.locator("article.turn").count() == 2
            second = page.locator("article.turn#turn-2")
            assert "retry" in second.locator("p.rewrite").inner_text()

            # Reopened from the list, then a footnote of the follow-up opened.
            page.click("header nav a[href='/conversations']")
            page.wait_for_url(f"{base}/conversations")
            page.locator("ul.conversations a.conversation").first.click()
            page.wait_for_url(conversation)
            assert page.locator("article.turn").count() == 2
            second.locator("ol.footnotes a.viewer-link").first.click()
            page.wait_for_selector("mark#cited")
            assert "retry budget" in page.locator("mark#cited").inner_text()
        finally:
            browser.close()
