"""End to end in Debian's chromium, driven by playwright, against a real uvicorn server.

Sign in, ask (the passages are on the page before the answer: measured), follow
a footnote through its route to the viewer and see the cited span highlighted,
reload the permalink, filter by book, ask with Ctrl+Enter, dark mode, and the
plain page with JavaScript off; a book whose title and passages carry script
and ``javascript:`` payloads renders inert, streamed or not: no dialog opens,
nothing is requested from another origin, no CSP violation. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.app.ingest import IngestOptions
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, make_library, serving
from tests.http.test_stream import Delayed

PAUSE_S = 0.8

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
    # A generator that pauses: the streamed page must show the passages before the answer.
    library = make_library(tmp_path_factory.mktemp("browser"), generator=Delayed(PAUSE_S))
    hostile = library.home / "hostile.txt"
    hostile.write_text(HOSTILE_TEXT, encoding="utf-8")
    library.services.ingest.ingest(
        library.services.documents.open(hostile),
        IngestOptions(title=HOSTILE_TITLE),
        actor=operator(),
    )
    with serving(create_app(library.services, session_secret=SECRET)) as base:
        yield base, library
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

            # Home: what the library holds and questions drawn from its headings.
            home = page.locator("section.home")
            assert "In the library" in home.inner_text()
            assert "Reliable Service Design" in home.locator("ul.books").inner_text()
            assert home.locator("ul.suggested a").count() >= 3
            page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)

            # Streamed: the passages first, while the answer is still being checked.
            page.fill("textarea[name=question]", QUESTION)
            started = time.perf_counter()
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("section.evidence details.passage-item")
            searched = time.perf_counter() - started
            assert page.locator("section.answer[aria-busy=true]").count() == 1
            assert page.locator("ol.footnotes li").count() == 0
            page.screenshot(path=str(ARTIFACTS / "answer-streaming.png"), full_page=True)
            page.wait_for_selector("ol.footnotes li")
            answered = time.perf_counter() - started
            assert answered - searched >= PAUSE_S * 0.5, (searched, answered)
            footnote = page.locator("ol.footnotes li").first
            assert "Reliable Service Design" in footnote.inner_text()
            # Collapsed evidence opens on a click (no script needed: <details>).
            first = page.locator("details.passage-item").first
            assert first.get_attribute("open") is None
            page.screenshot(path=str(ARTIFACTS / "answer.png"), full_page=True)
            first.locator("summary").click()
            assert first.get_attribute("open") is not None
            # The address is the answer's permalink; reloading it shows the answer again.
            page.wait_for_url(f"{base}/ask?q=**")
            assert "q=How+does+a+retry+budget" in page.url
            permalink = page.url
            page.reload()
            page.wait_for_selector("ol.footnotes li")
            assert page.locator("textarea[name=question]").input_value() == QUESTION

            # The footnote goes through its route: resolved now, signed now, opened.
            href = page.locator("ol.footnotes a.viewer-link").first.get_attribute("href")
            assert href is not None and href.startswith("/answers/") and "token" not in href
            page.locator("ol.footnotes a.viewer-link").first.click()
            page.wait_for_selector("mark#cited")
            assert "/v1/sources/" in page.url
            assert "retry budget" in page.locator("mark#cited").inner_text()
            page.screenshot(path=str(ARTIFACTS / "viewer.png"), full_page=True)

            # Filter by book, and ask with Ctrl+Enter.
            page.goto(permalink)
            page.locator("details.filters summary").click()
            page.select_option("select[name=source]", label="Reliable Service Design")
            # (Unfiltered, this question finds the hostile almanac too.)
            page.fill("textarea[name=question]", "Do zephyr keepers log a retry budget?")
            page.press("textarea[name=question]", "Control+Enter")
            page.wait_for_url("**source=**")
            page.wait_for_selector("section.answer:not([aria-busy])")
            titles = page.locator("section.evidence summary .where").all_inner_texts()
            assert titles and all(t.startswith("Reliable Service Design") for t in titles)

            # Dark mode follows the system.
            page.emulate_media(color_scheme="dark")
            background = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert background == "rgb(21, 23, 28)", background
            page.screenshot(path=str(ARTIFACTS / "answer-dark.png"), full_page=True)
            page.emulate_media(color_scheme="light")

            # The hostile book, streamed: its payloads show as text and do nothing.
            page.goto(f"{base}/ask")
            page.fill("textarea[name=question]", "What do the zephyr almanac keepers log?")
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("section.evidence details.passage-item")
            page.wait_for_selector("section.answer:not([aria-busy])")
            for item in page.locator("details.passage-item summary").all():
                item.click()
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
            page.screenshot(path=str(ARTIFACTS / "library.png"), full_page=True)
            page.locator("table a.source", has_text="Reliable Service Design").click()
            page.wait_for_selector("table.sections")
            assert "Retry Budgets" in page.locator("table.sections").inner_text()
            page.screenshot(path=str(ARTIFACTS / "source.png"), full_page=True)
            page.wait_for_timeout(200)
        finally:
            browser.close()
    assert dialogs == []
    assert foreign == []
    assert csp_errors == []


def test_without_javascript_the_form_answers_on_its_permalink(
    server: tuple[str, Library],
) -> None:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    base, library = server
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_context(java_script_enabled=False).new_page()
            page.goto(f"{base}/signin")
            page.fill("input[name=name]", "ada")
            page.fill("input[name=token]", library.tokens["ada"])
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ask")
            page.fill("textarea[name=question]", QUESTION)
            page.click("#ask-form button[type=submit]")
            page.wait_for_url(f"{base}/ask?q=**")
            assert page.locator("ol.footnotes li").count() >= 1
            assert page.locator("details.passage-item").count() >= 1
            page.locator("details.passage-item summary").first.click()
            assert page.locator("details.passage-item").first.get_attribute("open") is not None
            assert "Your recent questions" in page.locator("main").inner_text()
        finally:
            browser.close()


def test_a_librarian_uploads_with_progress_reads_the_page_and_deletes(
    server: tuple[str, Library], tmp_path: Path
) -> None:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    from tests.http.pdf_sample import write_pdf
    from tests.http.test_viewer_pages import PAGES

    base, library = server
    pdf = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    ARTIFACTS.mkdir(exist_ok=True)
    csp_errors: list[str] = []
    progress_js = """() => { window.seen = []; const bar = document.querySelector(
        'form[data-upload] progress'); new MutationObserver(() => window.seen.push(bar.value))
        .observe(bar, {attributes: true}); }"""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            page.on(
                "console",
                lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None,
            )
            page.goto(f"{base}/signin")
            page.fill("input[name=name]", "lib")
            page.fill("input[name=token]", library.tokens["lib"])
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ask")
            # Upload through XMLHttpRequest: the bar follows the bytes, <main> is replaced.
            page.goto(f"{base}/library")
            page.evaluate(progress_js)
            page.set_input_files("#upload-form input[type=file]", str(pdf))
            page.click("#upload-form button[type=submit]")
            page.wait_for_selector("p.notice:has-text('created: Kestrel Manual')")
            assert 100 in page.evaluate("window.seen"), page.evaluate("window.seen")
            assert page.url == f"{base}/library"
            page.screenshot(path=str(ARTIFACTS / "library-upload.png"), full_page=True)

            # Ask of that book only; its footnote opens the cited page as printed.
            page.locator("table a.source", has_text="Kestrel Manual").click()
            source_id = page.locator("dl.facts code").first.inner_text()
            page.goto(f"{base}/ask?q=What+does+the+kestrel+engine+rotate%3F&source={source_id}")
            page.wait_for_selector("ol.footnotes a.viewer-link")
            page.locator("ol.footnotes a.viewer-link").first.click()
            page.wait_for_selector("figure.page-image img")
            page.wait_for_function("() => document.querySelector('figure.page-image img').complete")
            width = page.evaluate("document.querySelector('figure.page-image img').naturalWidth")
            assert width > 0
            assert "Page 2 of 3" in page.locator("nav.pager").inner_text()
            assert "barometric valve" in page.locator("mark#cited").inner_text()
            back = page.locator("a.back").get_attribute("href")
            assert back is not None and back.startswith("/ask?q=What+does+the+kestrel")
            page.screenshot(path=str(ARTIFACTS / "viewer-pdf.png"), full_page=True)
            page.locator("nav.pager a[rel=next]").click()
            page.wait_for_selector("nav.pager:has-text('Page 3 of 3')")
            page.wait_for_function("() => document.querySelector('figure.page-image img').complete")
            assert page.evaluate("document.querySelector('figure.page-image img').naturalWidth")
            page.locator("a.back").click()
            page.wait_for_selector("ol.footnotes li")

            # A new version from the source's page (with progress), then delete it.
            page.goto(f"{base}/library/{source_id}")
            page.evaluate(progress_js)
            page.set_input_files("#reupload-form input[type=file]", str(pdf))
            page.click("#reupload-form button[type=submit]")
            page.wait_for_selector("p.notice:has-text('unchanged: Kestrel Manual')")
            assert 100 in page.evaluate("window.seen")
            page.goto(f"{base}/library/{source_id}")
            page.screenshot(path=str(ARTIFACTS / "source-manage.png"), full_page=True)
            page.click("form.delete button")
            page.wait_for_selector("text=Yes, delete it")
            page.click("form.confirm button")
            page.wait_for_selector("p.notice:has-text('deleted: Kestrel Manual')")
            assert "Kestrel Manual" not in page.locator("table").inner_text()
        finally:
            browser.close()
    assert csp_errors == []
