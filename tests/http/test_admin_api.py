"""The administration routes: who may do what (the CLI's rules), and pagination.

Readers read; librarians and admins change sources; only admins manage users,
and only those of their own tenant; audit records are for their asker and the
tenant's admins. A walk over ``/v1/sources`` pages returns every source once,
whatever is added meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from citadel.app.ingest import IngestOptions
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, bearer, make_library
from tests.http.test_edge_limits import BIG, Recorder, call


@pytest.fixture(scope="module")
def admin_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    library = make_library(tmp_path_factory.mktemp("admin"))
    users = library.services.users
    _, library.tokens["crew-ada"] = users.add("crew-ada", Role.READER, "default", ["crew"])
    _, library.tokens["other-root"] = users.add("other-root", Role.ADMIN, "other")
    yield library
    library.services.close()


@pytest.fixture
def client(admin_library: Library) -> Iterator[TestClient]:
    app = create_app(admin_library.services, session_secret=SECRET)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def ingest(library: Library, source_id: str, text: str, **options: Any) -> str:
    path = library.home / f"{source_id}.md"
    path.write_text(text, encoding="utf-8")
    report = library.services.ingest.ingest(
        library.services.documents.open(path),
        IngestOptions(tenant="default", source_id=source_id, **options),
        actor=operator("default"),
    )
    return report.source_id


def error_code(reply: Any) -> str:
    body = reply.json()["error"]
    assert body["status"] == reply.status_code
    code: str = body["code"]
    return code


# -- sources -------------------------------------------------------------------------------


def test_a_reader_may_read_a_source_but_not_delete_it_or_change_its_acl(
    client: TestClient, admin_library: Library
) -> None:
    sid = ingest(admin_library, "kept", "# Kept\n\n## Part\n\nThe keel is laid first.\n")
    ada = bearer(admin_library, "ada")
    shown = client.get(f"/v1/sources/{sid}", headers=ada)
    assert shown.status_code == 200 and shown.json()["versions"][0]["version"] == 1
    assert "origin" not in shown.json()
    refused = client.delete(f"/v1/sources/{sid}", headers=ada)
    assert refused.status_code == 403 and error_code(refused) == "forbidden"
    acl = client.put(f"/v1/sources/{sid}/acl", json={"groups": ["x"]}, headers=ada)
    assert acl.status_code == 403 and error_code(acl) == "forbidden"
    source = admin_library.services.registry.get("default", sid)
    assert source is not None and not source.deleted and source.acl_groups == frozenset()


def test_a_librarian_changes_the_acl_and_the_reader_loses_the_source(
    client: TestClient, admin_library: Library
) -> None:
    sid = ingest(admin_library, "crewonly", "# Crew\n\n## Deck\n\nThe bosun keeps the log.\n")
    changed = client.put(
        f"/v1/sources/{sid}/acl", json={"groups": ["crew"]}, headers=bearer(admin_library, "lib")
    )
    assert changed.status_code == 200 and changed.json()["acl_groups"] == ["crew"]
    assert "origin" not in changed.json()
    ada = client.get(f"/v1/sources/{sid}", headers=bearer(admin_library, "ada"))
    assert ada.status_code == 403
    crew = client.get(f"/v1/sources/{sid}/versions", headers=bearer(admin_library, "crew-ada"))
    assert crew.status_code == 200 and [v["version"] for v in crew.json()["versions"]] == [1]
    # Another tenant's caller does not see it at all, admin or not.
    for who in ("eve", "other-root"):
        reply = client.get(f"/v1/sources/{sid}", headers=bearer(admin_library, who))
        assert reply.status_code == 404, who
    bad = client.put(
        f"/v1/sources/{sid}/acl", json={"groups": ["a,b"]}, headers=bearer(admin_library, "lib")
    )
    assert bad.status_code == 422


def test_a_librarian_deletes_a_source_and_a_tombstone_stays(
    client: TestClient, admin_library: Library
) -> None:
    sid = ingest(admin_library, "doomed", "# Doomed\n\n## End\n\nThe hull is scrapped.\n")
    other = client.delete(f"/v1/sources/{sid}", headers=bearer(admin_library, "other-root"))
    assert other.status_code == 404
    reply = client.delete(f"/v1/sources/{sid}", headers=bearer(admin_library, "lib"))
    assert reply.status_code == 200 and reply.json() == {"source_id": sid, "status": "deleted"}
    source = admin_library.services.registry.get("default", sid)
    assert source is not None and source.deleted
    again = client.delete(f"/v1/sources/{sid}", headers=bearer(admin_library, "lib"))
    assert again.status_code == 404
    listed = client.get("/v1/sources?limit=200", headers=bearer(admin_library, "root")).json()
    assert sid not in [s["source_id"] for s in listed["items"]]


def test_sections_follow_the_reading_order(client: TestClient, admin_library: Library) -> None:
    reply = client.get(
        f"/v1/sources/{admin_library.source_id}/sections", headers=bearer(admin_library, "ada")
    )
    assert reply.status_code == 200
    body = reply.json()
    assert body["version"] == 1
    headings = [s["section_path"][-1] for s in body["sections"]]
    assert headings == ["Retry Budgets", "Circuit Breakers", "Rolling Restarts"]
    assert all(s["chunks"] >= 1 and s["first_chunk_id"] for s in body["sections"])
    missing = client.get(
        f"/v1/sources/{admin_library.source_id}/sections?version=9",
        headers=bearer(admin_library, "ada"),
    )
    assert missing.status_code == 404


# -- pagination ----------------------------------------------------------------------------


def _walk(client: TestClient, headers: dict[str, str], between: Any = None) -> list[str]:
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        reply = client.get(f"/v1/sources{query}", headers=headers)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert len(body["items"]) <= 2
        seen.extend(s["source_id"] for s in body["items"])
        pages += 1
        if between is not None:
            between(pages)
        cursor = body["next_cursor"]
        if cursor is None:
            return seen


def test_a_walk_over_the_pages_returns_every_source_once(tmp_path: Path) -> None:
    library = make_library(tmp_path / "home")
    try:
        ids = {library.source_id}
        for n in range(6):
            ids.add(ingest(library, f"m{n}", f"# Book {n}\n\n## S\n\nText of book {n} here.\n"))
        headers = bearer(library, "ada")
        added: list[str] = []

        def insert(pages: int) -> None:
            # While the walk goes on: one id sorting before every cursor, one after all.
            if pages == 1:
                added.append(ingest(library, "a-early", "# Early\n\n## S\n\nEarly text.\n"))
                added.append(ingest(library, "z-late", "# Late\n\n## S\n\nLate text.\n"))

        with TestClient(create_app(library.services, session_secret=SECRET)) as client:
            seen = _walk(client, headers, insert)
            assert len(seen) == len(set(seen)), seen
            assert ids <= set(seen)
            assert "z-late" in seen and "a-early" not in seen
            assert seen == sorted(seen)
            assert set(_walk(client, headers)) == ids | set(added)
            # A cursor is this list's only: junk and the users list's cursors are refused.
            bad = client.get("/v1/sources?cursor=not-a-cursor", headers=headers)
            assert bad.status_code == 422 and error_code(bad) == "invalid_request"
            users = client.get("/v1/users?limit=1", headers=bearer(library, "root")).json()
            crossed = client.get(f"/v1/sources?cursor={users['next_cursor']}", headers=headers)
            assert crossed.status_code == 422
            assert client.get("/v1/sources?limit=0", headers=headers).status_code == 422
    finally:
        library.services.close()


# -- users ---------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["ada", "lib"])
def test_only_admins_manage_users(client: TestClient, admin_library: Library, who: str) -> None:
    headers = bearer(admin_library, who)
    for reply in (
        client.get("/v1/users", headers=headers),
        client.post("/v1/users", json={"name": f"by-{who}"}, headers=headers),
        client.post("/v1/users/ada/disable", headers=headers),
        client.post("/v1/users/ada/rotate", headers=headers),
        client.get("/v1/audit/verify", headers=headers),
    ):
        assert reply.status_code == 403 and error_code(reply) == "forbidden", reply.request.url
    assert admin_library.services.users.get("ada").active
    assert all(u.name != f"by-{who}" for u in admin_library.services.users.list())


def test_an_admin_adds_disables_enables_and_rotates_a_user(
    client: TestClient, admin_library: Library
) -> None:
    root = bearer(admin_library, "root")
    added = client.post(
        "/v1/users", json={"name": "newbie", "role": "reader", "groups": ["crew"]}, headers=root
    )
    assert added.status_code == 201, added.text
    body = added.json()
    assert body["user"] == {
        **body["user"],
        "name": "newbie",
        "tenant": "default",
        "role": "reader",
        "groups": ["crew"],
        "status": "active",
    }
    token = {"Authorization": f"Bearer {body['token']}"}
    assert client.get("/v1/sources", headers=token).status_code == 200
    assert client.post("/v1/users", json={"name": "newbie"}, headers=root).status_code == 409

    disabled = client.post("/v1/users/newbie/disable", headers=root)
    assert disabled.status_code == 200 and disabled.json()["status"] == "disabled"
    assert error_code(client.get("/v1/sources", headers=token)) == "user_disabled"
    assert client.post("/v1/users/newbie/enable", headers=root).json()["status"] == "active"
    assert client.get("/v1/sources", headers=token).status_code == 200

    rotated = client.post("/v1/users/newbie/rotate", headers=root)
    assert rotated.status_code == 200
    fresh = {"Authorization": f"Bearer {rotated.json()['token']}"}
    assert client.get("/v1/sources", headers=token).status_code == 401
    assert client.get("/v1/sources", headers=fresh).status_code == 200
    listed = client.get("/v1/users?limit=200", headers=root).json()
    assert "token" not in str(listed)


def test_a_tenant_never_loses_its_last_enabled_admin_over_http(tmp_path: Path) -> None:
    # A hostile review disabled its own admin, the tenant's last, over HTTP: no one of
    # the tenant could manage its users any more.
    library = make_library(tmp_path)
    try:
        app = create_app(library.services, session_secret=SECRET)
        with TestClient(app, raise_server_exceptions=False) as client:
            root = bearer(library, "root")
            alone = client.post("/v1/users/root/disable", headers=root)
            assert alone.status_code == 409 and error_code(alone) == "last_admin"
            assert "yourself" in alone.json()["error"]["message"]
            assert library.services.users.get("root").active
            # Beside another admin, still not yourself: the other admin does it.
            _, library.tokens["boss"] = library.services.users.add("boss", Role.ADMIN, "default")
            boss = bearer(library, "boss")
            assert error_code(client.post("/v1/users/root/disable", headers=root)) == "last_admin"
            gone = client.post("/v1/users/root/disable", headers=boss)
            assert gone.status_code == 200 and gone.json()["status"] == "disabled"
            last = client.post("/v1/users/boss/disable", headers=boss)
            assert last.status_code == 409 and error_code(last) == "last_admin"
            assert library.services.users.get("boss").active
            assert client.get("/v1/users", headers=boss).status_code == 200
            # Other users, and other tenants' admins, are not held by the rule.
            assert client.post("/v1/users/ada/disable", headers=boss).status_code == 200
    finally:
        library.services.close()


def test_an_admin_manages_only_its_own_tenants_users(
    client: TestClient, admin_library: Library
) -> None:
    other = bearer(admin_library, "other-root")
    for action in ("disable", "enable", "rotate"):
        reply = client.post(f"/v1/users/ada/{action}", headers=other)
        assert reply.status_code == 404 and "no user ada" in reply.json()["error"]["message"]
    assert admin_library.services.users.get("ada").active
    names = [u["name"] for u in client.get("/v1/users", headers=other).json()["items"]]
    assert set(names) == {"eve", "other-root"}
    added = client.post("/v1/users", json={"name": "theirs", "role": "admin"}, headers=other)
    assert added.json()["user"]["tenant"] == "other"


def test_the_users_list_pages_walk_every_user_once(
    client: TestClient, admin_library: Library
) -> None:
    root = bearer(admin_library, "root")
    names: list[str] = []
    cursor = None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        body = client.get(f"/v1/users{query}", headers=root).json()
        names.extend(u["name"] for u in body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            break
    expected = sorted(u.name for u in admin_library.services.users.list("default"))
    assert names == expected and len(names) >= 5


# -- audit ---------------------------------------------------------------------------------


def test_an_audit_record_is_for_its_asker_and_the_tenants_admins(
    client: TestClient, admin_library: Library
) -> None:
    asked = client.post(
        "/v1/answer", json={"search": {"query": QUESTION}}, headers=bearer(admin_library, "ada")
    )
    answer_id = asked.json()["answer_id"]
    url = f"/v1/answers/{answer_id}/audit"
    mine = client.get(url, headers=bearer(admin_library, "ada"))
    assert mine.status_code == 200, mine.text
    record = mine.json()
    assert record["answer_id"] == answer_id and record["actor"]["user_id"] == "ada"
    assert record["manifest"]["sha256"] == asked.json()["manifest_sha256"]
    assert client.get(url, headers=bearer(admin_library, "root")).status_code == 200
    for who in ("lib", "other-root"):
        assert client.get(url, headers=bearer(admin_library, who)).status_code == 404, who
    verified = client.get("/v1/audit/verify", headers=bearer(admin_library, "root"))
    assert verified.status_code == 200
    assert verified.json()["intact"] is True and verified.json()["records"] >= 1


def test_an_audit_record_is_withheld_from_its_asker_once_a_quoted_source_is_not_theirs(
    client: TestClient, admin_library: Library
) -> None:
    # The record quotes the answer's passages: who may read them is decided now (as for
    # the answer's citations), not when the answer was given.
    sid = ingest(
        admin_library, "payroll", "# Pay\n\n## Budget\n\nThe quarterly galleon budget is XYZZY.\n"
    )
    lib, crew = bearer(admin_library, "root"), bearer(admin_library, "crew-ada")
    assert client.put(f"/v1/sources/{sid}/acl", json={"groups": ["crew"]}, headers=lib).is_success
    asked = client.post(
        "/v1/answer",
        json={"search": {"query": "quarterly galleon budget", "filters": {"source_ids": [sid]}}},
        headers=crew,
    ).json()
    assert asked["answer"] is not None
    url = f"/v1/answers/{asked['answer_id']}/audit"
    assert "XYZZY" in client.get(url, headers=crew).text
    assert client.put(f"/v1/sources/{sid}/acl", json={"groups": ["board"]}, headers=lib).is_success
    revoked = client.get(url, headers=crew)
    assert revoked.status_code == 403 and "XYZZY" not in revoked.text
    assert client.get(url, headers=bearer(admin_library, "root")).status_code == 200
    assert client.put(f"/v1/sources/{sid}/acl", json={"groups": ["crew"]}, headers=lib).is_success
    assert client.get(url, headers=crew).status_code == 200
    assert client.delete(f"/v1/sources/{sid}", headers=lib).is_success
    deleted = client.get(url, headers=crew)
    assert deleted.status_code == 403 and "XYZZY" not in deleted.text


@pytest.mark.parametrize(
    ("path", "method", "who"),
    [
        ("/v1/sources/{source_id}/acl", "PUT", "ada"),
        ("/v1/users", "POST", "ada"),
        ("/v1/users", "POST", "lib"),
    ],
)
def test_a_caller_without_the_role_is_refused_before_its_body_is_read(
    admin_library: Library, path: str, method: str, who: str
) -> None:
    app = create_app(admin_library.services, session_secret=SECRET)
    headers = {
        "content-type": "application/json",
        "content-length": str(BIG),
        **bearer(admin_library, who),
    }
    seen = call(app, path, headers, Recorder(), method)
    assert seen.status == 403 and seen.read_before_reply == 0
