"""An HTTP edge over a real SQLite library (hashing embedder, extractive generator).

One small Markdown book is ingested per module; users of every role and
status are registered; clients talk to the app in process, or to a real
uvicorn server on loopback (``serving``) where streaming is what is tested.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.app.ingest import IngestOptions
from citadel.app.ports import AnswerGenerator, RelevanceScorer
from citadel.bootstrap import Services, build
from citadel.config import HttpSettings, Settings
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests.builders import operator

BOOK = """# Reliable Service Design

## 1 Failure Handling

### Retry Budgets

A retry budget caps the attempts a client may make, so transient failures stay
bounded and never turn into a retry storm that takes the whole fleet down.

### Circuit Breakers

A circuit breaker opens after repeated failures and sheds load until the
dependency recovers; half-open probes decide when to close it again.

## 2 Deployment

### Rolling Restarts

The flux capacitor workers restart one at a time after a deploy, so capacity
never drops below two thirds while the new version warms its caches.
"""

QUESTION = "How does a retry budget keep transient failures bounded?"
SECRET = b"s" * 32


@dataclass
class Library:
    services: Services
    home: Path
    tokens: dict[str, str]
    source_id: str


def make_library(
    home: Path,
    rate: int = 10_000,
    *,
    generator: AnswerGenerator | None = None,
    http: HttpSettings | None = None,
    relevance: RelevanceScorer | None = None,
    **settings: object,
) -> Library:
    config = Settings(
        home=home,
        embedder="hashing",
        http=http or HttpSettings(rate_per_minute=rate),
        **settings,  # type: ignore[arg-type]
    )
    services = build(config, generator=generator, relevance=relevance)
    book = home / "reliable.md"
    book.parent.mkdir(parents=True, exist_ok=True)
    book.write_text(BOOK, encoding="utf-8")
    report = services.ingest.ingest(
        services.documents.open(book), IngestOptions(tenant="default"), actor=operator("default")
    )
    tokens = {}
    for name, role, tenant in (
        ("ada", Role.READER, "default"),
        ("lib", Role.LIBRARIAN, "default"),
        ("root", Role.ADMIN, "default"),
        ("gone", Role.READER, "default"),
        ("eve", Role.READER, "other"),
    ):
        _, tokens[name] = services.users.add(name, role, tenant)
    services.users.disable("gone")
    return Library(services, home, tokens, report.source_id)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    lib = make_library(tmp_path_factory.mktemp("http"))
    yield lib
    lib.services.close()


@pytest.fixture(scope="module")
def app(library: Library) -> FastAPI:
    return create_app(library.services, session_secret=SECRET)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def bearer(library: Library, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {library.tokens[name]}"}


def browser(app: FastAPI) -> TestClient:
    """A browser-like client over https (so Secure cookies travel)."""
    return TestClient(app, base_url="https://citadel.test", raise_server_exceptions=False)


def csrf_of(html: str) -> str:
    marker = 'name="csrf_token" value="'
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]


def sign_in(client: TestClient, library: Library, name: str) -> None:
    token = csrf_of(client.get("/signin").text)
    reply = client.post(
        "/signin",
        data={"name": name, "token": library.tokens[name], "csrf_token": token},
        follow_redirects=False,
    )
    assert reply.status_code == 303, reply.text


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
