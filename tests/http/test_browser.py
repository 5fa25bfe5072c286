"""End to end in Debian's chromium, driven by playwright, against a real uvicorn server.

Sign in, ask, follow a footnote to the viewer and see the cited span
highlighted; a book whose title and passages carry script and ``javascript:``
payloads renders inert: no dialog opens and nothing is requested from another
origin. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from citadel.app.ingest import IngestOptions
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, make_library

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
HOSTILE_TITLE = "<script>alert(1)</script> Hostile javascript:alert(2) Almanac"
HOSTILE_TEXT = """The zephyr almanac warns: <script>alert(1)</script> keepers log the zephyr
winds at dawn. <img src=x onerror=alert(3)> See javascript:alert(4) and
<a href="javascript:alert(5)">zephyr link</a> and https://evil.example/zephyr.png for more.

The second zephyr page: <iframe src="https://evil.example/"></iframe> keepers trim the
zephyr lamp wicks <svg onload=alert(6)></svg> every evening.
"""


def chromium_path() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if found is None:
        pytest.skip("chromium not found: install Debian's chromium (make test does it as root)")
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Library]]:
    library = make_library(tmp_path_factory.mktemp("browser"))
    hostile = library.home / "hostile.txt"
    hostile.write_text(HOSTILE_TEXT, encoding="utf-8")
    library.services.ingest.ingest(
        library.services.documents.open(hostile),
        IngestOptions(title=HOSTILE_TITLE),
        actor=operator(),
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(library.services, session_secret=SECRET),
        log_config=None,
        access_log=False,
        lifespan="off",
    )
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert uv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}", library
    uv.should_exit = True
    thread.join(10)
    sock.close()
    library.services.close()


def hostile_viewer(library: Library) -> str:
    services = library.services
    source = next(s for s in services.registry.list("default") if s.title == HOSTILE_TITLE)
    chunk = services.chunks.chunks(source.tenant, source.source_id, 1)[0]
    return services.viewer.href("ada", source.source_id, 1, chunk.chunk_id, time.time())


def test_sign_in_ask_follow_a_footnote_and_stay_inert(server: tuple[str, Library]) -> None:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    base, library = server
    dialogs: list[str] = []
    foreign: list[str] = []
    csp_errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-background-networking"],
        )
        try:
            page = browser.new_context().new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on(
                "request",
                lambda r: None if r.url.startswith(base) else foreign.append(r.url),
            )
            page.on(
                "console",
                lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None,
            )
            page.goto(f"{base}/ask")
            assert page.url == f"{base}/signin"
            page.fill("input[name=name]", "ada")
            page.fill("input[name=token]", library.tokens["ada"])
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ask")

            page.fill("textarea[name=question]", QUESTION)
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("ol.footnotes li")
            footnote = page.locator("ol.footnotes li").first
            assert "Reliable Service Design" in footnote.inner_text()
            assert page.locator("section.evidence blockquote").count() >= 1
            page.screenshot(path=str(ARTIFACTS / "answer.png"), full_page=True)

            footnote.locator("a.viewer-link").click()
            page.wait_for_selector("mark#cited")
            assert "retry budget" in page.locator("mark#cited").inner_text()
            page.screenshot(path=str(ARTIFACTS / "viewer.png"), full_page=True)

            # The hostile book: its payloads show as text and do nothing.
            page.goto(f"{base}/ask")
            page.fill("textarea[name=question]", "What do the zephyr almanac keepers log?")
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("section.evidence blockquote")
            text = page.locator("main").inner_text()
            assert "<script>alert(1)</script>" in text
            assert page.locator("a[href^='javascript:']").count() == 0
            assert page.locator("main script, main img, main iframe, main svg").count() == 0
            page.screenshot(path=str(ARTIFACTS / "hostile-answer.png"), full_page=True)
            # The extractive writer need not cite it: open its viewer with a link minted
            # the way the resolver mints them.
            page.goto(base + hostile_viewer(library))
            page.wait_for_selector("mark#cited")
            assert page.locator("h1").inner_text() == HOSTILE_TITLE
            assert "zephyr" in page.locator("mark#cited").inner_text()
            assert page.locator("main script, main img, main iframe, main svg").count() == 0
            page.screenshot(path=str(ARTIFACTS / "hostile-viewer.png"), full_page=True)
            page.goto(f"{base}/library")
            assert HOSTILE_TITLE in page.locator("table").inner_text()
            page.wait_for_timeout(200)
        finally:
            browser.close()
    assert dialogs == []
    assert foreign == []
    assert csp_errors == []
