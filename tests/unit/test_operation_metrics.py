"""Ingest and search metrics recorded by the use cases, and the HTTP middleware on its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.app.errors import IngestError, InvalidRequest
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ingest.metering import format_of
from citadel.app.ports import DocumentMetadata, ProgressCallback
from citadel.app.search import SearchService
from citadel.domain.document import ParsedDocument
from citadel.domain.limits import Limits
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http.http_metrics import UNMATCHED, HttpMetrics
from tests.builders import operator

FILES = FileDocuments([MarkdownParser(), PlainTextParser()], max_file_bytes=1 << 20)
READER = Actor(user_id="reader", tenant="default", role=Role.READER)


@dataclass
class Recorded:
    """OperationMetrics and the HTTP edge's RequestMetrics, kept in lists."""

    ingests: list[tuple[str, str, str | None]] = field(default_factory=list)
    searches: list[tuple[str, float]] = field(default_factory=list)
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    in_flight: int = 0

    def ingest(self, fmt: str, outcome: str, seconds: float, reason: str | None = None) -> None:
        assert seconds >= 0
        self.ingests.append((fmt, outcome, reason))

    def search(self, mode: str, seconds: float) -> None:
        self.searches.append((mode, seconds))

    def http_started(self) -> None:
        self.in_flight += 1

    def http_finished(self, route: str, method: str, status: int, seconds: float) -> None:
        assert seconds >= 0
        self.in_flight -= 1
        self.requests.append((route, method, status))


class Exploding:
    """A document whose parser breaks unexpectedly."""

    shown = "broken.md"
    origin = "/nowhere/broken.md"
    metadata: DocumentMetadata | None = None

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        raise RuntimeError("parser bug")


def test_each_ingest_is_counted_by_format_and_outcome(tmp_path: Path) -> None:
    recorded = Recorded()
    ingest = IngestService(InMemoryLibrary(), FixedClock(), metrics=recorded)
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nThe first edition says one thing.\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("Plain notes about tides and harbours.\n")
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\x01\x02binary")

    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    book.write_text("# Book\n\nThe second edition says another.\n")
    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    ingest.ingest(FILES.open(notes), IngestOptions(), actor=operator())
    for document, actor in ((FILES.open(book), READER), (FILES.open(blob), operator())):
        with pytest.raises(IngestError):
            ingest.ingest(document, IngestOptions(), actor=actor)
    with pytest.raises(RuntimeError):
        ingest.ingest(Exploding(), IngestOptions(), actor=operator())

    assert recorded.ingests == [
        ("markdown", "created", None),
        ("markdown", "unchanged", None),
        ("markdown", "updated", None),
        ("text", "created", None),
        ("markdown", "refused", "forbidden"),  # refused before the parse: by its name
        ("other", "refused", "unsupported"),
        ("markdown", "failed", None),
    ]


def test_without_metrics_ingest_records_nothing_and_still_works(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nText.\n")
    report = IngestService(InMemoryLibrary(), FixedClock()).ingest(
        FILES.open(book), IngestOptions(), actor=operator()
    )
    assert report.status == "created"


@pytest.mark.parametrize(
    ("parser", "shown", "expected"),
    [
        ("pdf/1", "notes.txt", "pdf"),  # the parser that read it wins over the name
        ("epub/1", "x", "epub"),
        ("html/1", "x", "html"),
        ("markdown/1", "x", "markdown"),
        ("text/1", "x", "text"),
        ("beir/1", "x.pdf", "other"),
        (None, "Book.PDF", "pdf"),
        (None, "dir\\page.HTM", "html"),
        (None, "../../etc/passwd", "other"),
        (None, "readme", "other"),
    ],
)
def test_the_format_label_is_a_closed_set(parser: str | None, shown: str, expected: str) -> None:
    assert format_of(parser, shown) == expected


def test_searches_are_timed_by_mode_and_refused_ones_not_at_all(tmp_path: Path) -> None:
    library = InMemoryLibrary()
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nThe harbour lists high water twice a day.\n")
    IngestService(library, FixedClock()).ingest(FILES.open(book), IngestOptions(), actor=operator())
    recorded = Recorded()
    search = SearchService(library, library, Limits(), metrics=recorded)
    for mode in (SearchMode.LEXICAL, SearchMode.HYBRID):
        assert search.search(SearchRequest(query="high water", mode=mode), READER).results
    with pytest.raises(InvalidRequest):
        search.search(SearchRequest(query="   "), READER)
    assert [mode for mode, _ in recorded.searches] == ["lexical", "hybrid"]
    assert all(0 < seconds < 5 for _, seconds in recorded.searches)


def _app(recorded: Recorded) -> Starlette:
    def boom(request: Request) -> PlainTextResponse:
        raise RuntimeError("handler bug")

    def item(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok", status_code=201)

    return Starlette(
        routes=[Route("/boom/{x}", boom), Route("/items/{item_id}", item, methods=["POST"])],
        middleware=[Middleware(HttpMetrics, metrics=recorded)],
    )


def test_the_middleware_counts_failures_and_leaves_nothing_in_flight() -> None:
    recorded = Recorded()
    with TestClient(_app(recorded), raise_server_exceptions=False) as client:
        assert client.get("/boom/abc").status_code == 500
        assert client.post("/items/secret-42").status_code == 201
        assert client.get("/items/secret-42").status_code == 405
        assert client.request("BREW", "/teapot/1").status_code == 404
    assert recorded.requests == [
        ("/boom/{x}", "GET", 500),
        ("/items/{item_id}", "POST", 201),
        ("/items/{item_id}", "GET", 405),
        (UNMATCHED, "other", 404),
    ]
    assert recorded.in_flight == 0
