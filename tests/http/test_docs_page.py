"""``/docs``: Swagger UI from the installed package, under the site's CSP.

Over HTTP: the page carries the Content-Security-Policy (``script-src 'self'``),
has no inline script and loads only same-origin files, which are served; in
Debian's chromium: the page renders every operation of /openapi.json, requests
nothing from another origin, and reports no CSP violation.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.http.conftest import serving
from tests.http.test_browser import ARTIFACTS, chromium_path


class Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.inline: list[str] = []
        self.styles: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script":
            self._in_script = True
            self.sources.append(found.get("src") or "")
        if tag == "link" and found.get("href"):
            self.styles.append(found["href"] or "")
        if any(name.startswith("on") for name in found):
            self.inline.append(f"<{tag}> handler")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def test_docs_is_served_under_the_csp_with_same_origin_scripts(
    client: TestClient, app: FastAPI
) -> None:
    reply = client.get("/docs")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
    policy = reply.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    page = Scripts()
    page.feed(reply.text)
    assert page.inline == []
    assert page.sources == ["/docs/assets/swagger-ui-bundle.js", "/static/docs.js"]
    for url in page.sources + page.styles:
        assert url.startswith("/") and not url.startswith("//"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["Content-Security-Policy"] == policy
    bundle = client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.headers["content-type"].startswith("text/javascript")
    assert "SwaggerUIBundle" in bundle.text and len(bundle.content) > 500_000
    assert "/openapi.json" in reply.text
    # Only the files the page uses: the package's index.html (inline script) is not served.
    for name in ("index.html", "swagger-initializer.js", "..%2F__init__.py"):
        assert client.get(f"/docs/assets/{name}").status_code == 404, name


@pytest.mark.browser
def test_docs_renders_every_operation_in_chromium(app: FastAPI) -> None:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    foreign: list[str] = []
    csp_errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    operations = sum(len(methods) for methods in app.openapi()["paths"].values())
    with serving(app) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-background-networking"]
        )
        try:
            page = browser.new_context().new_page()
            page.on("request", lambda r: None if r.url.startswith(base) else foreign.append(r.url))
            page.on(
                "console",
                lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None,
            )
            page.goto(f"{base}/docs")
            page.wait_for_selector(".opblock-summary-path", timeout=20_000)
            shown = page.locator(".opblock").count()
            assert shown == operations
            assert page.locator(".btn.authorize").count() == 1
            title = page.locator(".info .title").inner_text()
            assert re.match(r"citadel", title)
            page.screenshot(path=str(ARTIFACTS / "docs.png"), full_page=False)
        finally:
            browser.close()
    assert csp_errors == []
    assert foreign == []
