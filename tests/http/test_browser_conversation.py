"""A conversation end to end in Debian's chromium, driven by playwright, against a real
uvicorn server: ask on the ask page, ask a follow-up under the answer, see both turns
(the follow-up's rewritten search shown), reopen the conversation from the list, follow
a footnote of the follow-up to the viewer and come back to the turn's permalink, which
shows the answer as recorded. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from citadel.entrypoints.http import create_app
from tests.http.conftest import QUESTION, SECRET, Library, make_library, serving
from tests.http.test_browser import ARTIFACTS, chromium_path

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Library]]:
    library = make_library(tmp_path_factory.mktemp("browser-chat"))
    with serving(create_app(library.services, session_secret=SECRET)) as base:
        yield base, library
    library.services.close()


def test_ask_follow_up_reopen_and_open_a_footnote(server: tuple[str, Library]) -> None:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    base, library = server
    csp_errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-background-networking"],
        )
        try:
            page = browser.new_context().new_page()
            page.on(
                "console",
                lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None,
            )
            page.goto(f"{base}/signin")
            page.fill("input[name=name]", "ada")
            page.fill("input[name=token]", library.tokens["ada"])
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ask")

            # Ask (streamed), then the follow-up offered under the answer.
            page.fill("#ask-form textarea[name=question]", QUESTION)
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("#follow-up-form textarea[name=follow_up]")
            page.fill("#follow-up-form textarea[name=follow_up]", "and its cap?")
            page.screenshot(path=str(ARTIFACTS / "answer-follow-up.png"), full_page=True)
            page.click("#follow-up-form button[type=submit]")
            page.wait_for_url(f"{base}/conversations/*#turn-2")
            conversation = page.url.split("#", maxsplit=1)[0]
            assert page.locator("article.turn").count() == 2
            second = page.locator("article.turn#turn-2")
            assert second.locator("h2.turn-question").inner_text() == "and its cap?"
            searched = second.locator("p.rewrite").inner_text()
            assert searched.startswith("searched for: and its cap?") and "retry" in searched
            assert second.locator("ol.footnotes li").count() >= 1
            page.screenshot(path=str(ARTIFACTS / "conversation.png"), full_page=True)

            # The list, then the conversation reopened from it.
            page.click("header nav a[href='/conversations']")
            page.wait_for_url(f"{base}/conversations")
            assert QUESTION in page.locator("ul.conversations").inner_text()
            page.screenshot(path=str(ARTIFACTS / "conversations.png"), full_page=True)
            page.locator("ul.conversations a.conversation").first.click()
            page.wait_for_url(conversation)
            assert page.locator("article.turn").count() == 2

            # The follow-up's footnote: resolved now, opened in the viewer, and back.
            answer_id = second.locator(".answer-head code").inner_text()
            second.locator("ol.footnotes a.viewer-link").first.click()
            page.wait_for_selector("mark#cited")
            assert "retry budget" in page.locator("mark#cited").inner_text()
            page.click("a.back")
            page.wait_for_url(f"{base}/answers/{answer_id}")
            assert page.locator(".answer-head code").inner_text() == answer_id
            assert "and its cap?" in page.locator("article.turn h2.turn-question").inner_text()
        finally:
            browser.close()
    assert csp_errors == []
