"""The JSON API in process: every endpoint, its statuses and its errors."""

from __future__ import annotations

import io
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.observability import JsonFormatter
from tests.http.conftest import QUESTION, SECRET, Library, bearer, make_library

SEARCH = {"query": "retry budget transient failures", "limit": 5}


def error_of(reply: Any) -> dict[str, Any]:
    body: dict[str, Any] = reply.json()["error"]
    assert body["request_id"] == reply.headers["X-Request-ID"]
    assert body["status"] == reply.status_code
    return body


def test_search_returns_the_cli_shape_for_the_callers_library(
    client: TestClient, library: Library
) -> None:
    reply = client.post("/v1/search", json=SEARCH, headers=bearer(library, "ada"))
    assert reply.status_code == 200
    results = reply.json()["results"]
    assert results and results[0]["title"] == "Reliable Service Design"
    assert {"evidence_id", "source_id", "chunk_id", "passage", "page_label_start"} <= set(
        results[0]
    )
    # Another tenant sees nothing of it.
    other = client.post("/v1/search", json=SEARCH, headers=bearer(library, "eve"))
    assert other.status_code == 200 and other.json()["results"] == []


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "mode": "psychic"}, "mode"),
        ({"query": "x", "tenant": "other"}, "unknown field 'tenant'"),
        ({"query": "x", "filters": {"year_min": 2000, "year_max": 1990}}, "year_min"),
        ({"query": "x", "filters": {"colour": "red"}}, "unknown field 'filters.colour'"),
    ],
)
def test_search_refuses_bad_bodies_with_422(
    client: TestClient, library: Library, body: dict[str, Any], needle: str
) -> None:
    reply = client.post("/v1/search", json=body, headers=bearer(library, "ada"))
    assert reply.status_code == 422
    assert needle in error_of(reply)["message"]


def test_answer_has_citations_with_resolver_links_and_the_request_id(
    client: TestClient, library: Library
) -> None:
    reply = client.post(
        "/v1/answer",
        json={"search": {"query": QUESTION}, "minimum_evidence_score": 0.0},
        headers={**bearer(library, "ada"), "X-Request-ID": "req-42"},
    )
    assert reply.status_code == 200
    body = reply.json()
    assert reply.headers["X-Request-ID"] == "req-42" == body["request_id"]
    assert body["degraded"] is None and body["search"]["results"]
    citations = [c for s in body["answer"]["segments"] for c in s["citations"]]
    assert citations
    for c in citations:
        assert c["link"]["state"] == "viewer"
        assert c["link"]["href"].startswith(f"/v1/sources/{library.source_id}/versions/1/view?")


@pytest.mark.parametrize(
    "extra",
    [
        {"passages": ["trust me"]},
        {"citations": [{"ref": "E1"}]},
        {"user": "root"},
        {"role": "admin"},
        {"tenant": "other"},
        {"answer": "forty-two"},
    ],
)
def test_answer_refuses_any_field_beyond_search_and_score(
    client: TestClient, library: Library, extra: dict[str, Any]
) -> None:
    body = {"search": {"query": QUESTION}, "minimum_evidence_score": 0.1, **extra}
    reply = client.post("/v1/answer", json=body, headers=bearer(library, "ada"))
    assert reply.status_code == 422
    message = error_of(reply)["message"]
    assert f"unknown field {next(iter(extra))!r}" in message
    assert "never the caller" in message


@pytest.mark.parametrize(
    "body",
    [
        {"search": {"query": QUESTION, "passages": ["x"]}},
        {"search": {"query": QUESTION}, "minimum_evidence_score": 1.5},
        {"minimum_evidence_score": 0.2},
        [],
    ],
)
def test_answer_refuses_malformed_requests(client: TestClient, library: Library, body: Any) -> None:
    reply = client.post("/v1/answer", json=body, headers=bearer(library, "ada"))
    assert reply.status_code == 422
    assert error_of(reply)["code"] == "invalid_request"


def test_answer_without_evidence_degrades_and_keeps_the_passages(
    client: TestClient, library: Library
) -> None:
    reply = client.post(
        "/v1/answer",
        json={"search": {"query": QUESTION}, "minimum_evidence_score": 1.0},
        headers=bearer(library, "ada"),
    )
    assert reply.status_code == 200
    body = reply.json()
    assert body["answer"] is None and body["degraded"]["reason"] == "no_evidence"
    assert body["search"]["results"]


def _answer(client: TestClient, library: Library, who: str = "ada") -> dict[str, Any]:
    reply = client.post(
        "/v1/answer", json={"search": {"query": QUESTION}}, headers=bearer(library, who)
    )
    assert reply.status_code == 200
    value: dict[str, Any] = reply.json()
    return value


def test_a_citation_resolves_again_for_the_caller_now(client: TestClient, library: Library) -> None:
    answer = _answer(client, library)
    ref = answer["answer"]["segments"][0]["citations"][0]["ref"]
    url = f"/v1/answers/{answer['answer_id']}/citations/{ref}"
    reply = client.get(url, headers=bearer(library, "root"))
    assert reply.status_code == 200
    assert reply.json()["link"]["state"] == "viewer"
    assert client.get(url, headers=bearer(library, "eve")).status_code == 404
    missing = client.get(
        f"/v1/answers/{answer['answer_id']}/citations/E99", headers=bearer(library, "ada")
    )
    assert missing.status_code == 404 and "E99" in error_of(missing)["message"]
    unknown = client.get("/v1/answers/nope/citations/E1", headers=bearer(library, "ada"))
    assert unknown.status_code == 404


def test_sources_lists_what_the_caller_may_read(client: TestClient, library: Library) -> None:
    reply = client.get("/v1/sources", headers=bearer(library, "ada"))
    assert reply.status_code == 200
    assert library.source_id in [s["source_id"] for s in reply.json()["items"]]
    other = client.get("/v1/sources", headers=bearer(library, "eve")).json()
    assert other == {"items": [], "next_cursor": None}


def test_sources_show_the_server_path_to_admins_only(client: TestClient, library: Library) -> None:
    for who in ("ada", "lib"):
        listed = client.get("/v1/sources", headers=bearer(library, who)).json()["items"]
        assert library.source_id in [s["source_id"] for s in listed]
        assert all("origin" not in s for s in listed), who
        assert str(library.home) not in json.dumps(listed)
        # What identifies a source to a reader is all there.
        mine = next(s for s in listed if s["source_id"] == library.source_id)
        assert {"source_id", "title", "authors", "current_version", "canonical_url"} <= set(mine)
    listed = client.get("/v1/sources", headers=bearer(library, "root")).json()["items"]
    mine = next(s for s in listed if s["source_id"] == library.source_id)
    assert mine["origin"] == str(library.home / "reliable.md")


def test_an_upload_reply_names_no_server_path(client: TestClient, library: Library) -> None:
    note = b"# Buoys\n\nA red buoy marks the port side of the channel entrance.\n"
    reply = _upload(client, library, "lib", "buoys.md", note)
    assert reply.status_code == 201, reply.text
    assert reply.json()["path"] == "buoys.md"
    assert str(library.home) not in reply.text and "/tmp" not in reply.text


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "unauthenticated"),
        ({"Authorization": "Bearer ctd_not-a-token"}, 401, "unauthenticated"),
        ({"Authorization": "Basic YWRhOnB3"}, 401, "unauthenticated"),
        ({"Authorization": "Bearer "}, 401, "unauthenticated"),
    ],
)
def test_missing_or_bad_credentials_are_401(
    client: TestClient, headers: dict[str, str], status: int, code: str
) -> None:
    reply = client.get("/v1/sources", headers=headers)
    assert reply.status_code == status
    assert error_of(reply)["code"] == code
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")


def test_two_authorization_headers_are_401_whichever_comes_first(
    client: TestClient, library: Library
) -> None:
    # The first header used to win: a proxy reading the last one and the server the
    # first would each see a different caller.
    good = f"Bearer {library.tokens['root']}"
    for pair in ((good, "Bearer ctd_other"), ("Bearer ctd_other", good), (good, good)):
        headers = [("Authorization", pair[0]), ("Authorization", pair[1])]
        for path in ("/v1/sources", f"/v1/sources/{library.source_id}/versions/1/view"):
            reply = client.get(path, headers=headers)
            assert reply.status_code == 401, (path, reply.text)
            assert error_of(reply)["code"] == "unauthenticated"
            assert "one Authorization header" in error_of(reply)["message"]


def test_a_disabled_user_is_403_with_a_clear_message(client: TestClient, library: Library) -> None:
    reply = client.post("/v1/search", json=SEARCH, headers=bearer(library, "gone"))
    assert reply.status_code == 403
    body = error_of(reply)
    assert body["code"] == "user_disabled" and "disabled" in body["message"]


def _upload(
    client: TestClient, library: Library, who: str, name: str, data: bytes, **fields: str
) -> Any:
    return client.post(
        "/v1/sources",
        files={"file": (name, io.BytesIO(data), "application/octet-stream")},
        data=fields,
        headers=bearer(library, who),
    )


def test_librarians_upload_into_their_own_tenant(client: TestClient, library: Library) -> None:
    note = b"# Tides\n\nThe tide tables list high water at the harbour twice a day.\n"
    reply = _upload(client, library, "lib", "../../etc/tides.md", note, acl="crew")
    assert reply.status_code == 201, reply.text
    report = reply.json()
    assert report["status"] == "created" and report["path"] == "tides.md"
    source = library.services.registry.get("default", report["source_id"])
    assert source is not None and source.tenant == "default"
    assert source.acl_groups == frozenset({"crew"})
    again = _upload(client, library, "root", "tides.md", note, tenant="default")
    assert again.status_code == 201 and again.json()["status"] == "unchanged"
    assert again.json()["source_id"] == report["source_id"]
    # lib is not in "crew": to it the crew's source is not there, so the same text
    # is a new source (never that source's id or title: no existence leak).
    outside = _upload(client, library, "lib", "tides.md", note)
    assert outside.status_code == 201 and outside.json()["status"] == "created"
    assert outside.json()["source_id"] != report["source_id"]


def test_readers_may_not_upload(client: TestClient, library: Library) -> None:
    reply = _upload(client, library, "ada", "x.md", b"# X\n\ntext here\n")
    assert reply.status_code == 403
    assert "librarian" in error_of(reply)["message"]


@pytest.mark.parametrize(
    ("name", "data", "fields", "status", "reason"),
    [
        ("empty.md", b"", {}, 422, "empty"),
        ("data.bin", b"\x00\x01binary", {}, 422, "unsupported"),
        ("page.md", b"# P\n\nbody text\n", {"url": "javascript:alert(1)"}, 422, "url_refused"),
        ("page.md", b"# P\n\nbody text\n", {"tenant": "other"}, 403, None),
        ("page.md", b"# P\n\nbody text\n", {"owner": "me"}, 422, None),
    ],
)
def test_upload_refusals_are_the_clis_per_file_errors(
    client: TestClient,
    library: Library,
    name: str,
    data: bytes,
    fields: dict[str, str],
    status: int,
    reason: str | None,
) -> None:
    reply = _upload(client, library, "lib", name, data, **fields)
    assert reply.status_code == status, reply.text
    body = error_of(reply)
    if reason is not None:
        assert body["reason"] == reason
        assert body["message"].startswith(f"{name}: ")
        assert "/tmp" not in body["message"]


def test_upload_needs_a_multipart_file(client: TestClient, library: Library) -> None:
    reply = client.post("/v1/sources", json={"file": "x"}, headers=bearer(library, "lib"))
    assert reply.status_code == 422
    no_file = client.post("/v1/sources", data={"title": "t"}, headers=bearer(library, "lib"))
    assert no_file.status_code == 422


def test_an_upload_over_the_limit_is_refused_while_streaming(tmp_path: Path) -> None:
    small = make_library(tmp_path, max_file_bytes=1024)
    try:
        with TestClient(create_app(small.services, session_secret=SECRET)) as c:
            reply = _upload(c, small, "lib", "big.md", b"# Big\n\n" + b"word " * 1000)
            assert reply.status_code == 413
            assert error_of(reply)["code"] == "too_large"
    finally:
        small.services.close()


def test_rate_limit_is_per_user_with_retry_after(tmp_path: Path) -> None:
    limited = make_library(tmp_path, rate=3)
    try:
        with TestClient(create_app(limited.services, session_secret=SECRET)) as c:
            statuses = [
                c.get("/v1/sources", headers=bearer(limited, "ada")).status_code for _ in range(4)
            ]
            assert statuses == [200, 200, 200, 429]
            reply = c.get("/v1/sources", headers=bearer(limited, "ada"))
            assert int(reply.headers["Retry-After"]) >= 1
            assert error_of(reply)["code"] == "rate_limited"
            # Another user has a bucket of its own.
            assert c.get("/v1/sources", headers=bearer(limited, "root")).status_code == 200
    finally:
        limited.services.close()


def test_operational_endpoints(client: TestClient, library: Library) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["store"] == "ok"
    assert ready.json()["generator"] == "closed"
    _answer(client, library)
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    assert "citadel_answers_total" in metrics.text
    assert "citadel_fabricated_links_rendered_total 0.0" in metrics.text


class UnreachableStore:
    def get(self, source_id: str) -> None:
        raise OSError("database is locked")


def test_readyz_reports_the_configured_models_vector_coverage(
    client: TestClient, library: Library
) -> None:
    services = library.services
    chunks = sum(
        len(services.chunks.chunks(s.tenant, s.source_id, s.current_version))
        for s in services.registry.list()
    )
    assert chunks > 0
    assert client.get("/readyz").json()["vectors"] == {
        "model": "hashing-words-trigrams-v1-384",
        "chunks": chunks,
        "missing": 0,
    }


def test_readyz_runs_one_coverage_count_at_a_time(client: TestClient, library: Library) -> None:
    counting = client.app.state.edge.counting  # type: ignore[attr-defined]
    with counting:  # a slow count is still running for an earlier probe
        reply = client.get("/readyz")
        assert reply.status_code == 200
        assert reply.json()["vectors"] == {
            "model": "hashing-words-trigrams-v1-384",
            "chunks": None,
            "missing": None,
        }
    assert client.get("/readyz").json()["vectors"]["missing"] == 0
    assert not counting.locked(), "the count released its lock"


def test_readyz_stays_ready_while_chunks_lack_vectors_and_sees_the_reindex(
    tmp_path: Path,
) -> None:
    built = make_library(tmp_path)
    built.services.close()
    # The same library under another model: none of its chunks has a vector for it.
    other = HashingEmbedder(dimension=64)
    services = build(built.services.settings, embedder=other)
    try:
        with TestClient(create_app(services, session_secret=SECRET)) as c:
            before = c.get("/readyz")
            assert before.status_code == 200 and before.json()["status"] == "ready"
            vectors = before.json()["vectors"]
            assert vectors["model"] == other.name
            assert vectors["missing"] == vectors["chunks"] > 0
            services.reindex.reindex()
            assert c.get("/readyz").json()["vectors"]["missing"] == 0
    finally:
        services.close()


def test_readyz_reports_no_vectors_without_an_embedder(tmp_path: Path) -> None:
    services = build(Settings(home=tmp_path, embedder="none"))
    try:
        with TestClient(create_app(services, session_secret=SECRET)) as c:
            reply = c.get("/readyz")
        assert reply.status_code == 200 and reply.json()["vectors"] is None
    finally:
        services.close()


def test_readyz_is_503_when_the_store_is_unreachable(library: Library) -> None:
    services = replace(library.services, registry=UnreachableStore())
    with TestClient(create_app(services, session_secret=SECRET)) as c:
        reply = c.get("/readyz")
    assert reply.status_code == 503 and reply.json()["store"] == "unreachable"


def test_every_response_has_a_request_id_and_security_headers(
    client: TestClient, library: Library
) -> None:
    for reply in (
        client.get("/healthz"),
        client.get("/nowhere"),
        client.get("/v1/sources"),
        client.get("/healthz", headers={"X-Request-ID": "bad id\twith junk"}),
        client.get("/healthz", headers={"X-Request-ID": "x" * 500}),
    ):
        rid = reply.headers["X-Request-ID"]
        assert rid and " " not in rid and len(rid) <= 128
        assert "default-src 'self'" in reply.headers["Content-Security-Policy"]
        assert reply.headers["X-Content-Type-Options"] == "nosniff"
        assert reply.headers["Referrer-Policy"] == "no-referrer"
    assert client.get("/nowhere").json()["error"]["code"] == "not_found"


def test_unexpected_failures_are_a_bare_500_with_the_request_id(library: Library) -> None:
    app: FastAPI = create_app(library.services, session_secret=SECRET)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("passage text that must not leak")

    with TestClient(app, raise_server_exceptions=False) as c:
        reply = c.get("/boom")
    assert reply.status_code == 500
    body = error_of(reply)
    assert body["message"] == "internal error"
    assert "passage" not in reply.text


def test_openapi_documents_the_api(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/v1/search",
        "/v1/answer",
        "/v1/answers/{answer_id}/citations/{ref}",
        "/v1/sources",
        "/v1/sources/{source_id}/versions/{version}/view",
        "/healthz",
        "/readyz",
        "/metrics",
    ):
        assert path in paths
    answer = spec["components"]["schemas"]["AnswerBody"]
    assert set(answer["properties"]) == {"search", "minimum_evidence_score"}
    assert answer["additionalProperties"] is False
    assert "multipart/form-data" in paths["/v1/sources"]["post"]["requestBody"]["content"]
    assert "/signin" not in paths


def test_json_logs_carry_the_request_id_and_never_the_question_or_token(
    client: TestClient, library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    formatter = JsonFormatter()
    with caplog.at_level(logging.INFO, logger="citadel.http"):
        client.post(
            "/v1/answer",
            json={"search": {"query": QUESTION}},
            headers={**bearer(library, "ada"), "X-Request-ID": "log-test-1"},
        )
        client.get("/v1/sources", headers={"Authorization": "Bearer ctd_leaked-secret"})
    lines = [formatter.format(r) for r in caplog.records if r.name == "citadel.http"]
    assert lines
    parsed = [json.loads(line) for line in lines]
    assert {
        "request_id": "log-test-1",
        "route": "/v1/answer",
        "status": 200,
        "user": "ada",
    }.items() <= parsed[0].items()
    text = "\n".join(lines)
    assert QUESTION not in text and "retry budget" not in text
    assert library.tokens["ada"] not in text and "ctd_leaked-secret" not in text


def test_citadel_serve_is_a_command() -> None:
    from typer.testing import CliRunner

    from citadel.entrypoints.cli import app as cli_app

    result = CliRunner().invoke(cli_app, ["serve", "--help"])
    assert result.exit_code == 0
    assert "--port" in result.output and "--host" in result.output
