"""A served library of real books (../shared) for the home, library and source pages.

The conftest's Markdown book, R-intro (PDF), the Git user manual (one HTML file)
and the Python tutorial (an HTML folder), all open to tenant ``default``; one
more book readable only by group ``ops`` (user ``grace``), and one of tenant
``other`` (user ``eve``): neither title may show to a reader outside them.
Pages are fetched over a real uvicorn server on loopback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from citadel.app.ingest import IngestOptions
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.conftest import shared_path
from tests.http.conftest import SECRET, Library, csrf_of, make_library, serving

OPS_TITLE = "Restricted Runbook of the Ops Group"
OTHER_TITLE = "Other Tenant Secret Handbook"
RUNBOOK = """# Restricted Runbook

## Paging Escalation

Page the secondary after fifteen minutes without an acknowledgement.
"""


@dataclass
class Shelves:
    base: str
    library: Library
    ids: dict[str, str]
    """Source ids by short name: md, pdf, git, tutorial, ops, other."""


def shelves(tmp: Path) -> Iterator[Shelves]:
    books = {
        "pdf": shared_path("books", "pdf", "R-intro.pdf"),
        "git": shared_path("books", "html", "git-user-manual", "user-manual.html"),
        "tutorial": shared_path("books", "html", "python-3.11-tutorial"),
    }
    library = make_library(tmp)
    services = library.services
    _, library.tokens["grace"] = services.users.add("grace", Role.READER, "default", ("ops",))
    ids = {"md": library.source_id}
    for name, path in books.items():
        report = services.ingest.ingest(
            services.documents.open(path), IngestOptions(), actor=operator()
        )
        ids[name] = report.source_id
    for name, title, tenant, acl in (
        ("ops", OPS_TITLE, "default", frozenset({"ops"})),
        ("other", OTHER_TITLE, "other", None),
    ):
        runbook = tmp / f"{name}.md"
        runbook.write_text(RUNBOOK, encoding="utf-8")
        options = IngestOptions(tenant=tenant, title=title, acl_groups=acl)
        report = services.ingest.ingest(
            services.documents.open(runbook), options, actor=operator(tenant)
        )
        ids[name] = report.source_id
    with serving(create_app(services, session_secret=SECRET)) as base:
        yield Shelves(base, library, ids)
    services.close()


@contextmanager
def signed_in(shelf: Shelves, name: str) -> Iterator[httpx.Client]:
    """A client of the loopback server with ``name``'s browser session."""
    with httpx.Client(base_url=shelf.base, timeout=30) as client:
        token = csrf_of(client.get("/signin").text)
        reply = client.post(
            "/signin",
            data={"name": name, "token": shelf.library.tokens[name], "csrf_token": token},
        )
        assert reply.status_code == 303, reply.text
        yield client
