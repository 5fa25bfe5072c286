"""Schemathesis over the typed /openapi.json: every operation, generated requests, and
each reply checked against the document — no 5xx, the status is one the operation
declares, the body matches the declared schema (the 2xx reply models and the error
component alike), the content type is the declared one.

The requests carry an admin's token (every route reaches its handler) and a
reader's (the refusals are documented replies too); the rate limit is set high
enough not to interfere. Schemathesis' pytest integration does not load under
pytest 9, so each operation's hypothesis strategy is driven directly. ``make test``
runs 20 requests per operation; the ``slow`` run 60 valid and 60 invalid ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode

from citadel.app.ingest import IngestOptions
from citadel.entrypoints.http import create_app
from tests.builders import operator
from tests.http.conftest import QUESTION, SECRET, Library, make_library

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    response_schema_conformance,
    content_type_conformance,
]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    library = make_library(tmp_path_factory.mktemp("fuzz"), rate=1_000_000)
    yield library
    library.services.close()


def fuzz(
    library: Library, who: str, examples: int, modes: list[GenerationMode]
) -> tuple[list[str], dict[str, set[int]]]:
    """Run every operation's strategy; the failures, and the statuses seen per operation."""
    schema = schemathesis.openapi.from_asgi(
        "/openapi.json", create_app(library.services, session_secret=SECRET)
    )
    headers = {"Authorization": f"Bearer {library.tokens[who]}"}
    failures: list[str] = []
    seen: dict[str, set[int]] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20, [o.label for o in operations]
    for operation in operations:
        statuses = seen.setdefault(operation.label, set())
        for mode in modes:
            try:
                drive(operation, mode, examples, headers, failures, statuses)
            except Unsatisfiable:
                # An operation without parameters or body has no invalid request to send.
                assert mode is GenerationMode.NEGATIVE, operation.label
    return failures, seen


def drive(
    operation: Any,
    mode: GenerationMode,
    examples: int,
    headers: dict[str, str],
    failures: list[str],
    statuses: set[int],
) -> None:
    """``examples`` generated requests to ``operation``, each reply checked (``CHECKS``)."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def check(case: schemathesis.Case) -> None:
        try:
            response = case.call_and_validate(headers=headers, checks=CHECKS)
        except Exception as exc:  # a check's failure: recorded, the run goes on
            failures.append(f"{case.method} {case.formatted_path}: {exc}"[:600])
            return
        statuses.add(response.status_code)

    check()


def _served(seen: dict[str, set[int]], label: str) -> set[int]:
    return seen[label]


@pytest.mark.parametrize("who", ["root", "ada"])
def test_every_reply_matches_the_typed_document(fuzzed: Library, who: str) -> None:
    failures, seen = fuzz(fuzzed, who, examples=20, modes=[GenerationMode.POSITIVE])
    assert failures == [], "\n".join(failures[:10])
    # The runs reached the handlers: search answers, an admin lists users, a reader may not.
    assert 200 in _served(seen, "POST /v1/search")
    assert 200 in _served(seen, "GET /v1/sources")
    users = _served(seen, "GET /v1/users")
    assert (200 in users) if who == "root" else (users == {403}), users
    # Every operation answered (a strategy that generated nothing would pass vacuously).
    assert all(seen.values()), [label for label, statuses in seen.items() if not statuses]


@pytest.mark.slow
@pytest.mark.parametrize("who", ["root", "ada", "lib"])
def test_every_reply_matches_the_typed_document_deeper(fuzzed: Library, who: str) -> None:
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    failures, seen = fuzz(fuzzed, who, examples=60, modes=modes)
    assert failures == [], "\n".join(failures[:10])
    assert 422 in _served(seen, "POST /v1/search")


def test_the_document_is_typed_throughout(fuzzed: Library) -> None:
    spec: dict[str, Any] = create_app(fuzzed.services, session_secret=SECRET).openapi()
    components = spec["components"]
    assert set(components["securitySchemes"]) == {"bearer", "session"}
    assert components["securitySchemes"]["bearer"] == {
        **components["securitySchemes"]["bearer"],
        "type": "http",
        "scheme": "bearer",
    }
    assert "HTTPValidationError" not in components["schemas"]
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            where = f"{method.upper()} {path}"
            if path.startswith("/v1/"):
                assert {"bearer": []} in operation["security"], where
                assert {"401", "403", "429"} <= set(operation["responses"]), where
            for status, reply in operation["responses"].items():
                content = reply.get("content", {})
                schema = content.get("application/json", {}).get("schema")
                if status.startswith("2") and schema is not None:
                    # A named component, never a bare object or array.
                    assert set(schema) == {"$ref"}, (where, status, schema)
                elif int(status) >= 400 and path != "/readyz":
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (where, status)
    detail = components["schemas"]["ErrorDetail"]
    assert {"status", "code", "message", "request_id"} <= set(detail["required"])


def test_replies_over_real_items_match_the_document(fuzzed: Library) -> None:
    """The routes' successful replies over items that exist (generated ids rarely name
    one), each checked against the document by schemathesis as the fuzzing is."""
    services = fuzzed.services
    path = fuzzed.home / "doomed.md"
    path.write_text("# Doomed\n\n## End\n\nThe hull is scrapped at last.\n", encoding="utf-8")
    doomed = services.ingest.ingest(
        services.documents.open(path), IngestOptions(tenant="default"), actor=operator()
    ).source_id
    schema = schemathesis.openapi.from_asgi(
        "/openapi.json", create_app(services, session_secret=SECRET)
    )

    def validated(
        who: str | None, method: str, template: str, status: int = 200, **parts: Any
    ) -> Any:
        case = schema[template][method].Case(**parts)
        headers = {"Authorization": f"Bearer {fuzzed.tokens[who]}"} if who else {}
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        assert response.status_code == status, (method, template, response.text[:300])
        return response

    source = {"source_id": fuzzed.source_id}
    query = {"search": {"query": QUESTION}}
    answered = validated("ada", "POST", "/v1/answer", body=query).json()
    answer_id, ref = answered["answer_id"], "E1"
    assert answered["answer"] is not None
    validated("ada", "POST", "/v1/answer/stream", body=query)
    validated("ada", "POST", "/v1/search", body={"query": "retry budget"})
    for who in ("ada", "root"):
        validated(who, "GET", "/v1/sources", query={"limit": 1})
        validated(who, "GET", "/v1/sources/{source_id}", path_parameters=source)
        validated(who, "GET", "/v1/sources/{source_id}/versions", path_parameters=source)
        validated(who, "GET", "/v1/sources/{source_id}/sections", path_parameters=source)
        validated(
            who,
            "GET",
            "/v1/answers/{answer_id}/audit",
            path_parameters={"answer_id": answer_id},
        )
    validated(
        "ada",
        "GET",
        "/v1/answers/{answer_id}/citations/{ref}",
        path_parameters={"answer_id": answer_id, "ref": ref},
    )
    validated(
        "lib", "PUT", "/v1/sources/{source_id}/acl", path_parameters=source, body={"groups": []}
    )
    validated("lib", "DELETE", "/v1/sources/{source_id}", path_parameters={"source_id": doomed})
    validated("root", "GET", "/v1/users", query={"limit": 2})
    validated("root", "POST", "/v1/users", 201, body={"name": "fuzz-new", "groups": ["g"]})
    for action in ("disable", "enable", "rotate"):
        validated("root", "POST", f"/v1/users/{{name}}/{action}", path_parameters={"name": "gone"})
    validated("root", "POST", "/v1/users/{name}/enable", path_parameters={"name": "gone"})
    validated("root", "GET", "/v1/audit/verify")
    validated(None, "GET", "/readyz")
    validated(None, "GET", "/healthz")
