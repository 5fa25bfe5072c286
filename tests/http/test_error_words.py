"""A refused request body is explained in citadel's own words: the field, what is
wrong and the limit, never the validator's text, its documentation URL or its codes."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from citadel.entrypoints.http.errors import validation_message
from tests.http.conftest import Library, bearer

CASES = [
    (b'{"query": "q", "limit": 101}', "'limit' must be at most 100"),
    (b'{"query": "q", "limit": 0}', "'limit' must be at least 1"),
    (b'{"query": ""}', "'query' needs at least 1 character"),
    (b'{"query": "' + b"q" * 2001 + b'"}', "'query' may hold at most 2000 characters"),
    (b'{"limit": 5}', "'query' is required"),
    (b'{"query": 5}', "'query' must be text"),
    (b'{"query": "q", "limit": "5"}', "'limit' must be a whole number"),
    (b"[1]", "the body must be an object"),
]
PYDANTIC = ("pydantic", "Input should", "String should", "Field required", "SearchBody")


@pytest.mark.parametrize(("body", "words"), CASES, ids=[w for _, w in CASES])
def test_a_refused_body_names_the_field_the_fault_and_the_limit(
    client: TestClient, library: Library, body: bytes, words: str
) -> None:
    reply = client.post(
        "/v1/search",
        content=body,
        headers={"content-type": "application/json", **bearer(library, "ada")},
    )
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert set(error) == {"status", "code", "message", "request_id"}
    assert words in error["message"], error["message"]
    assert not any(mark in reply.text for mark in PYDANTIC), reply.text


def test_a_query_parameter_is_explained_the_same_way(client: TestClient, library: Library) -> None:
    reply = client.get("/v1/sources?limit=abc", headers=bearer(library, "ada"))
    assert reply.status_code == 422, reply.text
    assert "'query.limit' must be a whole number" in reply.json()["error"]["message"]
    assert "Input should" not in reply.text


def test_an_error_the_table_does_not_know_carries_none_of_the_validators_text() -> None:
    error = {
        "type": "url_parsing",
        "loc": ("body", "link"),
        "msg": "Input should be a valid URL",
        "input": "secret input",
        "url": "https://errors.pydantic.dev/2.11/v/url_parsing",
    }
    message = validation_message([error])
    assert message == "'link' is not valid here"
