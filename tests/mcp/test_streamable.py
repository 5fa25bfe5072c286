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
