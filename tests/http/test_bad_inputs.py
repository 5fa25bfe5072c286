"""``POST /v1/search`` refuses every case of the shared bad-input table with 422."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.bad_inputs import BAD_INPUTS, IDS, BadInput
from tests.http.conftest import Library, bearer


@pytest.mark.parametrize("case", BAD_INPUTS, ids=IDS)
def test_the_search_body_refuses_each_bad_input(
    client: TestClient, library: Library, case: BadInput
) -> None:
    reply = client.post(
        "/v1/search",
        content=case.text('{"query": "eigenvalues"', "limit").encode(),
        headers={"content-type": "application/json", **bearer(library, "ada")},
    )
    assert reply.status_code == 422, reply.text
    assert case.expected("limit") in reply.text


def test_the_same_body_without_the_defect_is_answered(client: TestClient, library: Library) -> None:
    reply = client.post(
        "/v1/search",
        content=b'{"query": "eigenvalues", "limit": 5}',
        headers={"content-type": "application/json", **bearer(library, "ada")},
    )
    assert reply.status_code == 200


@pytest.mark.parametrize("declared", [b"\xb2", b"1" + b"0" * 5000], ids=["superscript 2", "long"])
def test_a_content_length_int_cannot_read_is_no_server_error(
    client: TestClient, library: Library, declared: bytes
) -> None:
    # "²" passes str.isdigit() and fails int(); 5,001 digits fail it too.
    reply = client.post(
        "/v1/search",
        content=b'{"query": "eigenvalues"}',
        headers={
            "content-type": b"application/json",
            "content-length": declared,
            **{k: v.encode() for k, v in bearer(library, "ada").items()},
        },
    )
    assert reply.status_code in (200, 413), reply.text
