"""Two citadel servers on one PostgreSQL database see each other's changes.

Two ``build()``s on the same database, each with its own HTTP app (its own lexical
and dense indexes in memory, its own answer cache), stand for two servers behind
a load balancer. A change made through one — a new version, an ACL change, a
disabled user, a deleted source — is seen through the other on its next request,
cached answers included (the cache validates every hit against the sources'
revisions, read from the shared database).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.config import HttpSettings, Settings
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import BOOK, QUESTION, SECRET

NEW_TEXT = "The zeppelin quota limits how many airships one tenant may launch per hour."


class Server:
    def __init__(self, url: str, home: Path) -> None:
        settings = Settings(
            home=home, db=url, embedder="hashing", http=HttpSettings(rate_per_minute=10_000)
        )
        self.services: Services = build(settings)
        self.client = TestClient(
            create_app(self.services, session_secret=SECRET), raise_server_exceptions=False
        )

    def search(self, token: str, query: str) -> list[dict[str, Any]]:
        reply = self.client.post(
            "/v1/search", json={"query": query}, headers={"Authorization": f"Bearer {token}"}
        )
        assert reply.status_code == 200, reply.text
        results: list[dict[str, Any]] = reply.json()["results"]
        return results

    def answer(self, token: str, question: str) -> dict[str, Any]:
        reply = self.client.post(
            "/v1/answer",
            json={"search": {"query": question}},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body


@pytest.fixture
def servers(postgres_url: str, tmp_path: Path) -> Iterator[tuple[Server, Server, dict[str, str]]]:
    # One CITADEL_HOME: the servers share the audit key (docs/deployment.md).
    home = tmp_path / "home"
    first, second = Server(postgres_url, home), Server(postgres_url, home)
    tokens = {}
    for name, role, groups in (
        ("ada", Role.READER, ()),
        ("bob", Role.READER, ("staff",)),
        ("lib", Role.LIBRARIAN, ()),
    ):
        _, tokens[name] = first.services.users.add(name, role, "default", groups)
    try:
        yield first, second, tokens
    finally:
        first.services.close()
        second.services.close()


def cached(body: dict[str, Any]) -> bool:
    generation = body["generation"]
    return bool(generation and generation["cached"])


def citations(body: dict[str, Any]) -> list[dict[str, Any]]:
    if body["answer"] is None:
        return []
    return [c for segment in body["answer"]["segments"] for c in segment["citations"]]


def ingest(server: Server, path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    report = server.services.ingest.ingest(
        server.services.documents.open(path),
        IngestOptions(tenant="default"),
        actor=operator("default"),
    )
    return report.source_id


def test_a_new_version_made_through_one_server_is_searched_and_answered_by_the_other(
    servers: tuple[Server, Server, dict[str, str]], tmp_path: Path
) -> None:
    first, second, tokens = servers
    book = tmp_path / "reliable.md"
    source_id = ingest(first, book, BOOK)
    # The second server's indexes and cache are filled before the change.
    assert second.search(tokens["ada"], "zeppelin quota airships") == []
    before = second.answer(tokens["ada"], QUESTION)
    assert cached(second.answer(tokens["ada"], QUESTION)) is True
    assert ingest(first, book, BOOK + "\n### Quotas\n\n" + NEW_TEXT + "\n") == source_id
    found = second.search(tokens["ada"], "zeppelin quota airships")
    assert found and found[0]["source_id"] == source_id and found[0]["version"] == 2
    after = second.answer(tokens["ada"], QUESTION)
    assert cached(after) is False, "the cached answer cites version 1, now superseded"
    assert after["answer_id"] != before["answer_id"]


def test_an_acl_change_through_one_server_is_enforced_by_the_other(
    servers: tuple[Server, Server, dict[str, str]], tmp_path: Path
) -> None:
    first, second, tokens = servers
    source_id = ingest(first, tmp_path / "reliable.md", BOOK)
    assert second.search(tokens["ada"], "retry budget")
    assert citations(second.answer(tokens["ada"], QUESTION))
    assert cached(second.answer(tokens["ada"], QUESTION)) is True
    first.services.library.set_acl(source_id, ["staff"], operator("default"))
    assert second.search(tokens["ada"], "retry budget") == []
    refused = second.answer(tokens["ada"], QUESTION)
    assert cached(refused) is False and citations(refused) == []
    # A member of the group still reads it through the second server.
    assert second.search(tokens["bob"], "retry budget")[0]["source_id"] == source_id


def test_a_user_disabled_through_one_server_is_refused_by_the_other(
    servers: tuple[Server, Server, dict[str, str]], tmp_path: Path
) -> None:
    first, second, tokens = servers
    ingest(first, tmp_path / "reliable.md", BOOK)
    assert second.search(tokens["ada"], "retry budget")
    first.services.users.disable("ada")
    reply = second.client.post(
        "/v1/search",
        json={"query": "retry budget"},
        headers={"Authorization": f"Bearer {tokens['ada']}"},
    )
    assert reply.status_code == 403, reply.text
    assert reply.json()["error"]["code"] == "user_disabled"
    # Rotated through the second server: the first refuses the old token at once.
    _, new_token = second.services.users.rotate("bob")
    old = first.client.post(
        "/v1/search",
        json={"query": "retry budget"},
        headers={"Authorization": f"Bearer {tokens['bob']}"},
    )
    assert old.status_code == 401
    assert first.search(new_token, "retry budget")


def test_a_source_deleted_through_one_server_is_gone_from_the_other(
    servers: tuple[Server, Server, dict[str, str]], tmp_path: Path
) -> None:
    first, second, tokens = servers
    source_id = ingest(first, tmp_path / "reliable.md", BOOK)
    assert second.search(tokens["ada"], "retry budget")
    answered = second.answer(tokens["ada"], QUESTION)
    assert citations(answered) and cached(second.answer(tokens["ada"], QUESTION)) is True
    listed = second.client.get("/v1/sources", headers={"Authorization": f"Bearer {tokens['ada']}"})
    assert [s["source_id"] for s in listed.json()["items"]] == [source_id]
    first.services.library.delete(source_id, operator("default"))
    assert second.search(tokens["ada"], "retry budget") == []
    gone = second.answer(tokens["ada"], QUESTION)
    assert cached(gone) is False and citations(gone) == []
    listed = second.client.get("/v1/sources", headers={"Authorization": f"Bearer {tokens['ada']}"})
    assert listed.json()["items"] == []
    # The earlier answer's citation, resolved again through the second server, says so.
    ref = citations(answered)[0]["ref"]
    link = second.client.get(
        f"/v1/answers/{answered['answer_id']}/citations/{ref}",
        headers={"Authorization": f"Bearer {tokens['ada']}"},
    )
    assert link.status_code == 200 and link.json()["link"]["state"] == "deleted"
