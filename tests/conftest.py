"""Shared fixtures. Tests that need ../shared skip with a message saying so when it is absent."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from citadel.adapters.grpc.tls import restrict_handshakes_to_tls13
from tests import postgres
from tests.postgres import postgres_url

# gRPC's core reads its TLS policy once, when it is loaded: apply it before any test
# module imports grpc, as `citadel serve-grpc` does before it starts the servers.
restrict_handshakes_to_tls13()

# A command run without --home or CITADEL_HOME uses the per-user data directory
# (XDG_DATA_HOME on Linux): the suite's, so no test reads or writes the developer's
# own library, and the subprocesses the tests start inherit it.
_USER_DATA = tempfile.mkdtemp(prefix="citadel-tests-xdg-")
os.environ["XDG_DATA_HOME"] = _USER_DATA
os.environ.pop("CITADEL_HOME", None)
atexit.register(shutil.rmtree, _USER_DATA, ignore_errors=True)

__all__ = ["postgres_url"]  # the fixture: a fresh PostgreSQL database (tests/postgres.py)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    postgres.stop()  # the session's server, if a test started one


ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BOOKS = SHARED / "books"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test saying that ../shared is needed."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/{'/'.join(parts)} (the shared books and data); CI has it")
    return path


@pytest.fixture
def r_intro() -> Path:
    return shared_path("books", "pdf", "R-intro.pdf")
