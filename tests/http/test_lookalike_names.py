"""No new user, tenant or group name looks like an existing one, wherever it enters.

A hostile review created ``IibA`` beside ``libA`` and three groups ``g1``, ``ɡ1``
(script g) and ``ｇ1`` (fullwidth). Names enter through ``users add`` (CLI and
``POST /v1/users``), an ingest's tenant and ACL (CLI, upload) and ``PUT
/v1/sources/{id}/acl``; each goes through the same use cases (``NameRegister``), so
these tests go through the real HTTP edge and the CLI over one library.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citadel.app.errors import IngestError, InvalidRequest, UserExists
from citadel.app.ingest import IngestOptions
from citadel.domain.users import Role
from citadel.entrypoints.cli import app as cli_app
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import SECRET, Library, bearer, make_library


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = make_library(tmp_path)
    _, lib.tokens["liba"] = lib.services.users.add("libA", Role.READER, "default", ["g1"])
    yield lib
    lib.services.close()


def test_a_user_name_like_an_existing_one_is_refused(library: Library) -> None:
    users = library.services.users
    for name in ("IibA", "LIBA", "l\u0456bA"):  # capital I; case; Cyrillic і (mixed)
        with pytest.raises((UserExists, InvalidRequest)):
            users.add(name, Role.READER, "default")
    with TestClient(create_app(library.services, session_secret=SECRET)) as client:
        reply = client.post("/v1/users", json={"name": "IibA"}, headers=bearer(library, "root"))
    assert reply.status_code == 409, reply.text
    assert "looks like 'IibA'" in reply.json()["error"]["message"]
    assert "IibA" not in {u.name for u in users.list()}


def test_a_users_group_like_an_existing_group_is_refused(library: Library) -> None:
    users = library.services.users
    for group in ("ɡ1", "ｇ1", "G1"):
        with pytest.raises(InvalidRequest, match=r"group|NFKC"):
            users.add(f"new-{ord(group[0])}", Role.READER, "default", [group])
    users.add("in-g1", Role.READER, "default", ["g1"])  # the existing group itself
    users.add("elsewhere", Role.READER, "other", ["ɡ1"])  # groups are per tenant
    with TestClient(create_app(library.services, session_secret=SECRET)) as client:
        reply = client.post(
            "/v1/users", json={"name": "bob", "groups": ["ɡ1"]}, headers=bearer(library, "root")
        )
    assert reply.status_code == 422, reply.text
    assert "group 'ɡ1' looks like the group 'g1'" in reply.json()["error"]["message"]


def test_a_tenant_like_an_existing_tenant_is_refused(library: Library) -> None:
    with pytest.raises(InvalidRequest, match="tenant 'DEFAULT' looks like the existing 'default'"):
        library.services.users.add("carol", Role.ADMIN, "DEFAULT")
    with pytest.raises(InvalidRequest, match="tenant"):
        library.services.users.add("carol", Role.ADMIN, "0ther")
    library.services.users.add("carol", Role.ADMIN, "globex")


def _ingest(library: Library, tenant: str, acl: frozenset[str]) -> None:
    book = library.home / f"acl-{len(acl)}-{tenant}.md"
    book.write_text("# Ledger\n\nThe zebra ledger records crossings.\n", encoding="utf-8")
    library.services.ingest.ingest(
        library.services.documents.open(book),
        IngestOptions(tenant=tenant, acl_groups=acl),
        actor=operator(tenant),
    )


def test_an_ingests_acl_and_tenant_are_checked_against_users_and_sources(
    library: Library,
) -> None:
    for acl in ({"ɡ1"}, {"ｇ1"}, {"g1", "G1"}):
        with pytest.raises(IngestError) as refused:
            _ingest(library, "default", frozenset(acl))
        assert refused.value.reason == "invalid_name"
    with pytest.raises(IngestError, match="tenant 'DEFAULT'"):
        _ingest(library, "DEFAULT", frozenset())
    _ingest(library, "default", frozenset({"crew"}))  # a new group unlike any
    with pytest.raises(IngestError, match="group 'CREW' looks like the group 'crew'"):
        _ingest(library, "default", frozenset({"CREW"}))


def test_a_sources_new_acl_is_checked_over_http(library: Library) -> None:
    headers = bearer(library, "lib")
    with TestClient(create_app(library.services, session_secret=SECRET)) as client:
        path = f"/v1/sources/{library.source_id}/acl"
        refused = client.put(path, json={"groups": ["ɡ1"]}, headers=headers)
        assert refused.status_code == 422, refused.text
        assert "looks like the group 'g1'" in refused.json()["error"]["message"]
        assert client.put(path, json={"groups": ["g1"]}, headers=headers).status_code == 200


def test_cli_users_add_refuses_a_lookalike(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    env = {"CITADEL_EMBEDDER": "none"}

    def cli(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli_app, list(args), env=env, catch_exceptions=False)
        return result.exit_code, result.stderr

    assert cli("users", "add", "--home", home, "libA", "--groups", "g1")[0] == 0
    code, err = cli("users", "add", "--home", home, "IibA")
    assert code == 1 and "looks like 'IibA'" in err
    code, err = cli("users", "add", "--home", home, "bob", "--groups", "ｇ1")
    assert code == 2 and "NFKC" in err
    code, err = cli("users", "add", "--home", home, "bob", "--groups", "ɡ1")
    assert code == 2 and "looks like the group 'g1'" in err
