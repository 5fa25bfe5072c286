"""Source ids are scoped to their tenant (issue 12, defect 8, the existence oracle).

Tenant ``other`` may have a source ``guide`` while ``default`` has one: two
sources, independent in ingest, listing, chunks, search, versions, deletion and
the viewer, and an upload under an id only another tenant uses answers exactly
as one under an id never used (the source is created in the caller's tenant).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citadel.app.errors import NotFound
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli import app as cli_app
from citadel.entrypoints.http import create_app
from tests.http.conftest import SECRET, Library, bearer, browser, make_library, sign_in
from tests.integration.test_cli import CLEAN_ENV

OURS = b"# Acme Guide\n\nRestart the workers one at a time after a deploy.\n"
THEIRS = b"# Other Guide\n\nDrain the harbour queue before each restart.\n"


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[TestClient, Library]]:
    library = make_library(tmp_path / "home")
    users = library.services.users
    _, library.tokens["other-lib"] = users.add("other-lib", Role.LIBRARIAN, "other")
    with TestClient(create_app(library.services, session_secret=SECRET)) as client:
        yield client, library
    library.services.close()


def upload(client: TestClient, library: Library, who: str, data: bytes, **fields: str) -> Any:
    return client.post(
        "/v1/sources",
        files={"file": ("guide.md", io.BytesIO(data), "text/markdown")},
        data=fields,
        headers=bearer(library, who),
    )


def actor(library: Library, name: str) -> Actor:
    return library.services.users.actor(name)


def search_ids(client: TestClient, library: Library, who: str, query: str) -> set[str]:
    reply = client.post(
        "/v1/search",
        json={"query": query, "filters": {"source_ids": ["guide"]}},
        headers=bearer(library, who),
    )
    assert reply.status_code == 200, reply.text
    return {r["chunk_id"] for r in reply.json()["results"]}


def test_an_id_another_tenant_uses_answers_as_an_id_never_used(
    web: tuple[TestClient, Library],
) -> None:
    """Defect 8: the upload said "cannot be used here" for another tenant's id (an
    existence oracle); now it is made in the caller's own tenant, like any new id."""
    client, library = web
    assert upload(client, library, "lib", OURS, source_id="guide").status_code == 201
    taken = upload(client, library, "other-lib", THEIRS, source_id="guide")
    never = upload(client, library, "other-lib", THEIRS.replace(b"Other", b"Fresh"), source_id="n")
    assert taken.status_code == never.status_code == 201
    own_fields = {"source_id", "title"}
    assert taken.json().keys() == never.json().keys()
    assert {k: v for k, v in taken.json().items() if k not in own_fields} == {
        k: v for k, v in never.json().items() if k not in own_fields
    }
    assert (taken.json()["source_id"], taken.json()["status"]) == ("guide", "created")
    registry = library.services.registry
    theirs, ours = registry.get("other", "guide"), registry.get("default", "guide")
    assert theirs is not None and (theirs.title, theirs.current_version) == ("Other Guide", 1)
    assert ours is not None and (ours.title, ours.current_version) == ("Acme Guide", 1)


def test_two_tenants_sources_of_one_id_are_independent(web: tuple[TestClient, Library]) -> None:
    client, library = web
    services = library.services
    assert upload(client, library, "lib", OURS, source_id="guide").status_code == 201
    assert upload(client, library, "other-lib", THEIRS, source_id="guide").status_code == 201
    ada, eve, other_lib = actor(library, "ada"), actor(library, "eve"), actor(library, "other-lib")

    # list
    def listed(who: str) -> list[str]:
        reply = client.get("/v1/sources", headers=bearer(library, who))
        return [s["title"] for s in reply.json()["items"] if s["source_id"] == "guide"]

    assert listed("ada") == ["Acme Guide"] and listed("eve") == ["Other Guide"]
    # chunks
    ours = services.library.chunks("guide", ada)
    theirs = services.library.chunks("guide", eve)
    assert "Restart the workers" in ours[0].text and "harbour" in theirs[0].text
    assert {c.chunk_id for c in ours}.isdisjoint(c.chunk_id for c in theirs)
    # search, with the id as a filter
    assert search_ids(client, library, "ada", "harbour workers") == {c.chunk_id for c in ours}
    assert search_ids(client, library, "eve", "harbour workers") == {c.chunk_id for c in theirs}
    # versions: a new version in other leaves default's at 1
    again = upload(
        client, library, "other-lib", THEIRS + b"\nCount the boats.\n", source_id="guide"
    )
    assert (again.status_code, again.json()["status"], again.json()["version"]) == (
        201,
        "updated",
        2,
    )
    assert [v.version for v in services.library.show("guide", ada).versions] == [1]
    assert [v.version for v in services.library.show("guide", eve).versions] == [1, 2]
    # viewer: each reader's link shows their own tenant's text; version 2 is not ada's
    newest = services.library.chunks("guide", eve, 2)[0]
    with browser(client.app) as c:  # type: ignore[arg-type]
        sign_in(c, library, "ada")
        href = services.viewer.href("ada", "guide", 1, ours[0].chunk_id, time.time())
        page = c.get(href)
        assert page.status_code == 200 and "Restart the workers" in page.text
        assert "harbour" not in page.text
        foreign = services.viewer.href("ada", "guide", 2, newest.chunk_id, time.time())
        assert c.get(foreign).status_code == 404
    with browser(client.app) as c:  # type: ignore[arg-type]
        sign_in(c, library, "eve")
        href = services.viewer.href("eve", "guide", 2, newest.chunk_id, time.time())
        page = c.get(href)
        assert page.status_code == 200 and "Count the boats" in page.text
    # delete in other: default's guide is untouched; the id stays unavailable in other only
    services.library.delete("guide", other_lib)
    assert services.library.chunks("guide", ada) == ours
    with pytest.raises(NotFound):
        services.library.chunks("guide", eve)
    refused = upload(client, library, "other-lib", b"# Back\n\nRevived.\n", source_id="guide")
    assert (refused.status_code, refused.json()["error"]["reason"]) == (422, "id_unavailable")
    mine = upload(client, library, "lib", OURS + b"\nDrain first.\n", source_id="guide")
    assert (mine.status_code, mine.json()["status"], mine.json()["version"]) == (201, "updated", 2)


def cli(*args: str) -> Any:
    return CliRunner().invoke(cli_app, list(args), env=CLEAN_ENV, catch_exceptions=False)


def test_cli_sources_commands_act_in_the_callers_tenant(tmp_path: Path) -> None:
    home, ours, theirs = tmp_path / "home", tmp_path / "ours.md", tmp_path / "theirs.md"
    ours.write_bytes(OURS)
    theirs.write_bytes(THEIRS)
    at = ("--home", str(home))
    for path, tenant in ((ours, "default"), (theirs, "other")):
        made = cli("ingest", str(path), "--source-id", "guide", "--tenant", tenant, "--json", *at)
        assert made.exit_code == 0, made.output
        assert json.loads(made.stdout.splitlines()[0])["status"] == "created"
    assert cli("users", "add", "olga", "--role", "admin", "--tenant", "other", *at).exit_code == 0

    def chunk_texts(*who: str) -> list[str]:
        shown = cli("sources", "chunks", "guide", "--json", *who, *at)
        assert shown.exit_code == 0, shown.output
        return [json.loads(line)["text"] for line in shown.stdout.splitlines() if line]

    assert any("Restart the workers" in t for t in chunk_texts())
    assert any("harbour" in t for t in chunk_texts("--as", "olga"))
    shown = json.loads(cli("sources", "show", "guide", "--json", "--as", "olga", *at).stdout)
    assert shown["title"] == "Other Guide"
    assert cli("sources", "delete", "guide", "--as", "olga", *at).exit_code == 0
    assert any("Restart the workers" in t for t in chunk_texts())
    assert cli("sources", "chunks", "guide", "--as", "olga", *at).exit_code == 1
