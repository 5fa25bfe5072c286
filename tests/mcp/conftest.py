"""A library for the MCP tests: R-intro (open to the tenant) and a restricted book.

Built once per session in process (hashing embedder, extractive generator), then
served by the real servers the tests start on it: ``python -m citadel mcp --as
USER`` over stdio, and ``citadel serve``'s app (``http_app``) under uvicorn on
loopback. ``ada`` reads the tenant's open sources; ``fin`` is in the ``finance``
group the restricted book is limited to; ``gone`` is disabled.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.config import Settings
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli.serve import http_app
from tests.builders import operator
from tests.conftest import shared_path

SECRET_TITLE = "Quarterly Payroll Ledger"
SECRET_TERM = "zebracorn"
SECRET_BOOK = f"""# {SECRET_TITLE}

## 1 Bonuses

### The zebracorn pool

The zebracorn bonus pool is paid out of the reserve ledger every quarter, and a data
frame of every payment is read from the payroll file with read.table before it is paid.
"""


@dataclass
class McpLibrary:
    services: Services
    home: Path
    tokens: dict[str, str]
    r_intro: str
    secret: str

    def actor(self, name: str) -> Actor:
        return self.services.users.actor(name)

    def env(self) -> dict[str, str]:
        """What a server process needs to open this library, offline."""
        return {
            "CITADEL_HOME": str(self.home),
            "CITADEL_EMBEDDER": "hashing",
            "CITADEL_GENERATOR": "extractive",
            "HF_HUB_OFFLINE": "1",
        }


@pytest.fixture(scope="session")
def mcp_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpLibrary]:
    book = shared_path("books", "pdf", "R-intro.pdf")
    home = tmp_path_factory.mktemp("mcp")
    services = build(Settings(home=home, embedder="hashing"))
    admin = operator("default")
    r_intro = services.ingest.ingest(
        services.documents.open(book), IngestOptions(tenant="default"), actor=admin
    )
    secret_file = home / "payroll.md"
    secret_file.write_text(SECRET_BOOK, encoding="utf-8")
    secret = services.ingest.ingest(
        services.documents.open(secret_file),
        IngestOptions(tenant="default", acl_groups=frozenset({"finance"})),
        actor=admin,
    )
    tokens = {}
    for name, groups in (("ada", ()), ("fin", ("finance",)), ("gone", ())):
        _, tokens[name] = services.users.add(name, Role.READER, "default", groups)
    services.users.disable("gone")
    yield McpLibrary(services, home, tokens, r_intro.source_id, secret.source_id)
    services.close()


@pytest.fixture(scope="session")
def mcp_url(mcp_library: McpLibrary) -> Iterator[str]:
    """``citadel serve``'s app on a free loopback port, lifespan on (the MCP session
    manager runs in it); yields the MCP endpoint's URL."""
    services = build(Settings(home=mcp_library.home, embedder="hashing"), serving=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(http_app(services), log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        services.close()


def citadel_command() -> list[str]:
    """``python -m citadel`` with this interpreter (the venv's)."""
    return [sys.executable, "-m", "citadel"]


def base_env() -> dict[str, str]:
    # PYTHONPATH too: a server process runs the code under test, not another checkout's.
    kept = ("PATH", "HOME", "XDG_DATA_HOME", "LANG", "TMPDIR", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if k in kept}
