"""One request-id rule for every entrypoint: the HTTP edge and the gRPC services agree."""

from __future__ import annotations

import pytest

from citadel.domain.requests import is_valid_request_id, new_request_id, request_id_or_new
from citadel.domain.users import Actor
from citadel.entrypoints.http.observability import request_id_from
from citadel.wire.identity import REQUEST_ID, actor_metadata, request_id_from_metadata

ACCEPTED = ["trace:1", "req-42", "a.b_c-d:e", "0", "x" * 128, "00-4bf92f-00f067aa-01"]
REPLACED = ["", "a b", "bad id\twith junk", "x" * 129, "line\n", "é", "a/b", "a;b=c"]


@pytest.mark.parametrize("value", ACCEPTED)
def test_an_id_the_edge_keeps_the_services_keep(value: str) -> None:
    assert is_valid_request_id(value)
    assert request_id_from(value) == value
    assert request_id_from_metadata([(REQUEST_ID, value)]) == value
    # And the edge forwards it to a service unchanged.
    assert (REQUEST_ID, value) in actor_metadata(Actor("rita", "acme"), value)


@pytest.mark.parametrize("value", REPLACED)
def test_an_id_the_edge_replaces_the_services_replace_never_refuse(value: str) -> None:
    assert not is_valid_request_id(value)
    for fresh in (request_id_from(value), request_id_from_metadata([(REQUEST_ID, value)])):
        assert fresh != value and is_valid_request_id(fresh)
    # Never sent to a service: it would only be replaced there.
    assert all(key != REQUEST_ID for key, _ in actor_metadata(Actor("rita", "acme"), value))


def test_a_missing_binary_or_repeated_id_is_replaced() -> None:
    for metadata in (
        [],
        [(REQUEST_ID, b"trace:1")],
        [(REQUEST_ID, "trace:1"), (REQUEST_ID, "trace:2")],
    ):
        assert is_valid_request_id(request_id_from_metadata(metadata))
        assert request_id_from_metadata(metadata) not in ("trace:1", "trace:2")
    assert request_id_from(None) != request_id_from(None)


def test_fresh_ids_follow_the_rule() -> None:
    assert is_valid_request_id(new_request_id())
    assert request_id_or_new(None) != request_id_or_new(None)
    assert not is_valid_request_id(42)
