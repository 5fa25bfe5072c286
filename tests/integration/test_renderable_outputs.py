"""The hostile texts of ``tests.hostile_texts`` through every interface's real output path.

A book (plain text, one paragraph per hostile text, and an HTML manual's ``<a href>``
example) is ingested. Model-written, every hostile text is refused by the one answer
use case (the JSON API shows the degraded reason). As the library's text — passages
found, a segment quoting the manual verbatim — it reaches each interface:

* JSON (``POST /v1/search``, ``POST /v1/answer``) and the SSE stream carry it raw, as
  data: decoded, it is exactly the book's text;
* MCP (the real server, the SDK's in-memory client) and the CLI (``search`` and
  ``ask``, human output) show it as Markdown that markdown-it renders to text and code
  only: no link, image, heading or raw tag, no terminal escape;
* the web page shows it escaped: the manual's ``<a href>`` is text on the page, never
  an element.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import lxml.html
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from typer.testing import CliRunner

from citadel.adapters.generators.scripted import ScriptedGenerator
from citadel.app.ingest import IngestOptions
from citadel.app.ingest import service as ingest_service
from citadel.bootstrap import Services, build
from citadel.config import HttpSettings, Settings
from citadel.domain.answer import GenerationRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli import app as cli_app
from citadel.entrypoints.http import create_app
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools
from tests.builders import operator
from tests.hostile_texts import HOSTILE, HTML_MANUAL
from tests.http.conftest import Library, serving, sign_in
from tests.rendered import render_markdown, what_markdown_renders

TOPIC = "rendering notes"
QUOTE_QUESTION = "How does the manual write a link to a page?"
MANUAL_PARAGRAPH = f"The {TOPIC} on links. {HTML_MANUAL}"
BOOK = "\n\n".join(
    [
        *(f"The {TOPIC} number {i}: {h.text}" for i, h in enumerate(HOSTILE)),
        MANUAL_PARAGRAPH,
    ]
)
CLEAN_ENV: dict[str, str | None] = dict.fromkeys(
    ("CITADEL_HOME", "CITADEL_DB", "CITADEL_GENERATOR", "CITADEL_TENANT")
)


def scripted(request: GenerationRequest) -> object:
    """The model: for the manual question, a verbatim quotation of the manual's example;
    for "hostile N", hostile text N as its own words, citing the first passage."""
    if request.question.startswith("hostile "):
        # Its own words before the hostile text: no passage says them.
        text = "In short:\n" + HOSTILE[int(request.question.split()[1])].text
        return {"segments": [{"text": text, "evidence_ids": [request.evidence[0].ref]}]}
    ref = next(e.ref for e in request.evidence if HTML_MANUAL in e.passage)
    return {"segments": [{"text": HTML_MANUAL, "evidence_ids": [ref]}]}


@dataclass
class Hostile:
    services: Services
    home: Path
    token: str
    passages: list[str]
    """Every passage of the book, as stored."""

    def actor(self) -> Actor:
        return self.services.users.actor("ada")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    home = tmp_path_factory.mktemp("renderable")
    # The generator's output is what is tested: no answerability decision before it.
    settings = Settings(
        home=home,
        embedder="hashing",
        relevance="off",
        http=HttpSettings(rate_per_minute=10_000),
    )
    services = build(settings, generator=ScriptedGenerator([scripted]))
    book = home / "hostile-renderings.txt"
    book.write_text(BOOK, encoding="utf-8")
    # Ingest strips control characters now (``without_controls``); a library ingested
    # before it, or rows written by another tool, still hold them, and every output
    # must still meet them: this book is ingested the way it was before the rule.
    with pytest.MonkeyPatch.context() as before:
        before.setattr(ingest_service, "without_controls", lambda document: document)
        report = services.ingest.ingest(
            services.documents.open(book),
            IngestOptions(tenant="default"),
            actor=operator("default"),
        )
    _, token = services.users.add("ada", Role.READER, "default")
    passages = [c.text for c in services.library.chunks(report.source_id, operator("default"))]
    yield Hostile(services, home, token, passages)
    services.close()


@pytest.fixture(scope="module")
def web(hostile: Hostile) -> Any:
    return create_app(hostile.services, session_secret=b"s" * 32)


def bearer(hostile: Hostile) -> dict[str, str]:
    return {"Authorization": f"Bearer {hostile.token}"}


def test_the_book_holds_every_hostile_text_and_the_manual(hostile: Hostile) -> None:
    stored = "\n".join(hostile.passages)
    assert HTML_MANUAL in stored
    # Every hostile text is stored as written, controls included: the outputs meet them.
    assert [h.name for h in HOSTILE if h.text not in stored] == []


# -- model-written: refused in the one use case ----------------------------------------


@pytest.mark.parametrize("index", range(len(HOSTILE)), ids=[h.name for h in HOSTILE])
def test_model_written_hostile_text_degrades_the_answer(
    web: Any, hostile: Hostile, index: int
) -> None:
    with TestClient(web) as client:
        reply = client.post(
            "/v1/answer",
            json={"search": {"query": f"hostile {index} {TOPIC}"}},
            headers=bearer(hostile),
        )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["answer"] is None
    assert body["degraded"]["reason"] == "invalid_output"
    assert HOSTILE[index].reason in body["degraded"]["detail"]


# -- JSON and SSE: raw, as data --------------------------------------------------------


def test_json_carries_the_library_text_raw(web: Any, hostile: Hostile) -> None:
    with TestClient(web) as client:
        found = client.post(
            "/v1/search", json={"query": TOPIC, "limit": 50}, headers=bearer(hostile)
        )
        asked = client.post(
            "/v1/answer", json={"search": {"query": QUOTE_QUESTION}}, headers=bearer(hostile)
        )
    passages = [r["passage"] for r in found.json()["results"]]
    assert sorted(passages) == sorted(hostile.passages)
    body = asked.json()
    assert body["degraded"] is None, body["degraded"]
    assert [s["text"] for s in body["answer"]["segments"]] == [HTML_MANUAL]


def test_the_sse_stream_carries_the_library_text_raw(web: Any, hostile: Hostile) -> None:
    events: dict[str, Any] = {}
    with (
        serving(web) as base,
        httpx.stream(
            "POST",
            base + "/v1/answer/stream",
            json={"search": {"query": QUOTE_QUESTION}},
            headers=bearer(hostile),
            timeout=30,
        ) as reply,
    ):
        assert reply.status_code == 200
        raw = reply.read().decode()
    for block in raw.split("\n\n"):
        lines = block.split("\n")
        names = [line[7:] for line in lines if line.startswith("event: ")]
        if names:
            events[names[0]] = json.loads("".join(x[6:] for x in lines if x.startswith("data: ")))
    assert [s["text"] for s in events["answer"]["answer"]["segments"]] == [HTML_MANUAL]
    assert all(r["passage"] in hostile.passages for r in events["search"]["results"])
    assert "\x1b" not in raw  # ESC travels as JSON's "\u001b", never raw


# -- MCP: Markdown that renders to text ------------------------------------------------


def mcp_call(hostile: Hostile, tool: str, arguments: dict[str, Any]) -> Any:
    server = build_server(CitadelTools(hostile.services), lambda request: hostile.actor())
    out: list[Any] = []

    async def main() -> None:
        async with Client(server) as client:
            out.append(await client.call_tool(tool, arguments))

    anyio.run(main)
    result = out[0]
    assert not result.is_error, result.content
    return result


def markdown_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_mcp_search_shows_every_passage_as_text(hostile: Hostile) -> None:
    result = mcp_call(hostile, "search", {"query": TOPIC, "limit": 50})
    assert len(result.structured_content["results"]) == len(hostile.passages)
    text = markdown_of(result)
    assert what_markdown_renders(text) == []
    assert "evil.example" in text  # shown, as code, not dropped


def test_mcp_ask_shows_the_quoted_manual_escaped(hostile: Hostile) -> None:
    result = mcp_call(hostile, "ask", {"question": QUOTE_QUESTION})
    segments = result.structured_content["answer"]["segments"]
    assert [s["text"] for s in segments] == [HTML_MANUAL]  # structured: the raw data
    text = markdown_of(result)
    assert what_markdown_renders(text) == []
    # Rendered, the reader sees the book's own characters, "<a href" included.
    print(text)
    assert "&lt;a href=" in render_markdown(text)


def test_mcp_get_passage_shows_the_manual_escaped(hostile: Hostile) -> None:
    found = mcp_call(hostile, "search", {"query": QUOTE_QUESTION, "limit": 50})
    evidence_id = next(
        r["evidence_id"] for r in found.structured_content["results"] if HTML_MANUAL in r["passage"]
    )
    result = mcp_call(hostile, "get_passage", {"evidence_id": evidence_id})
    assert HTML_MANUAL in result.structured_content["text"]
    assert what_markdown_renders(markdown_of(result)) == []


# -- CLI: human output -----------------------------------------------------------------


def cli(*args: str) -> str:
    outcome = CliRunner().invoke(cli_app, list(args), env=CLEAN_ENV, catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    return outcome.stdout


def test_cli_search_shows_every_passage_as_text(hostile: Hostile) -> None:
    text = cli("search", "--home", str(hostile.home), "--limit", "50", TOPIC)
    assert "evil.example" in text
    assert what_markdown_renders(text) == []


def test_cli_ask_shows_the_quoted_manual_escaped(hostile: Hostile) -> None:
    # The CLI's own generator (extractive) quotes the book: the manual's line included.
    text = cli("ask", "--home", str(hostile.home), QUOTE_QUESTION)
    print(text)
    assert HTML_MANUAL in text  # the book's characters, inside a code span
    assert what_markdown_renders(text) == []


# -- HTML: escaped ---------------------------------------------------------------------


def only_text(page: str) -> Any:
    """The page parsed as a browser would; no element or handler came from the book."""
    tree = lxml.html.fromstring(page)
    for element in tree.iter():
        if not isinstance(element.tag, str):
            continue
        assert not any(name.startswith("on") for name in element.attrib), element.attrib
        assert element.tag not in {"img", "svg", "iframe", "object", "embed"}
        shown = lxml.html.tostring(element, encoding="unicode")
        if element.tag == "a":
            assert "example.org" not in (element.get("href") or ""), shown
            assert "evil" not in (element.get("href") or ""), shown
        if element.tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            assert "Ignore the passages" not in shown
    return tree


def test_the_web_page_shows_the_quoted_manual_as_text(web: Any, hostile: Hostile) -> None:
    with TestClient(web, base_url="https://citadel.test") as client:
        sign_in(client, Library(hostile.services, hostile.home, {"ada": hostile.token}, ""), "ada")
        page = client.get("/ask", params={"q": QUOTE_QUESTION})
    assert page.status_code == 200
    tree = only_text(page.text)
    assert HTML_MANUAL in tree.text_content()  # the book's characters, as text
    assert "&lt;a href=" in page.text  # escaped in the page's source


def test_the_web_page_shows_found_passages_as_text(web: Any, hostile: Hostile) -> None:
    with TestClient(web, base_url="https://citadel.test") as client:
        sign_in(client, Library(hostile.services, hostile.home, {"ada": hostile.token}, ""), "ada")
        page = client.get("/ask", params={"q": f"hostile 0 {TOPIC}"})  # degraded: passages
    assert page.status_code == 200
    text = " ".join(only_text(page.text).text_content().split())
    shown = [h.name for h in HOSTILE if " ".join(h.text.split()) in text]
    assert len(shown) >= 5, shown  # the passages found, hostile texts in them, as text


def test_audit_replay_holds_for_the_quoted_manual(web: Any, hostile: Hostile) -> None:
    # Replay reads the stored passages back: the quotation is still the book's text.
    with TestClient(web) as client:
        asked = client.post(
            "/v1/answer", json={"search": {"query": QUOTE_QUESTION}}, headers=bearer(hostile)
        ).json()
    assert asked["degraded"] is None
    report = hostile.services.audit.replay(asked["answer_id"], hostile.actor())
    assert report.holds, report
    assert report.replayed == "accepted"


def test_cli_sources_chunks_shows_the_book_as_text(hostile: Hostile) -> None:
    source_id = hostile.services.library.list(operator("default"))[0].source_id
    text = cli("sources", "chunks", "--home", str(hostile.home), source_id)
    assert "rendering notes" in text
    assert what_markdown_renders(text) == []
