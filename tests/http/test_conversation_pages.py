"""The conversation pages: a follow-up from the ask page, the conversation with each
turn's rewrite, footnotes and evidence, a follow-up form, the list with its delete
buttons, and a turn's permalink that opens the recorded answer, not a new one."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, browser, csrf_of, make_library, sign_in

ANSWER_ID = re.compile(r"answer id <code>([^<]+)</code>")
TURN = re.compile(r'<article class="turn" id="turn-(\d+)"')


def _follow_up_from_the_ask_page(c: TestClient, follow: str = "and its cap?") -> str:
    """Ask on the ask page, then its "Ask a follow-up": the conversation's path."""
    page = c.get("/ask", params={"q": QUESTION})
    assert page.status_code == 200
    form = page.text[page.text.index('id="follow-up-form"') :]
    assert 'action="/conversations"' in page.text and html.escape(QUESTION) in form
    reply = c.post(
        "/conversations",
        data={"question": QUESTION, "follow_up": follow, "csrf_token": csrf_of(form)},
        follow_redirects=False,
    )
    assert reply.status_code == 303, reply.text
    location: str = reply.headers["location"]
    assert location.startswith("/conversations/") and location.endswith("#turn-2")
    return location.split("#", maxsplit=1)[0]


def test_the_nav_links_to_the_conversations(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        assert '<a href="/conversations">Conversations</a>' in c.get("/ask").text


def test_a_follow_up_from_the_ask_page_shows_both_turns_with_the_rewrite(
    app: FastAPI, library: Library
) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        href = _follow_up_from_the_ask_page(c)
        page = c.get(href)
        assert page.status_code == 200
        text = page.text
        assert TURN.findall(text) == ["1", "2"]
        first, second = text.split('<article class="turn" id="turn-2"')
        assert html.escape(QUESTION) in first and "searched for:" not in first
        assert "and its cap?" in second
        searched = re.search(r'data-rewrite="deterministic">searched for: <q>([^<]+)</q>', second)
        assert searched and "retry" in searched.group(1).lower()
        # Each turn's answer as the ask page shows one, with ids of its own.
        for turn in ("t1-", "t2-"):
            assert f'id="{turn}fn-1"' in text and f'href="#{turn}fn-1"' in text
            assert f'id="{turn}evidence-heading"' in text
        assert 'id="fn-1"' not in text
        assert text.count('class="footnotes"') == 2 and "Evidence passages" in second
        # A footnote opens through its route, and the viewer leads back to the turn.
        route = html.unescape(re.search(r'class="viewer-link" href="([^"]+)"', second).group(1))  # type: ignore[union-attr]
        opened = c.get(route, follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"].startswith("/v1/sources/")
        viewer = c.get(opened.headers["location"])
        permalink = "/answers/" + ANSWER_ID.findall(second)[0]
        assert f'class="back" href="{permalink}"' in viewer.text


def test_the_conversation_page_asks_a_follow_up(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        href = _follow_up_from_the_ask_page(c)
        page = c.get(href).text
        form = page[page.index(f'action="{href}/turns"') :]
        assert 'name="question"' in form
        token = csrf_of(form)
        refused = c.post(f"{href}/turns", data={"question": "and then?", "csrf_token": "x"})
        assert refused.status_code == 403
        empty = c.post(f"{href}/turns", data={"question": " ", "csrf_token": token})
        assert empty.status_code == 422 and "Ask a question of 1 to" in empty.text
        reply = c.post(
            f"{href}/turns",
            data={"question": "What about circuit breakers?", "csrf_token": token},
            follow_redirects=False,
        )
        assert reply.status_code == 303 and reply.headers["location"] == f"{href}#turn-3"
        assert TURN.findall(c.get(href).text) == ["1", "2", "3"]


def test_the_list_shows_titles_dates_and_deletes_with_csrf(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        token = csrf_of(c.get("/conversations").text)
        reply = c.post(
            "/conversations",
            data={"question": "What do half-open probes decide?", "csrf_token": token},
            follow_redirects=False,
        )
        assert reply.status_code == 303 and reply.headers["location"].endswith("#turn-1")
        href = reply.headers["location"].split("#", maxsplit=1)[0]
        listing = c.get("/conversations").text
        row = listing[listing.index(f'href="{href}"') :]
        assert row.index("What do half-open probes decide?") < row.index("</li>")
        assert re.search(r'<time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC</time>', row)
        assert f'action="{href}/delete"' in row
        assert c.post(f"{href}/delete", data={"csrf_token": "forged"}).status_code == 403
        deleted = c.post(f"{href}/delete", data={"csrf_token": token}, follow_redirects=False)
        assert deleted.status_code == 303 and deleted.headers["location"] == "/conversations"
        assert f'href="{href}"' not in c.get("/conversations").text
        gone = c.get(href, headers={"Accept": "text/html"})
        assert gone.status_code == 404


def test_a_turns_permalink_opens_the_recorded_answer(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        href = _follow_up_from_the_ask_page(c)
        page = c.get(href).text
        second = page.split('<article class="turn" id="turn-2"')[1]
        answer_id = ANSWER_ID.findall(second)[0]
        assert f'class="permalink" href="/answers/{answer_id}"' in second
        before = len(library.services.conversations.list(library.services.users.actor("ada")))
        for _ in range(2):
            opened = c.get(f"/answers/{answer_id}")
            assert opened.status_code == 200
            assert ANSWER_ID.findall(opened.text) == [answer_id]
            assert "and its cap?" in opened.text and "searched for:" in opened.text
            assert f'href="{href}#turn-2"' in opened.text
        after = len(library.services.conversations.list(library.services.users.actor("ada")))
        assert after == before
    with browser(app) as other:
        sign_in(other, library, "eve")
        headers = {"Accept": "text/html"}
        assert other.get(f"/answers/{answer_id}", headers=headers).status_code == 404
        assert other.get(href, headers=headers).status_code == 404
        token = csrf_of(other.get("/conversations").text)
        assert other.post(f"{href}/delete", data={"csrf_token": token}).status_code == 404
        assert href not in other.get("/conversations").text


def test_the_streamed_answer_offers_a_follow_up(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        token = csrf_of(c.get("/ask").text)
        reply = c.post("/ask/stream", data={"question": QUESTION, "csrf_token": token})
        assert reply.status_code == 200
        final = reply.text[reply.text.index("event: answer") :]
        assert 'id=\\"follow-up-form\\"' in final and "follow_up" in final


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Library, FastAPI]]:
    lib = make_library(tmp_path / "home")
    yield lib, create_app(lib.services, session_secret=SECRET)
    lib.services.close()


def test_a_reopened_conversation_shows_only_what_the_reader_may_see_now(
    fresh: tuple[Library, FastAPI],
) -> None:
    library, app = fresh
    with browser(app) as c:
        sign_in(c, library, "ada")
        href = _follow_up_from_the_ask_page(c)
        assert 'class="viewer-link"' in c.get(href).text
        library.services.library.set_acl(library.source_id, ["crew"], operator())
        page = c.get(href).text
        assert TURN.findall(page) == ["1", "2"]
        assert 'class="viewer-link"' not in page and "retry budget caps" not in page
        assert "you may not see this source" in page
        assert "Reliable Service Design" not in page
        assert "(withheld: this part of the answer cites a source you may no longer read)" in page
