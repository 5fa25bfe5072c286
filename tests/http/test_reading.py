"""The reader's web UI, in process: permalinks, recent questions, filters, footnotes that
keep working, the source page, and the reading comforts (collapsed evidence, code as
code, the favicon, sizes in human units)."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.app.ingest import IngestOptions
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, browser, csrf_of, make_library, sign_in
from tests.http.test_web import FOOTNOTE_HREF

ALMANAC = """# Harbour Almanac

## Tides

The harbour tide tables list the retry budget of every ferry crossing at dawn.

## Scripts

To read the tide file into a data frame, run:

> tides <- read.table("tides.data", header = TRUE)
> summary(tides)

The summary lists each column's range.
"""


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Library, FastAPI, str]]:
    """The conftest book plus an almanac tagged ``sea`` from 1999."""
    library = make_library(tmp_path_factory.mktemp("reading"))
    almanac = library.home / "almanac.md"
    almanac.write_text(ALMANAC, encoding="utf-8")
    report = library.services.ingest.ingest(
        library.services.documents.open(almanac),
        IngestOptions(tags=("sea",), year=1999),
        actor=operator(),
    )
    yield library, create_app(library.services, session_secret=SECRET), report.source_id
    library.services.close()


def _titles(page: str) -> set[str]:
    """The books the evidence passages come from."""
    found = re.findall(r'<summary><span class="where">([^<,]+)', page)
    return {html.unescape(t) for t in found}


def test_a_permalink_renders_the_answer_and_the_form_redirects_to_it(
    shelf: tuple[Library, FastAPI, str],
) -> None:
    library, app, _ = shelf
    with browser(app) as c:
        sign_in(c, library, "ada")
        token = csrf_of(c.get("/ask").text)
        posted = c.post(
            "/ask", data={"question": QUESTION, "csrf_token": token}, follow_redirects=False
        )
        assert posted.status_code == 303
        permalink = posted.headers["location"]
        assert permalink.startswith("/ask?q=How+does+a+retry+budget")
        page = c.get(permalink)
        assert page.status_code == 200
        assert 'class="footnotes"' in page.text and "retry budget caps" in page.text
        assert f'href="{html.escape(permalink)}"' in page.text, "the page links its permalink"
        # Reloading it answers again: the same footnotes.
        again = c.get(permalink).text
        assert FOOTNOTE_HREF.findall(again) and len(FOOTNOTE_HREF.findall(again)) == len(
            FOOTNOTE_HREF.findall(page.text)
        )


def test_recent_questions_are_each_readers_own(shelf: tuple[Library, FastAPI, str]) -> None:
    library, app, _ = shelf
    with browser(app) as c:
        sign_in(c, library, "lib")
        c.get("/ask", params={"q": "What do the tide tables list?"})
        c.get("/ask", params={"q": "How does a circuit breaker shed load?", "tag": "sea"})
        page = c.get("/ask").text
        recent = page.partition("Your recent questions")[2]
        assert recent.index("circuit breaker") < recent.index("tide tables"), "newest first"
        assert "(tag sea)" in recent
        assert 'href="/ask?q=What+do+the+tide+tables+list%3F"' in recent
    with browser(app) as c:
        sign_in(c, library, "root")  # another reader of the same tenant
        assert "tide tables" not in c.get("/ask").text
    with browser(app) as c:
        sign_in(c, library, "lib")
        token = csrf_of(c.get("/ask").text)
        c.post("/signout", data={"csrf_token": token})
        sign_in(c, library, "lib")
        assert "Your recent questions" not in c.get("/ask").text, "signing out forgets them"


def test_filters_by_book_tag_and_year_restrict_the_evidence(
    shelf: tuple[Library, FastAPI, str],
) -> None:
    library, app, almanac = shelf
    question = "What is the retry budget?"
    with browser(app) as c:
        sign_in(c, library, "ada")
        everything = _titles(c.get("/ask", params={"q": question}).text)
        assert everything == {"Reliable Service Design", "Harbour Almanac"}
        book = c.get("/ask", params={"q": question, "source": library.source_id}).text
        assert _titles(book) == {"Reliable Service Design"}
        assert f'<option value="{library.source_id}" selected>' in book
        assert _titles(c.get("/ask", params={"q": question, "tag": "sea"}).text) == {
            "Harbour Almanac"
        }
        years = {"q": question, "year_from": "1990", "year_to": "2005"}
        assert _titles(c.get("/ask", params=years).text) == {"Harbour Almanac"}
        later = c.get("/ask", params={"q": question, "year_from": "2000"}).text
        assert "No passages matched." in later
        assert almanac not in _titles(later)


@pytest.mark.parametrize(
    ("years", "message"),
    [
        ({"year_from": "19x9"}, "Years are whole numbers such as 1999"),
        ({"year_from": "2010", "year_to": "2000"}, "The year range runs backwards"),
    ],
)
def test_bad_years_get_a_clear_message(
    shelf: tuple[Library, FastAPI, str], years: dict[str, str], message: str
) -> None:
    library, app, _ = shelf
    with browser(app) as c:
        sign_in(c, library, "ada")
        reply = c.get("/ask", params={"q": QUESTION, **years})
        assert reply.status_code == 422 and message in html.unescape(reply.text)
        assert 'class="footnotes"' not in reply.text


def test_a_footnote_opens_after_its_signed_link_expired_and_not_after_access_is_lost(
    tmp_path: Path,
) -> None:
    library = make_library(tmp_path)
    app = create_app(library.services, session_secret=SECRET)
    services = library.services
    try:
        with browser(app) as c:
            sign_in(c, library, "ada")
            page = c.get("/ask", params={"q": QUESTION}).text
            route = html.unescape(FOOTNOTE_HREF.findall(page)[0])
            assert route.startswith("/answers/") and "token" not in route
            # The link the page would have carried, had it been minted when the answer
            # was made ten minutes ago: past its lifetime, refused.
            opened = c.get(route, follow_redirects=False)
            fresh = opened.headers["location"]
            chunk = re.search(r"chunk=([^&]+)", fresh).group(1)  # type: ignore[union-attr]
            stale = services.viewer.href("ada", library.source_id, 1, chunk, time.time() - 600)
            assert c.get(stale).status_code == 403
            # The footnote itself still opens: resolved again, signed afresh, the span marked.
            viewer = c.get(route)
            assert viewer.status_code == 200 and '<mark id="cited">' in viewer.text
            # Access taken away: the same footnote now says so, and links nowhere.
            admin = services.users.actor("root")
            services.library.set_acl(library.source_id, {"staff"}, admin)
            refused = c.get(route, follow_redirects=False)
            assert refused.status_code == 403
            assert "You may not see this source" in refused.text
            assert "/v1/sources/" not in refused.text and "retry budget" not in refused.text
            services.library.set_acl(library.source_id, set(), admin)
            assert c.get(route).status_code == 200, "and opens again once access is back"
    finally:
        services.close()


def test_a_deleted_source_keeps_its_label_behind_the_footnote(tmp_path: Path) -> None:
    library = make_library(tmp_path)
    app = create_app(library.services, session_secret=SECRET)
    try:
        with browser(app) as c:
            sign_in(c, library, "ada")
            page = c.get("/ask", params={"q": QUESTION}).text
            route = html.unescape(FOOTNOTE_HREF.findall(page)[0])
            library.services.library.delete(library.source_id, library.services.users.actor("root"))
            gone = c.get(route, follow_redirects=False)
            assert gone.status_code == 410 and "This source has been deleted" in gone.text
        with browser(app) as c:
            sign_in(c, library, "eve")  # another tenant: the answer does not exist for it
            assert c.get(route, follow_redirects=False).status_code == 404
    finally:
        library.services.close()


def test_evidence_is_collapsed_and_code_stays_code(shelf: tuple[Library, FastAPI, str]) -> None:
    library, app, _ = shelf
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = c.get("/ask", params={"q": "How do I read the tide file into a data frame?"}).text
    items = re.findall(r"<details class=\"passage-item\"(.*?)>", page)
    assert items and all("open" not in attributes for attributes in items)
    assert page.count('<span class="lead">') == len(items)
    code = re.search(r'<pre class="code"><code>(.*?)</code></pre>', page, re.S)
    assert code is not None
    assert html.unescape(code.group(1)) == (
        '> tides <- read.table("tides.data", header = TRUE)\n> summary(tides)'
    )


def test_the_viewer_sets_code_lines_in_monospace_and_prose_as_prose(
    shelf: tuple[Library, FastAPI, str],
) -> None:
    library, app, _ = shelf
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = c.get("/ask", params={"q": "How do I read the tide file into a data frame?"}).text
        routes = [html.unescape(r) for r in FOOTNOTE_HREF.findall(page)]
        viewers = [c.get(route).text for route in routes]
    shown = next(v for v in viewers if "read.table" in v)
    code = re.findall(r'<code class="code-lines">(.*?)</code>', shown, re.S)
    assert code, "the code lines are set apart"
    text = html.unescape(re.sub(r"<[^>]+>", "", "".join(code)))
    assert text == '> tides <- read.table("tides.data", header = TRUE)\n> summary(tides)'
    assert shown.count('id="cited"') == 1
    prose = re.sub(r'<code class="code-lines">.*?</code>', "", shown, flags=re.S)
    assert "To read the tide file into a data frame, run:" in html.unescape(prose)


def test_the_library_links_each_title_to_its_source_page(
    shelf: tuple[Library, FastAPI, str],
) -> None:
    library, app, almanac = shelf
    with browser(app) as c:
        sign_in(c, library, "lib")
        listing = c.get("/library").text
        assert f'<a class="source" href="/library/{almanac}">Harbour Almanac</a>' in listing
        assert "at most 512 MiB" in listing and "536870912" not in listing
        source = c.get(f"/library/{almanac}").text
    for shown in ("Versions", "v1", "Tides", "Scripts", "1999", "sea", "Readers (ACL)"):
        assert shown in source, shown
    version = library.services.registry.versions("default", almanac)[0]
    assert f"{version.chunk_count} chunks" in source
    assert version.created_at[:10] in source, "the ingest date"
    with browser(app) as c:
        sign_in(c, library, "ada")
        reader = c.get(f"/library/{almanac}")
        assert reader.status_code == 200 and "Readers (ACL)" not in reader.text
        assert str(library.home) not in reader.text
    with browser(app) as c:
        sign_in(c, library, "eve")
        assert c.get(f"/library/{almanac}", headers={"Accept": "text/html"}).status_code == 404


def test_a_favicon_is_served_from_the_site(shelf: tuple[Library, FastAPI, str]) -> None:
    _, app, _ = shelf
    with TestClient(app) as c:
        icon = c.get("/favicon.ico")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.content.startswith(b"<svg") and b"<script" not in icon.content
        assert c.get("/static/favicon.svg").content == icon.content
        signin = c.get("/signin").text
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in signin


def test_signing_in_returns_to_the_permalink_that_asked_for_it(
    shelf: tuple[Library, FastAPI, str],
) -> None:
    library, app, almanac = shelf
    with browser(app) as c:
        html_only = {"Accept": "text/html"}
        asked = c.get("/ask?q=tide+tables", headers=html_only, follow_redirects=False)
        assert asked.status_code == 303
        assert asked.headers["location"] == "/signin?next=%2Fask%3Fq%3Dtide%2Btables"
        deep = c.get(f"/library/{almanac}", headers=html_only, follow_redirects=False)
        assert deep.headers["location"] == f"/signin?next=%2Flibrary%2F{almanac}"
        form = c.get(asked.headers["location"]).text
        assert '<input type="hidden" name="next" value="/ask?q=tide+tables">' in form

        def signed_in_to(next_value: str) -> str:
            c.cookies.clear()
            token = csrf_of(c.get("/signin").text)
            reply = c.post(
                "/signin",
                data={
                    "name": "ada",
                    "token": library.tokens["ada"],
                    "csrf_token": token,
                    "next": next_value,
                },
                follow_redirects=False,
            )
            assert reply.status_code == 303
            location: str = reply.headers["location"]
            return location

        assert signed_in_to("/ask?q=tide+tables") == "/ask?q=tide+tables"
        assert signed_in_to(f"/library/{almanac}") == f"/library/{almanac}"
        for elsewhere in (
            "//evil.example/ask?q=x",
            "https://evil.example/",
            "/ask?q=x\r\nSet-Cookie: a=b",
            "/\\evil.example",
            "/signout",
            "/ask?" + "x" * 3000,
        ):
            assert signed_in_to(elsewhere) == "/ask", elsewhere
