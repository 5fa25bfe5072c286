"""What the error handler logs: a failure at ERROR with its traceback; an expected
refusal (a reader past its limits, 429; a full render queue, 503 ``render_busy``)
only as the request's access line."""

from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from citadel.app.errors import RenderBusy, ServiceUnavailable
from citadel.entrypoints.http import handlers
from citadel.entrypoints.http.errors import RateLimited

RAISED: dict[str, Exception] = {
    "busy": RenderBusy(2),
    "limited": RateLimited(3),
    "down": ServiceUnavailable("the search service is down"),
}


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    handlers.install(app)

    @app.get("/{name}")
    def fail(name: str) -> None:
        raise RAISED[name]

    return TestClient(app)


def errors_logged(
    client: TestClient, caplog: pytest.LogCaptureFixture, name: str
) -> tuple[int, list[logging.LogRecord]]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="citadel.http"):
        status = client.get(f"/{name}").status_code
    return status, [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_full_render_queue_is_logged_like_a_rate_limit_not_as_a_failure(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    assert errors_logged(client, caplog, "limited") == (429, [])
    assert errors_logged(client, caplog, "busy") == (503, [])
    status, logged = errors_logged(client, caplog, "down")
    assert status == 503
    assert [(r.levelname, r.exc_info is not None) for r in logged] == [("ERROR", True)]
