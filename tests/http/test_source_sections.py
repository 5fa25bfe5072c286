"""A source's page lists every chapter, even one whose text is all in its sections
(before, such a chapter was left out, so its first section read as if it belonged
to the chapter before), and each section with text of its own links to the viewer
at that section, signed for the reader."""

from __future__ import annotations

import html
import re

from fastapi import FastAPI

from citadel.app.ingest import IngestOptions
from tests.builders import operator
from tests.http.conftest import Library, browser, sign_in

BOOK = """# Field Manual

## Intake

The intake chapter opens with a kestrel valve that meters the flow.

## Pumps

### Priming the pump

Prime the pump with water until the gauge reads steady.

### Stopping the pump

Close the kestrel valve before stopping the pump.
"""


def test_every_chapter_is_shown_and_every_section_opens_in_the_viewer(
    app: FastAPI, library: Library
) -> None:
    path = library.home / "field-manual.md"
    path.write_text(BOOK, encoding="utf-8")
    services = library.services
    report = services.ingest.ingest(
        services.documents.open(path), IngestOptions(tenant="default"), actor=operator("default")
    )
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = c.get(f"/library/{report.source_id}").text
        table = re.search(r'<table class="sections">(.*?)</table>', page, re.S)
        assert table is not None, page
        cells = re.findall(r'<td class="depth-(\d)">(.*?)</td>', table.group(1), re.S)
        headings = [(int(d), html.unescape(re.sub(r"<[^>]+>", "", t))) for d, t in cells]
        names = [h for _, h in headings]
        # "Pumps" has no text of its own, yet it is there, above its two sections.
        assert "Pumps" in names
        pumps = names.index("Pumps")
        assert names[pumps + 1 : pumps + 3] == ["Priming the pump", "Stopping the pump"]
        depth = {h: d for d, h in headings}
        assert depth["Priming the pump"] == depth["Pumps"] + 1
        links = {
            html.unescape(text): html.unescape(href)
            for href, text in re.findall(r'<a class="section" href="([^"]+)">([^<]+)</a>', page)
        }
        assert "Pumps" not in links
        assert {"Intake", "Priming the pump", "Stopping the pump"} <= set(links)
        opened = c.get(links["Stopping the pump"])
        assert opened.status_code == 200, opened.text
        assert "Close the kestrel valve before stopping the pump" in html.unescape(opened.text)
