"""PostgreSQL stopped and restarted under load, behind a real HTTP server on loopback.

A server of its own (the fixture's machinery, ``tests/postgres.py``) so stopping it
disturbs no other test. Four clients ask and search without pause while a writer
ingests notes; the database is stopped with ``pg_ctl`` (fast shutdown) for a few
seconds and started again. While it is down every reply is a 200 (a request that
waited in the pool until the database came back) or a 503 ``database_unavailable``
with the fixed message, never a 500, and ``/readyz`` says 503 with the database
unreachable; after the restart the same process answers again without a restart.
Afterwards nothing is half-written (every version's chunks all there, lexical rows
exactly for the current versions) and the audit chain is intact, holding exactly
the answers that were returned with a 200.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest

from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.config import HttpSettings, Settings
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests import postgres
from tests.builders import operator
from tests.http.conftest import BOOK, QUESTION, SECRET, serving

QUESTIONS = (
    QUESTION,
    "What does a circuit breaker do after repeated failures?",
    "How do the flux capacitor workers restart after a deploy?",
    "When do probes close the circuit again?",
)
DOWN_S = 4.0


class OwnServer:
    """A PostgreSQL server started for this module, which the test may stop and start."""

    def __init__(self) -> None:
        if os.environ.get(postgres.URL_ENV):
            pytest.skip("an external PostgreSQL (CITADEL_TEST_PG_URL) cannot be stopped here")
        try:
            self.server = postgres.start()
        except postgres.Unavailable as error:
            pytest.skip(f"no PostgreSQL server: {error}")
        root = self.server._stop_dir
        assert root is not None and self.server._bin_dir is not None
        self.root = root
        self.bin = self.server._bin_dir

    def ctl(self, *args: str) -> None:
        command = [str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), *args]
        postgres._run(command, self.server._user)

    def stop_database(self) -> None:
        self.ctl("-m", "fast", "-w", "stop")

    def start_database(self) -> None:
        # As tests/postgres.py starts it: socket only, in the directory the user owns.
        options = f"-k {self.root} -c listen_addresses='' -F -c max_connections=200"
        self.ctl("-o", options, "-w", "-l", str(self.root / "server.log"), "start")


@dataclass
class Outcome:
    at: float
    path: str
    status: int
    code: str = ""
    message: str = ""
    answer_id: str = ""


@dataclass
class Load:
    base: str
    token: str
    outcomes: list[Outcome] = field(default_factory=list)
    ingest_errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, number: int) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.base, timeout=30, headers=headers) as http:
            for turn in itertools.count():
                if self.stop.is_set():
                    return
                # A new question each turn: every answer is generated and audited. No
                # term of two tokens (a hyphen): a phrase read races the writer's
                # generations and may give up (reported; not what this test is about).
                question = f"{QUESTIONS[(number + turn) % len(QUESTIONS)]} q{number}x{turn}"
                body: dict[str, object] = {"query": question}
                path = "/v1/search"
                if turn % 2 == 0:
                    path, body = "/v1/answer", {"search": body}
                reply = http.post(path, json=body)
                data = reply.json()
                error = data.get("error") or {}
                outcome = Outcome(
                    time.monotonic(),
                    path,
                    reply.status_code,
                    error.get("code", ""),
                    error.get("message", ""),
                    data.get("answer_id") or "" if reply.status_code == 200 else "",
                )
                with self.lock:
                    self.outcomes.append(outcome)

    def writer(self, services: Services, home: Path) -> None:
        for turn in itertools.count():
            if self.stop.is_set():
                return
            note = home / f"note-{turn}.md"
            note.write_text(f"# Note {turn}\n\nLoad note number {turn} of the test.\n" * 3)
            try:
                services.ingest.ingest(
                    services.documents.open(note),
                    IngestOptions(tenant="default"),
                    actor=operator("default"),
                )
            except Exception as exc:  # the database is down: the ingest must not half-write
                self.ingest_errors.append(type(exc).__name__)
                time.sleep(0.2)


@pytest.fixture(scope="module")
def own() -> Iterator[OwnServer]:
    server = OwnServer()
    yield server
    server.server.stop()


def test_database_stopped_and_restarted_under_load(own: OwnServer, tmp_path: Path) -> None:
    url = own.server.fresh_database()
    home = tmp_path / "home"
    settings = Settings(
        home=home, db=url, embedder="hashing", http=HttpSettings(rate_per_minute=1_000_000)
    )
    services = build(settings, serving=True)
    try:
        book = home / "reliable.md"
        book.write_text(BOOK, encoding="utf-8")
        services.ingest.ingest(
            services.documents.open(book),
            IngestOptions(tenant="default"),
            actor=operator("default"),
        )
        _, token = services.users.add("ada", Role.READER, "default")
        with serving(create_app(services, session_secret=SECRET)) as base:
            load = Load(base, token)
            threads = [threading.Thread(target=load.client, args=(n,)) for n in range(4)]
            threads.append(threading.Thread(target=load.writer, args=(services, home)))
            for thread in threads:
                thread.start()
            try:
                # Load before the stop: the first answers may take seconds on a busy machine.
                started = _wait_for_200(load, 0.0, 60.0)
                time.sleep(1.0)
                down_at = time.monotonic()
                own.stop_database()
                time.sleep(DOWN_S / 2)
                ready_down = httpx.get(f"{base}/readyz", timeout=10)
                time.sleep(DOWN_S / 2)
                own.start_database()
                up_at = time.monotonic()
                recovered = _wait_for_200(load, up_at, 20.0)
                time.sleep(1.0)
            finally:
                load.stop.set()
                for thread in threads:
                    thread.join(60)
            ready_up = httpx.get(f"{base}/readyz", timeout=10)
    finally:
        services.close()

    assert ready_down.status_code == 503, ready_down.text
    assert ready_down.json()["store"] == "unreachable"
    assert ready_down.json()["database"] == "postgresql"
    assert ready_up.status_code == 200 and ready_up.json()["database"] == "postgresql"

    outcomes = load.outcomes
    assert {o.status for o in outcomes} <= {200, 503}, [o for o in outcomes if o.status >= 500]
    refused = [o for o in outcomes if o.status == 503]
    assert refused, "no request saw the database down"
    for outcome in refused:
        assert outcome.code == "database_unavailable", outcome
        assert outcome.message == "the database cannot be reached: try again shortly"
        assert outcome.at >= down_at
    assert started is not None and started < down_at, "no load before the stop"
    # Recovered without a restart: after the first success, every request succeeds.
    assert recovered is not None, "no 200 within 20 s of the restart"
    assert all(o.status == 200 for o in outcomes if o.at > recovered + 0.5)
    assert sum(o.status == 200 for o in outcomes if o.at > recovered) >= 4
    answered = {o.answer_id for o in outcomes if o.path == "/v1/answer" and o.status == 200}
    _check_consistent(url, answered, home)


def _wait_for_200(load: Load, after: float, within_s: float) -> float | None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        with load.lock:
            found = [o.at for o in load.outcomes if o.at > after and o.status == 200]
        if found:
            return min(found)
        time.sleep(0.05)
    return None


def _check_consistent(url: str, answered: set[str], home: Path) -> None:
    with psycopg.connect(url) as conn:
        torn = conn.execute(
            "SELECT v.source_id, v.version, v.chunk_count, count(c.rowid)"
            " FROM source_versions v LEFT JOIN chunks c USING (tenant, source_id, version)"
            " GROUP BY v.tenant, v.source_id, v.version, v.chunk_count"
            " HAVING count(c.rowid) <> v.chunk_count"
        ).fetchall()
        assert torn == [], f"versions whose chunks are not all there: {torn}"
        lexical = conn.execute(
            "SELECT (SELECT count(*) FROM lexical),"
            " (SELECT count(*) FROM chunks c JOIN sources s USING (tenant, source_id)"
            "  WHERE NOT s.deleted AND c.version = s.current_version)"
        ).fetchone()
        assert lexical is not None and lexical[0] == lexical[1]
        stored = {row[0] for row in conn.execute("SELECT answer_id FROM audit_log")}
    # Every answer returned is in the chain; an append whose reply was lost may be too.
    assert answered <= stored
    settings = Settings(home=home, db=url, embedder="hashing")
    services = build(settings)
    try:
        report = services.audit.verify()
    finally:
        services.close()
    assert report.intact, report.problems
    assert report.records == len(stored) >= len(answered) > 0
