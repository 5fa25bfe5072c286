"""A format without pages (the Markdown book here) shows no page count anywhere:
null in the API's JSON, a dash on the library's source page, nothing in the CLI's
text, never "0 pages"."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.app.ingest import IngestReport
from citadel.entrypoints.cli.text import source_details_text
from citadel.entrypoints.present.labels import page_count_text
from citadel.entrypoints.present.shapes import ingest_json
from tests.builders import operator
from tests.http.conftest import Library, bearer, browser, csrf_of, sign_in


def test_the_api_gives_a_markdown_version_no_page_count(
    client: TestClient, library: Library
) -> None:
    reply = client.get(f"/v1/sources/{library.source_id}", headers=bearer(library, "ada"))
    assert reply.status_code == 200, reply.text
    (version,) = reply.json()["versions"]
    assert version["pages"] is None
    assert version["sections"] > 0


def test_the_source_page_shows_a_dash_for_its_pages(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "ada")
        html = c.get(f"/library/{library.source_id}").text
    row = re.search(r"<tr><td>v1</td>.*?</tr>", html)
    assert row is not None, html
    cells = re.findall(r"<td>(.*?)</td>", row.group(0))
    assert cells[2] == "–", cells
    assert "0 pages" not in html


def test_the_cli_text_says_no_page_count(library: Library) -> None:
    details = library.services.library.show(library.source_id, operator("default"))
    text = source_details_text(details)
    assert "sections" in text and "pages" not in text, text


def test_a_paged_count_is_said_and_zero_is_not() -> None:
    assert page_count_text(0) == ""
    assert page_count_text(1) == "1 page, "
    assert page_count_text(312) == "312 pages, "
    report = IngestReport("a.md", "src", 1, "created", "A", 0, 3, 4)
    assert ingest_json(report)["pages"] is None
    assert ingest_json(IngestReport("a.pdf", "src", 1, "created", "A", 9, 3, 4))["pages"] == 9


def test_an_uploaded_markdown_book_reports_no_page_count(app: FastAPI, library: Library) -> None:
    with browser(app) as c:
        sign_in(c, library, "lib")
        token = csrf_of(c.get("/library").text)
        reply = c.post(
            "/library",
            data={"csrf_token": token, "title": "Pageless Upload"},
            files={"file": ("pageless.md", b"# Pageless\n\n## One\n\nA line of text.\n")},
        )
    assert reply.status_code == 200, reply.text
    ingests = re.search(r'<ul class="ingests">(.*?)</ul>', reply.text, re.S)
    assert ingests is not None, reply.text
    assert "pageless.md" in ingests.group(1) and "sections" in ingests.group(1)
    assert "0 pages" not in ingests.group(1)
