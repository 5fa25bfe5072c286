"""What an agent gets from ``ask``: links it can open, a short text, the same defaults.

In process, through the SDK's client: with ``CITADEL_PUBLIC_URL`` set, every viewer
link of ``ask`` and ``get_passage`` is whole under it; ``ask``'s text content is the
answer and its footnotes (the full record is the structured content); and an ``ask``
that names no ``limit`` considers as many results as the CLI, the HTTP API and the
web UI do, all read from one table.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from citadel.app.answer import AnswerRequest
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.config import Settings
from citadel.domain.answer import AnswerResult
from citadel.domain.request_defaults import ANSWER_RESULTS, SEARCH_RESULTS
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli import commands
from citadel.entrypoints.http.ask_query import AskQuery
from citadel.entrypoints.http.schemas import AnswerBody, SearchBody
from citadel.entrypoints.mcp.server import build_server
from citadel.entrypoints.mcp.tools import CitadelTools
from tests.builders import operator

PUBLIC = "https://citadel.example.org/books"
QUESTION = "How do the flux capacitor workers restart?"
NOTE = """# Operations

## Restarts

The flux capacitor workers restart one at a time after a deploy, so capacity never
drops below two thirds while the new version warms its caches.

## Backups

Backups of the ledger are taken every night and kept for thirty days on tape.
"""


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    home = tmp_path_factory.mktemp("mcp-links")
    built = build(Settings(home=home, embedder="hashing", relevance="off", public_url=PUBLIC))
    note = home / "operations.md"
    note.write_text(NOTE, encoding="utf-8")
    built.ingest.ingest(
        built.documents.open(note), IngestOptions(tenant="default"), actor=operator("default")
    )
    built.users.add("ada", Role.READER, "default")
    yield built
    built.close()


@dataclass
class Recording:
    """The answering use case, noting each request it is given."""

    inner: Any
    requests: list[AnswerRequest]

    async def answer(self, request: AnswerRequest, actor: Actor, **options: Any) -> AnswerResult:
        self.requests.append(request)
        result: AnswerResult = await self.inner.answer(request, actor, **options)
        return result


def call(tools: CitadelTools, actor: Actor, tool: str, arguments: dict[str, Any]) -> Any:
    server = build_server(tools, lambda request: actor)
    out: list[Any] = []

    async def main() -> None:
        async with Client(server) as client:
            out.append(await client.call_tool(tool, arguments))

    anyio.run(main)
    assert not out[0].is_error, out[0].content
    return out[0]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_ask_gives_links_under_the_public_url_and_a_short_text(services: Services) -> None:
    ada = services.users.actor("ada")
    result = call(CitadelTools(services), ada, "ask", {"question": QUESTION})
    record = result.structured_content
    cited = [c for s in record["answer"]["segments"] for c in s["citations"]]
    assert cited and all(c["link"]["state"] == "viewer" for c in cited)
    assert all(c["link"]["href"].startswith(PUBLIC + "/v1/sources/") for c in cited)
    text = text_of(result)
    # The answer and its footnotes, each link whole; not the record as JSON.
    assert not text.lstrip().startswith("{")
    assert cited[0]["link"]["href"] in text and record["answer_id"] in text
    assert "thirty days" not in text  # a passage found but not cited stays in the record
    assert "thirty days" in json.dumps(record)
    assert len(text) < len(json.dumps(record)) / 2

    passage = call(
        CitadelTools(services),
        ada,
        "get_passage",
        {"answer_id": record["answer_id"], "ref": cited[0]["ref"]},
    )
    assert passage.structured_content["link"]["href"].startswith(PUBLIC + "/v1/sources/")


def test_an_ask_without_a_limit_considers_as_many_results_as_every_other_surface(
    services: Services,
) -> None:
    recording = Recording(services.answer, [])
    call(CitadelTools(services, recording), services.users.actor("ada"), "ask", {"question": "q"})
    [request] = recording.requests
    cli_ask = inspect.signature(commands.ask).parameters["limit"].default
    http = AnswerBody.model_validate({"search": {"query": "q"}}).domain()
    web = AskQuery(question="q").request()
    assert request.search.limit == cli_ask == http.search.limit == web.search.limit
    assert request.search.limit == ANSWER_RESULTS.default
    # And a search that names none returns as many everywhere.
    cli_search = inspect.signature(commands.search).parameters["limit"].default
    assert cli_search == SearchBody(query="q").limit == SEARCH_RESULTS.default


def test_the_default_stays_a_default(services: Services) -> None:
    recording = Recording(services.answer, [])
    tools = CitadelTools(services, recording)
    call(tools, services.users.actor("ada"), "ask", {"question": "q", "limit": 3})
    assert recording.requests[0].search.limit == 3
    assert AnswerBody.model_validate({"search": {"query": "q", "limit": 100}}).search.limit == 100


def test_without_a_public_url_links_stay_routes(tmp_path: Path) -> None:
    built = build(Settings(home=tmp_path, embedder="hashing", relevance="off"))
    try:
        note = tmp_path / "operations.md"
        note.write_text(NOTE, encoding="utf-8")
        built.ingest.ingest(
            built.documents.open(note), IngestOptions(tenant="default"), actor=operator("default")
        )
        result = call(CitadelTools(built), operator("default"), "ask", {"question": QUESTION})
        cited = [c for s in result.structured_content["answer"]["segments"] for c in s["citations"]]
        assert cited and all(c["link"]["href"].startswith("/v1/sources/") for c in cited)
    finally:
        built.close()
