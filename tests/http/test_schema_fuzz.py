"""Schemathesis against /openapi.json: generated requests to every operation, no 5xx.

Requests carry a librarian's token so they reach the handlers (and are not all
stopped at 401); the rate limit is set high enough not to interfere.
Schemathesis' pytest integration does not load under pytest 9, so each
operation's hypothesis strategy is driven directly.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from citadel.entrypoints.http import create_app
from tests.http.conftest import SECRET, Library, make_library


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    library = make_library(tmp_path_factory.mktemp("fuzz"), rate=1_000_000)
    yield library
    library.services.close()


def test_no_operation_answers_with_a_server_error(fuzzed: Library) -> None:
    schema = schemathesis.openapi.from_asgi(
        "/openapi.json", create_app(fuzzed.services, session_secret=SECRET)
    )
    headers = {"Authorization": f"Bearer {fuzzed.tokens['lib']}"}
    failures: list[str] = []
    seen: list[int] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            response = case.call(headers=headers)
            seen.append(response.status_code)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.text[:200]}")

        check()
    assert failures == []
    assert len(seen) >= 100 and 200 in seen, sorted(set(seen))
