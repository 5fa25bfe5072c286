"""The web UI in process: sign in, CSRF, cookies, the ask page, the viewer, the library."""

from __future__ import annotations

import html
import io
import re
import time
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.app.errors import AppError
from citadel.bootstrap import build
from citadel.config import HttpSettings, Settings
from citadel.domain.answer import (
    AnswerResult,
    Citation,
    CitedSegment,
    Degraded,
    DegradedReason,
    GenerationRequest,
    GroundedAnswer,
    LinkState,
)
from citadel.domain.search import SearchResult
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.ask_query import AskQuery
from citadel.entrypoints.http.pages import environment
from citadel.entrypoints.http.presenters import answer_view
from tests.builders import make_evidence, operator
from tests.http.conftest import QUESTION, SECRET, Library, browser, csrf_of, sign_in

FOOTNOTE_HREF = re.compile(r'class="viewer-link" href="(/answers/[^"]+)"')


def ask(client: TestClient, question: str = QUESTION) -> str:
    token = csrf_of(client.get("/ask").text)
    reply = client.post("/ask", data={"question": question, "csrf_token": token})
    assert reply.status_code == 200, reply.text
    return reply.text


def viewer_href(client: TestClient, page: str) -> str:
    """The signed viewer link the page's first footnote opens (through its route)."""
    route = html.unescape(FOOTNOTE_HREF.search(page).group(1))  # type: ignore[union-attr]
    reply = client.get(route, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    location: str = reply.headers["location"]
    assert location.startswith("/v1/sources/")
    return location


def test_pages_need_a_session(app: FastAPI) -> None:
    with browser(app) as c:
        for path in ("/", "/ask", "/library"):
            reply = c.get(path, follow_redirects=False, headers={"Accept": "text/html"})
            assert reply.status_code == 303 and reply.headers["location"] == "/signin"


def test_sign_in_sets_a_strict_httponly_secure_session(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        form = c.get("/signin")
        assert form.status_code == 200 and "csrf_token" in form.text
        token = csrf_of(form.text)
        reply = c.post(
            "/signin",
            data={"name": "ada", "token": library.tokens["ada"], "csrf_token": token},
            follow_redirects=False,
        )
        assert reply.status_code == 303 and reply.headers["location"] == "/ask"
        cookie = next(v for k, v in reply.headers.multi_items() if "citadel_session=" in v)
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" in cookie
        assert c.get("/ask").status_code == 200


def test_plain_http_cookies_are_secure_unless_on_loopback(app: FastAPI, library: Library) -> None:
    def session_cookie(c: TestClient) -> str:
        token = csrf_of(c.get("/signin").text)
        reply = c.post(
            "/signin",
            data={"name": "ada", "token": library.tokens["ada"], "csrf_token": token},
            follow_redirects=False,
        )
        return next(v for k, v in reply.headers.multi_items() if "citadel_session=" in v)

    with TestClient(app, base_url="http://127.0.0.1:8080", client=("127.0.0.1", 5000)) as c:
        assert "Secure" not in session_cookie(c)
    with TestClient(app, base_url="http://citadel.example", client=("10.0.0.9", 5000)) as c:
        c.cookies.set("citadel_csrf", "x")  # no cookie would come back over plain http
        form = c.get("/signin")
        assert "Secure" in form.headers["set-cookie"]


@pytest.mark.parametrize(
    ("name", "token_of", "status", "message"),
    [
        ("ada", "eve", 401, "Unknown name or API token."),
        ("ada", None, 401, "Unknown name or API token."),
        ("gone", "gone", 403, "This user is disabled."),
    ],
)
def test_sign_in_refusals(
    app: FastAPI, library: Library, name: str, token_of: str | None, status: int, message: str
) -> None:
    with browser(app) as c:
        token = csrf_of(c.get("/signin").text)
        api_token = library.tokens[token_of] if token_of else "ctd_wrong"
        reply = c.post("/signin", data={"name": name, "token": api_token, "csrf_token": token})
        assert reply.status_code == status
        assert message in reply.text
        assert "citadel_session" not in c.cookies


def test_every_form_post_needs_the_csrf_token(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        c.get("/signin")
        refused = c.post(
            "/signin",
            data={"name": "ada", "token": library.tokens["ada"], "csrf_token": "forged"},
            headers={"Accept": "text/html"},
        )
        assert refused.status_code == 403 and "reload the page" in refused.text
        sign_in(c, library, "ada")
        for path, data in (("/ask", {"question": QUESTION}), ("/signout", {})):
            assert c.post(path, data=data).status_code == 403
            assert c.post(path, data={**data, "csrf_token": "nope"}).status_code == 403
        upload = c.post(
            "/library",
            files={"file": ("a.md", io.BytesIO(b"# A\n\ntext\n"))},
            data={"csrf_token": "nope"},
        )
        assert upload.status_code == 403


def test_ask_shows_footnotes_with_viewer_links_and_the_passages(
    app: FastAPI, library: Library
) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = ask(c)
        assert "Reliable Service Design" in page
        assert 'class="footnotes"' in page and 'href="#fn-1"' in page
        assert "Evidence passages" in page and "retry budget caps" in page
        href = viewer_href(c, page)
        viewer = c.get(href)
        assert viewer.status_code == 200
        assert viewer.headers["Cache-Control"] == "no-store"
        marked = re.search(r'<mark id="cited">(.*?)</mark>', viewer.text, re.S)
        assert marked and "retry budget" in marked.group(1)
        assert "Circuit Breakers" not in marked.group(1)


def test_the_viewer_refuses_other_readers_altered_links_and_revoked_access(
    app: FastAPI, library: Library
) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        href = viewer_href(c, ask(c))
        other_chunk = re.sub(r"chunk=[^&]+", "chunk=other", href)
        assert c.get(other_chunk).status_code == 403
        tampered = href[:-3] + ("AAA" if not href.endswith("AAA") else "BBB")
        assert c.get(tampered).status_code == 403
        wrong_version = href.replace("/versions/1/", "/versions/2/")
        assert c.get(wrong_version).status_code == 403
    with browser(app) as c:
        sign_in(c, library, "root")
        reply = c.get(href, headers={"Accept": "text/html"})
        assert reply.status_code == 403 and "wrong_reader" in reply.text
    with browser(app) as c:
        assert c.get(href, follow_redirects=False).status_code == 401
    # Access removed after the link was minted: refused now, whatever the token says.
    services = library.services
    source = services.registry.get("default", library.source_id)
    assert source is not None
    admin = services.users.actor("root")
    services.library.set_acl(library.source_id, {"staff"}, admin)
    try:
        with browser(app) as c:
            sign_in(c, library, "ada")
            assert c.get(href).status_code == 403
    finally:
        services.library.set_acl(library.source_id, set(), admin)


def test_an_expired_viewer_link_is_refused(app: FastAPI, library: Library) -> None:
    chunks = library.services.chunks.chunks("default", library.source_id, 1)
    href = library.services.viewer.href(
        "ada", library.source_id, 1, chunks[0].chunk_id, time.time() - 3600
    )
    with browser(app) as c:
        sign_in(c, library, "ada")
        reply = c.get(href)
        assert reply.status_code == 403 and "expired" in reply.text


def test_a_disabled_user_is_signed_out_at_once(tmp_path: Path) -> None:
    from tests.http.conftest import make_library

    lib = make_library(tmp_path)
    try:
        with browser(create_app(lib.services, session_secret=SECRET)) as c:
            sign_in(c, lib, "ada")
            assert c.get("/ask").status_code == 200
            lib.services.users.disable("ada")
            assert c.get("/ask", follow_redirects=False).status_code == 401
    finally:
        lib.services.close()


def test_replacing_a_token_signs_its_browser_sessions_out(tmp_path: Path) -> None:
    from tests.http.conftest import make_library

    lib = make_library(tmp_path)
    try:
        app = create_app(lib.services, session_secret=SECRET)
        with browser(app) as before, browser(app) as other:
            sign_in(before, lib, "ada")
            sign_in(other, lib, "lib")
            assert before.get("/ask").status_code == 200
            _, fresh = lib.services.users.rotate("ada")
            assert before.get("/ask", follow_redirects=False).status_code == 401
            assert other.get("/ask").status_code == 200, "another user's session is untouched"
            # Signing in again with the new token works; the old token does not.
            lib.tokens["ada"] = fresh
            sign_in(before, lib, "ada")
            assert before.get("/ask").status_code == 200
    finally:
        lib.services.close()


def test_the_library_page_and_upload_form(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = c.get("/library").text
        assert "Reliable Service Design" in page and 'name="file"' not in page
        assert c.post("/library", files={"file": ("a.md", b"x")}).status_code == 403
    with browser(app) as c:
        sign_in(c, library, "lib")
        page = c.get("/library").text
        token = csrf_of(page)
        note = b"# Lighthouses\n\nThe lamp turns once every ten seconds at night.\n"
        reply = c.post(
            "/library",
            files={"file": ("lights.md", io.BytesIO(note))},
            data={"csrf_token": token, "title": "Lighthouse Notes"},
        )
        assert reply.status_code == 200, reply.text
        assert "created: Lighthouse Notes" in reply.text
        bad = c.post(
            "/library", files={"file": ("x.bin", io.BytesIO(b"\x00"))}, data={"csrf_token": token}
        )
        assert bad.status_code == 422 and "x.bin: no parser" in bad.text
        recent = c.get("/library").text
        assert "Recent ingests" in recent and "lights.md" in recent and "failed" in recent


def test_sign_out_ends_the_session(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        token = csrf_of(c.get("/ask").text)
        reply = c.post("/signout", data={"csrf_token": token}, follow_redirects=False)
        assert reply.status_code == 303
        assert c.get("/ask", follow_redirects=False).status_code in (303, 401)


def test_sign_out_ends_the_session_on_the_server_too(app: FastAPI, library: Library) -> None:
    with browser(app) as c, browser(app) as elsewhere:
        sign_in(c, library, "ada")
        sign_in(elsewhere, library, "ada")
        captured = c.cookies["citadel_session"]
        token = csrf_of(c.get("/ask").text)
        reply = c.post("/signout", data={"csrf_token": token}, follow_redirects=False)
        assert reply.status_code == 303
        assert elsewhere.get("/ask").status_code == 200, "only that session ended"
        sign_in(c, library, "ada")
        assert c.get("/ask").status_code == 200, "signing in again starts a new session"
    # A copy of the cookie taken before signing out acts no more, on any page or form.
    with browser(app) as thief:
        stolen = {"Cookie": f"citadel_session={captured}"}
        assert thief.get("/ask", headers=stolen, follow_redirects=False).status_code == 401
        assert thief.get("/library", headers=stolen, follow_redirects=False).status_code == 401
        form = {"question": QUESTION, "csrf_token": token}
        posted = thief.post("/ask", data=form, headers=stolen)
        assert posted.status_code == 401
        home = thief.get("/", headers=stolen, follow_redirects=False)
        assert home.headers["location"] == "/signin"
    sessions = app.state.edge.sessions
    session = sessions.read(captured)
    assert session is not None and app.state.edge.revoked.revoked(session)


def test_a_signed_out_cookie_stays_dead_after_a_restart(app: FastAPI, library: Library) -> None:
    """The sign-out is kept in the user store: a new process with the same session key
    (a restart, or another server of the deployment) refuses the cookie too."""
    with browser(app) as c:
        sign_in(c, library, "ada")
        captured = c.cookies["citadel_session"]
        token = csrf_of(c.get("/ask").text)
        assert c.post("/signout", data={"csrf_token": token}, follow_redirects=False).status_code
    restarted = create_app(library.services, session_secret=SECRET)
    with browser(restarted) as thief:
        stolen = {"Cookie": f"citadel_session={captured}"}
        assert thief.get("/ask", headers=stolen, follow_redirects=False).status_code == 401
    with browser(restarted) as fresh:
        sign_in(fresh, library, "ada")
        assert fresh.get("/ask").status_code == 200, "a new sign-in is a new session"


def test_recent_ingests_show_each_reader_only_what_they_may_read(tmp_path: Path) -> None:
    from tests.http.conftest import make_library

    lib = make_library(tmp_path)
    try:
        _, lib.tokens["crewmate"] = lib.services.users.add(
            "crewmate", Role.READER, "default", groups=["crew"]
        )
        app = create_app(lib.services, session_secret=SECRET)
        with browser(app) as c:
            sign_in(c, lib, "lib")
            token = csrf_of(c.get("/library").text)
            for name, fields in (
                ("secret-plans.md", {"acl": "crew", "title": "Secret Plans"}),
                ("open-notes.md", {"title": "Open Notes"}),
                ("broken.bin", {}),
            ):
                text = f"# {name}\n\nThe harbour lights of {name} are checked at dusk.\n"
                body = text.encode() if name.endswith(".md") else b"\0"
                c.post(
                    "/library",
                    files={"file": (name, io.BytesIO(body))},
                    data={"csrf_token": token, **fields},
                )
            uploader = c.get("/library").text
        secret = next(s for s in lib.services.registry.list("default") if s.title == "Secret Plans")
        assert secret.acl_groups == frozenset({"crew"})
        assert all(n in uploader for n in ("secret-plans.md", "open-notes.md", "broken.bin"))

        def recent(who: str) -> str:
            with browser(app) as c:
                sign_in(c, lib, who)
                page = c.get("/library").text
            return page.partition("Recent ingests")[2]

        ada = recent("ada")
        assert "open-notes.md" in ada
        assert "secret-plans.md" not in ada and secret.source_id not in ada
        assert "broken.bin" not in ada, "a refused upload is its uploader's business"
        crew = recent("crewmate")
        assert "secret-plans.md" in crew and "open-notes.md" in crew and "broken.bin" not in crew
        admin = recent("root")  # an admin may read every source of the tenant
        assert "secret-plans.md" in admin and "broken.bin" not in admin
        assert recent("eve") == "", "another tenant sees none of it"
    finally:
        lib.services.close()


def test_the_library_page_shows_no_server_paths_to_readers(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = c.get("/library").text
    assert "Reliable Service Design" in page and str(library.home) not in page


class BrokenGenerator:
    name = "broken"
    model = "none"
    prompt_version = "0"
    quotes = False

    async def generate(self, request: GenerationRequest) -> object:
        raise AppError("provider down")


def test_a_degraded_answer_still_shows_the_passages_with_the_reason(tmp_path: Path) -> None:
    from tests.http.conftest import BOOK

    services = build(
        Settings(home=tmp_path, embedder="hashing", http=HttpSettings(rate_per_minute=1000)),
        generator=BrokenGenerator(),  # type: ignore[arg-type]
    )
    try:
        book = tmp_path / "book.md"
        book.write_text(BOOK, encoding="utf-8")
        from citadel.app.ingest import IngestOptions

        services.ingest.ingest(services.documents.open(book), IngestOptions(), actor=operator())
        _, token = services.users.add("ada", Role.READER, "default")
        lib = Library(services, tmp_path, {"ada": token}, "")
        with browser(create_app(services, session_secret=SECRET)) as c:
            sign_in(c, lib, "ada")
            page = ask(c)
        assert 'data-reason="generator_error"' in page
        assert "The answer writer failed" in page
        assert "retry budget caps" in page and 'class="footnotes"' not in page
    finally:
        services.close()


def _citation(ref: str, state: LinkState, href: str | None, evidence: str) -> Citation:
    return Citation(
        ref=ref,
        evidence_id=evidence,
        source_id="s",
        version=1,
        chunk_id="c",
        title="<b>Book</b>",
        author="",
        chapter="3 Links",
        section="States",
        pages="17–18",
        link_state=state,
        link_href=href,
    )


def test_each_link_state_renders_as_a_link_only_from_the_resolver() -> None:
    citations = (
        _citation("E1", LinkState.CANONICAL, "https://docs.example.org/b", "e1"),
        _citation("E2", LinkState.VIEWER, "/v1/sources/s/versions/1/view?chunk=c&token=t", "e2"),
        _citation("E3", LinkState.SUPERSEDED, "/v1/sources/s/versions/1/view?x", "e3"),
        _citation("E4", LinkState.UNAVAILABLE, None, "e4"),
        _citation("E5", LinkState.FORBIDDEN, None, ""),
        _citation("E6", LinkState.DELETED, None, "e6"),
        _citation("E7", LinkState.CANONICAL, "javascript:alert(1)", "e7"),
        _citation("E8", LinkState.VIEWER, "//evil.example/x", "e8"),
    )
    result = AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("q", (make_evidence(passage="<script>alert(1)</script>"),)),
        answer=GroundedAnswer("x", (CitedSegment("Plain <i>text</i>.", citations),)),
        degraded=None,
    )
    page = (
        environment()
        .get_template("ask.html")
        .render(
            csrf_token="t",
            user="ada",
            query=AskQuery("q"),
            view=answer_view(result),
            permalink="/ask?q=q",
            error=None,
            recent=[],
            books=[],
            tags=[],
        )
    )
    # Every footnote with a link goes through its route, which resolves it again when
    # clicked; only the resolver's two shapes of link get one at all.
    assert (
        '<a class="source-link" href="/answers/a1/citations/E1" rel="noopener noreferrer"'
        ' target="_blank">' in page
    )
    assert 'class="viewer-link" href="/answers/a1/citations/E2"' in page
    assert 'href="/answers/a1/citations/E3"' in page
    for ref in ("E4", "E5", "E6", "E7", "E8"):
        assert f"/answers/a1/citations/{ref}" not in page
    assert "/v1/sources/" not in page and "token=" not in page
    assert "the source has changed since this answer" in page
    assert "no link available" in page
    assert "you may not see this source" in page
    assert "this source has been deleted" in page
    assert "javascript:" not in page and "evil.example" not in page
    assert "&lt;b&gt;Book&lt;/b&gt;" in page and "<b>Book" not in page
    assert "Plain &lt;i&gt;text&lt;/i&gt;." in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert 'ch. 3 "Links"' in html.unescape(page) and "pp. 17–18" in page


@pytest.mark.parametrize("reason", list(DegradedReason))
def test_every_degradation_reason_has_plain_words(reason: DegradedReason) -> None:
    result = AnswerResult(
        answer_id="a",
        request_id="r",
        search=SearchResult("q", (make_evidence(),)),
        answer=None,
        degraded=Degraded(reason, "detail"),
    )
    view = answer_view(result)
    assert view.degraded and "_" not in view.degraded and view.passages
