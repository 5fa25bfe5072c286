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
