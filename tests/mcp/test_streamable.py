"""``/mcp`` in process: only authenticated HTTP reaches the MCP transport."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.users import Role
from citadel.entrypoints.cli.serve import http_app


def test_a_websocket_is_closed_and_http_needs_a_token(tmp_path: Path) -> None:
    services = build(Settings(home=tmp_path, embedder="hashing"))
    try:
        _, token = services.users.add("ada", Role.READER, "default")
        with TestClient(http_app(services), raise_server_exceptions=False) as client:
            # The route takes HTTP only (and McpHttp closes any other scope it is given).
            with pytest.raises(WebSocketDisconnect), client.websocket_connect("/mcp"):
                pass
            assert client.post("/mcp", json={}).status_code == 401
            listed = client.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
            assert listed.status_code == 200, listed.text
            names = {tool["name"] for tool in listed.json()["result"]["tools"]}
            assert names == {"search", "ask", "get_passage"}
    finally:
        services.close()


def test_only_post_reaches_the_transport_so_no_event_stream_is_held_open(tmp_path: Path) -> None:
    # The SDK answers GET with an event stream that never ends: one reader token held
    # hundreds open (a hostile review). Stateless JSON mode needs none of it.
    services = build(Settings(home=tmp_path, embedder="hashing"))
    try:
        _, token = services.users.add("ada", Role.READER, "default")
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        with TestClient(http_app(services), raise_server_exceptions=False) as client:
            for method in ("GET", "DELETE", "PUT", "PATCH"):
                reply = client.request(method, "/mcp", headers=headers)
                assert reply.status_code == 405, (method, reply.text)
                assert reply.headers["allow"] == "POST"
                assert reply.headers["content-type"] == "application/json"
                assert reply.json()["error"]["code"] == "method_not_allowed"
    finally:
        services.close()


def test_two_authorization_headers_are_refused_before_the_transport(tmp_path: Path) -> None:
    services = build(Settings(home=tmp_path, embedder="hashing"))
    try:
        _, token = services.users.add("ada", Role.READER, "default")
        headers = [
            ("Authorization", f"Bearer {token}"),
            ("Authorization", "Bearer ctd_someone-else"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ]
        with TestClient(http_app(services), raise_server_exceptions=False) as client:
            reply = client.post(
                "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
            )
            assert reply.status_code == 401, reply.text
            assert "one Authorization header" in reply.json()["error"]["message"]
    finally:
        services.close()
