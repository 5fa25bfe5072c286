"""The edge's limits on what a request may make the server do before and while it is read.

- a request's body is read only after its token was accepted (401 from headers alone);
- JSON bodies are capped while they arrive (Content-Length early, chunked bodies too);
- JSON bodies are standard JSON with strict types (no duplicate keys, no ``true`` for 1);
- forwarded headers are believed only from configured proxies (the failed-auth limit
  holds from loopback however ``X-Forwarded-For`` rotates), on a real uvicorn server.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citadel.config import HttpSettings
from citadel.entrypoints.cli import app as cli_app
from citadel.entrypoints.http import (
    admin_sources,
    admin_users,
    api,
    conversations_api,
    create_app,
    viewer,
)
from tests.http.conftest import SECRET, Library, bearer, make_library

MINIMAL: dict[str, dict[str, Any]] = {
    "/v1/search": {"query": "retry budget"},
    "/v1/answer": {"search": {"query": "retry"}},
    "/v1/answer/stream": {"search": {"query": "retry"}},
    "/v1/sources/{source_id}/acl": {"groups": []},
    "/v1/users": {"name": "capped-user"},
    "/v1/conversations": {"search": {"query": "retry"}},
    "/v1/conversations/{conversation_id}/turns": {"search": {"query": "and its cap?"}},
}
"""A valid body for each JSON operation (a new one must be added here to be tested)."""

SENDER = {"/v1/sources/{source_id}/acl": "lib", "/v1/users": "root"}
"""Who may send each JSON operation's body (default: the reader ada)."""

BIG = 100 * 1024 * 1024
V1_ROUTERS = (
    api.router,
    viewer.router,
    admin_sources.router,
    admin_users.users,
    admin_users.audit,
    conversations_api.router,
)


def error_of(reply: Any) -> dict[str, Any]:
    body: dict[str, Any] = reply.json()["error"]
    assert body["status"] == reply.status_code
    return body


def json_operations(app: FastAPI) -> list[str]:
    """Every operation under /v1 whose published body is JSON."""
    paths = app.openapi()["paths"]
    found = [
        path
        for path, methods in paths.items()
        for operation in methods.values()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    ]
    assert found and all(p.startswith("/v1/") for p in found)
    return found


def method_of(app: FastAPI, path: str) -> str:
    """The one method of ``path`` that takes a body."""
    methods = app.openapi()["paths"][path]
    (method,) = [m for m, op in methods.items() if "requestBody" in op]
    return method.upper()


def concrete(
    path: str, source_id: str = "some-source", conversation_id: str = "some-conversation"
) -> str:
    return path.replace("{source_id}", source_id).replace("{conversation_id}", conversation_id)


def body_operations(app: FastAPI) -> list[tuple[str, str]]:
    """Every operation under /v1 that takes a body (JSON or multipart)."""
    return [
        (method.upper(), path)
        for path, methods in app.openapi()["paths"].items()
        for method, operation in methods.items()
        if path.startswith("/v1/") and "requestBody" in operation
    ]


# -- authenticate first ---------------------------------------------------------------


class Recorder:
    """An ASGI client that offers an endless body and notes whether any of it was asked
    for before the response began."""

    def __init__(self, *, chunk: bytes = b"x" * 65536, total: int | None = None) -> None:
        self.chunk = chunk
        self.total = total
        self.sent = 0
        self.read_before_reply = 0
        self.status: int | None = None
        self.body = b""

    async def receive(self) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        if self.status is not None:
            await anyio.sleep(3600)  # the reply has begun: the rest does not matter
        self.read_before_reply += 1
        if self.total is not None and self.sent >= self.total:
            await anyio.sleep(3600)  # a client that never finishes its body
        self.sent += len(self.chunk)
        return {"type": "http.request", "body": self.chunk, "more_body": True}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


def call(
    app: FastAPI, path: str, headers: dict[str, str], recorder: Recorder, method: str = "POST"
) -> Recorder:
    path = concrete(path)
    scope = {
        "type": "http",
        # 2.4: Starlette does not listen for a disconnect while it replies (that would
        # read and drop a message), so any receive before the reply is the app reading.
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }

    async def run() -> None:
        with anyio.fail_after(20):
            await app(scope, recorder.receive, recorder.send)  # type: ignore[arg-type]

    anyio.run(run)
    return recorder


@pytest.mark.parametrize(
    "auth",
    [None, "Bearer ctd_not-a-token", "Basic YWRhOnB3"],
    ids=["no-token", "unknown-token", "not-bearer"],
)
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_is_never_read_before_its_token_is_accepted(
    app: FastAPI, auth: str | None, declared: bool
) -> None:
    operations = body_operations(app)
    assert {p for _, p in operations} >= {"/v1/search", "/v1/answer", "/v1/sources"}
    assert {p for _, p in operations} >= {"/v1/sources/{source_id}/acl", "/v1/users"}
    for method, path in operations:
        headers = {"content-type": "application/json"}
        if path == "/v1/sources":
            headers = {"content-type": "multipart/form-data; boundary=b"}
        if declared:
            headers["content-length"] = str(BIG)
        if auth:
            headers["authorization"] = auth
        seen = call(app, path, headers, Recorder(), method)
        assert seen.status == 401, (path, seen.body[:300])
        assert seen.read_before_reply == 0, f"{path}: the body was read before the 401"
        assert json.loads(seen.body)["error"]["code"] == "unauthenticated"


def test_a_reader_is_refused_an_upload_before_its_body_is_read(
    app: FastAPI, library: Library
) -> None:
    headers = {
        "content-type": "multipart/form-data; boundary=b",
        "content-length": str(BIG),
        **bearer(library, "ada"),
    }
    seen = call(app, "/v1/sources", headers, Recorder())
    assert seen.status == 403 and seen.read_before_reply == 0


def test_no_v1_operation_has_a_body_fastapi_would_read_before_authenticating() -> None:
    # FastAPI reads (and parses) a declared body parameter before it solves any
    # dependency, authentication included: bodies come from a dependency instead.
    routes = [r for router in V1_ROUTERS for r in router.routes if isinstance(r, APIRoute)]
    assert len(routes) >= 6 and all(r.path.startswith("/v1/") for r in routes)
    assert [r.path for r in routes if r.body_field is not None] == []


def test_a_json_request_is_charged_to_its_user_once(tmp_path: Path) -> None:
    lib = make_library(tmp_path, rate=3)
    try:
        with TestClient(create_app(lib.services, session_secret=SECRET)) as c:
            statuses = [
                c.post("/v1/search", json=MINIMAL["/v1/search"], headers=bearer(lib, "ada"))
                for _ in range(4)
            ]
        assert [r.status_code for r in statuses] == [200, 200, 200, 429]
    finally:
        lib.services.close()


# -- the size cap --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Library, FastAPI]]:
    lib = make_library(tmp_path_factory.mktemp("small"))
    services = replace(
        lib.services,
        settings=replace(
            lib.services.settings,
            http=HttpSettings(rate_per_minute=10_000, max_json_bytes=4096),
        ),
    )
    yield lib, create_app(services, session_secret=SECRET)
    lib.services.close()


def test_a_declared_length_over_the_cap_is_413_before_reading(
    small: tuple[Library, FastAPI],
) -> None:
    lib, app = small
    for path in json_operations(app):
        headers = {
            "content-type": "application/json",
            "content-length": str(BIG),
            **bearer(lib, SENDER.get(path, "ada")),
        }
        seen = call(app, path, headers, Recorder(), method_of(app, path))
        assert seen.status == 413 and seen.read_before_reply == 0, path
        error = json.loads(seen.body)["error"]
        assert error["code"] == "too_large" and error["reason"] == "too_large"
        assert "4096-byte limit" in error["message"]


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_cap(
    small: tuple[Library, FastAPI],
) -> None:
    lib, app = small
    for path in json_operations(app):
        headers = {"content-type": "application/json", **bearer(lib, SENDER.get(path, "ada"))}
        # 1 KiB at a time, never finished: the reply comes once 4 KiB have passed.
        recorder = Recorder(chunk=b" " * 1024, total=BIG)
        seen = call(app, path, headers, recorder, method_of(app, path))
        assert seen.status == 413, (path, seen.body[:300])
        assert seen.read_before_reply <= 5 and seen.sent <= 5 * 1024


def test_bodies_within_the_cap_are_served_and_over_it_are_413(
    small: tuple[Library, FastAPI],
) -> None:
    lib, app = small
    with TestClient(app, raise_server_exceptions=False) as c:
        started = c.post(
            "/v1/conversations", json=MINIMAL["/v1/conversations"], headers=bearer(lib, "ada")
        )
        conversation_id = started.json()["conversation_id"]
        for path in json_operations(app):
            fits = json.dumps(MINIMAL[path]).encode()
            fits += b" " * (4096 - len(fits))
            method = method_of(app, path)
            url = concrete(path, lib.source_id, conversation_id)
            who = bearer(lib, SENDER.get(path, "ada"))
            ok = c.request(method, url, content=fits, headers=who)
            assert ok.status_code in (200, 201), (path, ok.text)
            over = c.request(method, url, content=fits + b" ", headers=who)
            assert over.status_code == 413 and error_of(over)["code"] == "too_large"


def test_the_default_cap_is_one_mebibyte() -> None:
    assert HttpSettings().max_json_bytes == 1024 * 1024


# -- standard JSON, strict types -----------------------------------------------------------


def _numeric_paths(schema: dict[str, Any], components: dict[str, Any]) -> list[list[str]]:
    """The paths of every integer or number property of a body schema (nested models too)."""

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = components[node["$ref"].rsplit("/", 1)[-1]]
        return node

    def types(node: dict[str, Any]) -> set[str]:
        node = resolve(node)
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        for option in node.get("anyOf", []):
            found |= types(option)
        return found

    paths: list[list[str]] = []
    for name, prop in resolve(schema).get("properties", {}).items():
        if types(prop) & {"integer", "number"}:
            paths.append([name])
        target = resolve(prop)
        if "properties" in target:
            paths.extend([name, *rest] for rest in _numeric_paths(target, components))
    return paths


def _with(body: dict[str, Any], path: list[str], value: object) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(body))
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


def test_booleans_are_not_numbers_in_any_json_body(client: TestClient, library: Library) -> None:
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    checked = []
    for path in json_operations(client.app):  # type: ignore[arg-type]
        method = method_of(client.app, path)  # type: ignore[arg-type]
        operation = schema["paths"][path][method.lower()]
        body_schema = operation["requestBody"]["content"]["application/json"]
        numeric = _numeric_paths(body_schema["schema"], components)
        url, who = concrete(path, library.source_id), bearer(library, SENDER.get(path, "ada"))
        for field in numeric:
            for value in (True, False):
                body = _with(MINIMAL[path], field, value)
                reply = client.request(method, url, json=body, headers=who)
                assert reply.status_code == 422, (path, field, reply.text)
                assert ".".join(field) in error_of(reply)["message"]
            checked.append((path, ".".join(field)))
    assert ("/v1/search", "limit") in checked
    assert ("/v1/answer", "minimum_evidence_score") in checked
    assert ("/v1/answer", "search.filters.year_min") in checked


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/v1/search", '{"query": "retry", "limit": 5, "limit": 50}'),
        ("/v1/search", '{"query": "retry", "query": "anything else"}'),
        ("/v1/search", '{"query": "retry", "filters": {"year_min": 1, "year_min": 2}}'),
        ("/v1/answer", '{"search": {"query": "a"}, "search": {"query": "b"}}'),
        ("/v1/answer", '{"search": {"query": "a", "limit": 1, "limit": 2}}'),
    ],
)
def test_duplicate_keys_are_422_at_any_depth(
    client: TestClient, library: Library, path: str, raw: str
) -> None:
    reply = client.post(
        path,
        content=raw.encode(),
        headers={"content-type": "application/json", **bearer(library, "ada")},
    )
    assert reply.status_code == 422
    error = error_of(reply)
    assert error["code"] == "invalid_request" and "duplicate key" in error["message"]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b'{"search": {"query": "a"}, "minimum_evidence_score": NaN}', "NaN is not JSON"),
        (b'{"search": {"query": "a"}, "minimum_evidence_score": Infinity}', "not JSON"),
        (b'{"search": {"query": "a"', "not valid JSON"),
        (b'{"search": {"query": "\xff"}}', "not UTF-8"),
        (b"", "not valid JSON"),
        (b"[" * 100_000, "not valid JSON"),
    ],
)
def test_non_standard_json_is_422(
    client: TestClient, library: Library, raw: bytes, needle: str
) -> None:
    reply = client.post(
        "/v1/answer",
        content=raw,
        headers={"content-type": "application/json", **bearer(library, "ada")},
    )
    assert reply.status_code == 422, reply.text
    assert needle in error_of(reply)["message"]


def test_a_body_that_is_not_json_is_refused(client: TestClient, library: Library) -> None:
    reply = client.post(
        "/v1/search",
        content=b'{"query": "retry"}',
        headers={"content-type": "text/plain", **bearer(library, "ada")},
    )
    assert reply.status_code == 422 and "application/json" in error_of(reply)["message"]
    # No content type at all is taken as JSON, as before.
    plain = client.post("/v1/search", content=b'{"query": "retry"}', headers=bearer(library, "ada"))
    assert plain.status_code == 200


# -- a real server on loopback -------------------------------------------------------------


@contextmanager
def serving(app: Any, **options: Any) -> Iterator[int]:
    """``app`` under a real uvicorn server on an ephemeral loopback port."""
    options = {k: v for k, v in options.items() if k not in ("host", "port")}
    options.setdefault("log_config", None)
    config = uvicorn.Config(app, lifespan="off", **options)
    server = uvicorn.Server(config)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 20
            while not server.started:
                assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.02)
            yield sock.getsockname()[1]
        finally:
            server.should_exit = True
            thread.join(10)


def status_after_headers(port: int, head: str, body: bytes = b"", timeout: float = 10) -> int:
    """Send a request's head and up to ``body`` of its body (never its end), stopping
    as soon as the server answers, and return the status it answers with meanwhile."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(head.encode("latin-1") + b"\r\n")
        for start in range(0, len(body), 16384):
            if select.select([conn], [], [], 0)[0]:
                break  # the reply has begun
            try:
                conn.sendall(body[start : start + 16384])
            except OSError:
                break  # the server stopped reading and closed
        reply = b""
        while b"\r\n" not in reply:
            data = conn.recv(4096)
            if not data:
                break
            reply += data
    return int(reply.split(b" ", 2)[1])


def test_over_a_real_server_a_huge_body_gets_its_answer_without_being_sent(
    tmp_path: Path,
) -> None:
    lib = make_library(tmp_path)
    try:
        app = create_app(lib.services, session_secret=SECRET)
        with serving(app, proxy_headers=False) as port:
            for path in ("/v1/search", "/v1/answer"):
                base = (
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                )
                token = f"Authorization: Bearer {lib.tokens['ada']}\r\n"
                # 100 MB announced, none sent: no token is a 401, a token is a 413.
                declared = f"Content-Length: {BIG}\r\n"
                assert status_after_headers(port, base + declared) == 401
                assert status_after_headers(port, base + declared + token) == 413
                # Chunked, with no length: 2 MiB sent of a body that never ends.
                chunked = "Transfer-Encoding: chunked\r\n"
                piece = b"".join(b"10000\r\n" + b" " * 65536 + b"\r\n" for _ in range(32))
                assert status_after_headers(port, base + chunked, piece[:65536]) == 401
                assert status_after_headers(port, base + chunked + token, piece) == 413
            # A normal request on the same server is served.
            reply = httpx.post(
                f"http://127.0.0.1:{port}/v1/search",
                json={"query": "retry budget"},
                headers=bearer(lib, "ada"),
            )
            assert reply.status_code == 200
    finally:
        lib.services.close()


# -- forwarded headers ---------------------------------------------------------------------


def test_trusted_proxies_pick_the_client_only_behind_a_trusted_peer() -> None:
    from citadel.entrypoints.http.security import TrustedProxies

    none = TrustedProxies()
    assert not none and none.client("127.0.0.1", ["203.0.113.9"]) == "127.0.0.1"
    proxies = TrustedProxies(("127.0.0.1", "10.0.0.0/8"))
    assert proxies.client("192.0.2.1", ["203.0.113.9"]) == "192.0.2.1"
    assert proxies.client("127.0.0.1", ["203.0.113.9"]) == "203.0.113.9"
    # The right-most untrusted hop: what a trusted proxy saw, not what the client wrote.
    assert proxies.client("127.0.0.1", ["6.6.6.6, 203.0.113.9, 10.1.2.3"]) == "203.0.113.9"
    assert proxies.client("127.0.0.1", ["6.6.6.6", "203.0.113.9:4711"]) == "203.0.113.9"
    assert proxies.client("127.0.0.1", ["[2001:db8::1]:443"]) == "2001:db8::1"
    assert proxies.client("127.0.0.1", []) == "127.0.0.1"


def test_the_app_ignores_forwarded_for_from_an_untrusted_peer(tmp_path: Path) -> None:
    lib = make_library(tmp_path, rate=3)
    try:
        app = create_app(lib.services, session_secret=SECRET)
        with TestClient(app, client=("127.0.0.1", 5000), raise_server_exceptions=False) as c:
            statuses = [
                c.get(
                    "/v1/sources",
                    headers={
                        "Authorization": "Bearer ctd_guess",
                        "X-Forwarded-For": f"203.0.113.{i}",
                    },
                ).status_code
                for i in range(5)
            ]
        assert statuses == [401, 401, 401, 429, 429]
    finally:
        lib.services.close()


def _guesses(port: int, count: int) -> list[int]:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        return [
            http.get(
                "/v1/sources",
                headers={"Authorization": "Bearer ctd_guess", "X-Forwarded-For": f"198.51.100.{i}"},
            ).status_code
            for i in range(count)
        ]


def test_citadel_serve_keeps_the_failed_auth_limit_however_forwarded_for_rotates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`citadel serve` itself, on a real uvicorn server on loopback: a client there
    rotating X-Forwarded-For is still one address to the limiter."""
    make_library(tmp_path / "home").services.close()
    outcomes: dict[str, list[int]] = {}

    def run(app: Any, **options: Any) -> None:
        assert options["host"] == "127.0.0.1"
        with serving(app, **options) as port:
            outcomes["statuses"] = _guesses(port, 5)

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.setattr("citadel.entrypoints.http.observability.configure_logging", lambda: None)
    env = {
        "CITADEL_HOME": str(tmp_path / "home"),
        "CITADEL_EMBEDDER": "hashing",
        "CITADEL_HTTP_RATE_LIMIT": "3",
    }
    result = CliRunner().invoke(cli_app, ["serve"], env=env)
    assert result.exit_code == 0, result.output
    assert outcomes["statuses"] == [401, 401, 401, 429, 429]

    # Configured as a trusted proxy, loopback's forwarded addresses are believed.
    outcomes.clear()
    env["CITADEL_HTTP_TRUSTED_PROXIES"] = "127.0.0.1"
    result = CliRunner().invoke(cli_app, ["serve"], env=env)
    assert result.exit_code == 0, result.output
    assert outcomes["statuses"] == [401] * 5


def test_server_options_trust_no_forwarded_headers_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citadel.entrypoints.http.app import server_options

    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")  # uvicorn's own variable is not read
    assert server_options(HttpSettings()) == {"proxy_headers": False, "forwarded_allow_ips": []}
    trusted = HttpSettings(trusted_proxies=("10.0.0.1", "192.168.0.0/16"))
    assert server_options(trusted) == {
        "proxy_headers": True,
        "forwarded_allow_ips": ["10.0.0.1", "192.168.0.0/16"],
    }
