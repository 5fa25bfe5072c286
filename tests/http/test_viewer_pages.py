"""The viewer's page itself: a PDF's cited page as a PNG with the span highlighted, beside
its text, previous and next page, the way back to the answer; an HTML-like source's
section under its headings; and a librarian's delete and new version on a source's page.

A three-page PDF is uploaded through the library page (so its original is kept); every
image request is authorized again like the viewer itself.
"""

from __future__ import annotations

import asyncio
import html
import io
import re
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.domain.document import Chunk
from citadel.entrypoints.http import create_app
from tests.http.conftest import SECRET, Library, browser, csrf_of, make_library, sign_in
from tests.http.pdf_sample import write_pdf

PAGES = [
    ["Kestrel Manual", "Chapter one introduces the kestrel engine and its crew."],
    [
        "The Engine",
        "The kestrel engine rotates its turbines whenever the barometric valve opens wide.",
        "Operators log every rotation in the brass ledger kept beside the valve.",
        "A second crew inspects the ledger at dusk and signs each completed page.",
    ],
    ["Appendix", "Appendix: the final page of the kestrel manual lists the spare parts."],
]
PNG = b"\x89PNG\r\n\x1a\n"


@dataclass
class PdfBook:
    library: Library
    app: FastAPI
    source_id: str
    chunk: Chunk


def upload(client: TestClient, path: Path, **fields: str) -> str:
    token = csrf_of(client.get("/library").text)
    reply = client.post(
        "/library",
        files={"file": (path.name, io.BytesIO(path.read_bytes()), "application/pdf")},
        data={"csrf_token": token, **fields},
    )
    assert reply.status_code == 200, reply.text
    return reply.text


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PdfBook]:
    home = tmp_path_factory.mktemp("pages")
    library = make_library(home)
    app = create_app(library.services, session_secret=SECRET)
    pdf = write_pdf(home / "kestrel.pdf", PAGES)
    with browser(app) as c:
        sign_in(c, library, "lib")
        assert "created: Kestrel Manual" in upload(c, pdf)
    services = library.services
    source = next(s for s in services.registry.list("default") if s.title == "Kestrel Manual")
    chunks = services.chunks.chunks("default", source.source_id, 1)
    chunk = next(c for c in chunks if c.page_start == 2)
    yield PdfBook(library, app, source.source_id, chunk)
    library.services.close()


def href(book: PdfBook, user: str = "ada", span: tuple[int, int] | None = None) -> str:
    return book.library.services.viewer.href(
        user, book.source_id, 1, book.chunk.chunk_id, time.time(), span
    )


def image_src(page: str) -> str:
    found = re.search(r'<img src="([^"]+)"', page)
    assert found, page
    return html.unescape(found.group(1))


def pixels(png: bytes) -> np.ndarray:
    """Decode the viewer's PNGs (8-bit RGB, unfiltered rows) for comparison."""
    assert png.startswith(PNG)
    width, height = struct.unpack(">II", png[16:24])
    data = bytearray()
    at = 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        if png[at + 4 : at + 8] == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    rows = np.frombuffer(zlib.decompress(bytes(data)), np.uint8).reshape(height, width * 3 + 1)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, 3)


def test_an_upload_keeps_the_original_pdf(book: PdfBook) -> None:
    kept = book.library.services.originals
    assert kept is not None and kept.find("default", book.source_id, 1) is not None
    assert kept.find("other", book.source_id, 1) is None


def test_the_viewer_shows_the_cited_page_with_prev_and_next(book: PdfBook) -> None:
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        page = c.get(href(book))
        assert page.status_code == 200, page.text
        assert "Page 2 of 3" in page.text
        src = image_src(page.text)
        assert src.startswith(f"/v1/sources/{book.source_id}/versions/1/pages/2.png?")
        assert 'rel="prev"' in page.text and 'rel="next"' in page.text
        assert "barometric valve" in re.search(r'<mark id="cited">(.*?)</mark>', page.text, re.S)[1]
        image = c.get(src)
        assert image.status_code == 200
        assert image.headers["content-type"] == "image/png"
        assert image.content.startswith(PNG)
        # Next page: page 3's text, its image unhighlighted, and a way to the cited page.
        following = html.unescape(re.search(r'rel="next" href="([^"]+)"', page.text)[1])
        third = c.get(following)
        assert third.status_code == 200 and "Page 3 of 3" in third.text
        assert "spare parts" in third.text and "<mark" not in third.text
        assert 'rel="next"' not in third.text and "The cited page (2)" in third.text
        assert c.get(image_src(third.text)).content.startswith(PNG)


def test_the_highlight_is_drawn_in_the_span_s_lines(book: PdfBook) -> None:
    services = book.library.services
    assert services.pages is not None and services.originals is not None
    pdf = services.originals.find("default", book.source_id, 1)
    assert pdf is not None
    plain = pixels(asyncio.run(services.pages.render(pdf, 2)).png)
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        shown = pixels(c.get(image_src(c.get(href(book)).text)).content)
        assert shown.shape == plain.shape
        changed = np.argwhere((shown != plain).any(axis=2))
        assert len(changed) > 1000
        # The cited chunk is page 2's four lines (a heading, three of text): 72 pt from
        # the top, 14 pt apart.
        scale = shown.shape[1] / 612
        rows = changed[:, 0] / scale
        assert rows.min() >= 72 - 14 and rows.max() <= 72 + 3 * 14 + 8, (rows.min(), rows.max())
        # Tinted, not painted over: the blue channel drops, dark text stays dark.
        assert (
            shown[changed[:, 0], changed[:, 1], 2] <= plain[changed[:, 0], changed[:, 1], 2]
        ).all()
        # A quotation marks only its sentence: the second line's words.
        text = book.chunk.text
        start = text.index("The kestrel engine")
        end = text.index("wide.") + len("wide.")
        quoted = c.get(href(book, span=(start, end))).text
        assert re.search(r'<mark id="cited">(.*?)</mark>', quoted, re.S)[1] == text[start:end]
        narrow = pixels(c.get(image_src(quoted)).content)
        lines = np.argwhere((narrow != plain).any(axis=2))[:, 0] / scale
        assert 0 < len(lines) < len(changed)
        assert lines.min() >= 86 - 14 and lines.max() <= 86 + 8, (lines.min(), lines.max())


def test_page_images_are_authorized_on_every_request(book: PdfBook) -> None:
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        src = image_src(c.get(href(book)).text)
        assert c.get(src).status_code == 200
        # Another reader's link, a changed token, a page out of range.
        theirs = re.sub(r"token=[^&]+", "token=" + href(book, user="lib").split("token=")[1], src)
        assert c.get(href(book, user="lib")).status_code == 403
        assert c.get(theirs).status_code == 403
        assert c.get(src.replace("token=", "token=x")).status_code == 403
        assert c.get(src.replace("/pages/2.png", "/pages/4.png")).status_code == 404
        assert c.get(href(book) + "&page=4").status_code == 404
    with browser(book.app) as c:  # not signed in
        assert c.get(src, follow_redirects=False).status_code == 401
    with browser(book.app) as c:  # another tenant's reader, with her own (genuine) token
        sign_in(c, book.library, "eve")
        token = book.library.services.viewer.mint(
            "eve", book.source_id, 1, book.chunk.chunk_id, time.time()
        )
        other = re.sub(r"token=[^&]+", f"token={token}", src)
        assert c.get(other).status_code == 404  # not in her tenant: not there


def test_the_way_back_goes_only_to_an_answer_permalink(book: PdfBook) -> None:
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        page = c.get(href(book) + "&back=%2Fask%3Fq%3Dkestrel%2Bvalve").text
        assert '<a class="back" href="/ask?q=kestrel+valve">' in page
        for hostile in ("https%3A%2F%2Fevil.example%2F", "%2F%2Fevil.example", "%2Flibrary"):
            assert 'class="back"' not in c.get(href(book) + "&back=" + hostile).text
        # Previous and next keep it.
        following = html.unescape(re.search(r'rel="next" href="([^"]+)"', page)[1])
        assert "back=%2Fask%3Fq%3Dkestrel%2Bvalve" in following


def test_without_the_original_the_viewer_shows_text_only(book: PdfBook) -> None:
    services = book.library.services
    assert services.originals is not None
    kept = services.originals.find("default", book.source_id, 1)
    assert kept is not None
    saved = kept.read_bytes()
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        src = image_src(c.get(href(book)).text)
        kept.unlink()
        try:
            page = c.get(href(book))
            assert page.status_code == 200 and "<img" not in page.text
            assert "Page 2 of 3" in page.text and '<mark id="cited">' in page.text
            assert c.get(src).status_code == 404
        finally:
            kept.write_bytes(saved)


def test_a_section_is_shown_whole_under_its_headings(book: PdfBook) -> None:
    services = book.library.services
    source_id = book.library.source_id  # the Markdown book: sections, no pages
    chunks = services.chunks.chunks("default", source_id, 1)
    cited = next(c for c in chunks if c.section == "Retry Budgets")
    link = services.viewer.href("ada", source_id, 1, cited.chunk_id, time.time())
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        page = c.get(link).text
        assert '<h2 class="section-heading">Retry Budgets</h2>' in page
        assert "Reliable Service Design" in page and "<img" not in page
        assert "retry budget caps" in re.search(r'<mark id="cited">(.*?)</mark>', page, re.S)[1]
        assert "Circuit Breakers" not in page.split("<article")[1]  # another section
        assert c.get(link + "&page=1").status_code == 404


def test_a_librarian_uploads_a_new_version_and_deletes_on_the_source_page(
    book: PdfBook, tmp_path: Path
) -> None:
    services = book.library.services
    with browser(book.app) as c:
        sign_in(c, book.library, "ada")
        page = c.get(f"/library/{book.source_id}").text
        assert "Delete this source" not in page and 'id="reupload-form"' not in page
        token = csrf_of(page)
        refused = c.post(f"/library/{book.source_id}/delete", data={"csrf_token": token})
        assert refused.status_code == 403
    with browser(book.app) as c:
        sign_in(c, book.library, "lib")
        first = write_pdf(tmp_path / "lamps.pdf", [["Lamp Almanac", "The lamps burn oil."]])
        upload(c, first)
        source = next(s for s in services.registry.list("default") if s.title == "Lamp Almanac")
        page = c.get(f"/library/{source.source_id}").text
        assert 'id="reupload-form"' in page and "data-upload" in page
        assert f'name="source_id" value="{source.source_id}"' in page
        second = write_pdf(
            tmp_path / "lamps2.pdf", [["Lamp Almanac", "The lamps now burn whale oil."]]
        )
        assert "updated: Lamp Almanac" in upload(c, second, source_id=source.source_id)
        originals = services.originals
        assert originals is not None
        assert originals.find("default", source.source_id, 2) is not None
        assert "v2" in c.get(f"/library/{source.source_id}").text
        # Delete: a CSRF-checked post, then a confirmation, then gone.
        token = csrf_of(c.get(f"/library/{source.source_id}").text)
        action = f"/library/{source.source_id}/delete"
        assert c.post(action, data={"csrf_token": "nope", "confirm": "yes"}).status_code == 403
        ask = c.post(action, data={"csrf_token": token})
        assert ask.status_code == 200 and "Yes, delete it" in ask.text
        assert services.registry.get("default", source.source_id).deleted is False
        done = c.post(action, data={"csrf_token": csrf_of(ask.text), "confirm": "yes"})
        assert done.status_code == 200 and "deleted: Lamp Almanac" in done.text
        assert services.registry.get("default", source.source_id).deleted is True
        assert originals.find("default", source.source_id, 2) is None
        assert c.get(f"/library/{source.source_id}").status_code == 404
