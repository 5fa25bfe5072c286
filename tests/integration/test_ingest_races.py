"""Parallel ingests of one book, as real processes: one source, one version, no traceback.

Reproductions of the security review's defect 4 (two ``ingest --source-id git``
at once died with ``UNIQUE constraint failed``; two ingests of one folder made
two sources; three parallel HTTP uploads made three) and defect 15 (a server
killed mid-upload left the file in the temp directory for good).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ingest import IngestOptions
from citadel.app.ports import Vectors
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.domain.source import Source
from tests.builders import operator
from tests.conftest import shared_path
from tests.integration.test_grpc_cli import start_edge

PARALLEL = 10


def environment(home: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("CITADEL_")},
        "CITADEL_HOME": str(home),
        "CITADEL_TENANT": "acme",
        "CITADEL_EMBEDDER": "hashing",
    }


def ingest_in_parallel(home: Path, *args: str) -> list[subprocess.CompletedProcess[str]]:
    command = [sys.executable, "-m", "citadel", "ingest", "--json", *args]
    processes = [
        subprocess.Popen(
            command,
            env=environment(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PARALLEL)
    ]
    done = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def stored(home: Path) -> list[tuple[str, int, int]]:
    """(source id, current version, versions stored) of each live source."""
    library = SqliteLibrary(Settings(home=home).db_path)
    try:
        return [
            (s.source_id, s.current_version, len(library.versions(s.tenant, s.source_id)))
            for s in library.list()
        ]
    finally:
        library.close()


def statuses(runs: list[subprocess.CompletedProcess[str]]) -> list[str]:
    for run in runs:
        assert "Traceback" not in run.stderr, run.stderr
        assert run.returncode == 0, run.stderr
    return sorted(json.loads(run.stdout.splitlines()[0])["status"] for run in runs)


@pytest.mark.parametrize("named", [True, False], ids=["with-source-id", "without-source-id"])
def test_parallel_ingests_of_one_book_make_one_source_and_one_version(
    tmp_path: Path, named: bool
) -> None:
    book = shared_path("books", "html", "git-user-manual", "user-manual.html")
    home = tmp_path / "home"
    runs = ingest_in_parallel(home, str(book), *(["--source-id", "git"] if named else []))
    assert statuses(runs) == ["created"] + ["unchanged"] * (PARALLEL - 1)
    [(source_id, version, versions)] = stored(home)
    assert (version, versions) == (1, 1)
    if named:
        assert source_id == "git"


def upload(base: str, token: str, data: bytes) -> tuple[int, dict[str, object]]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="book.html"\r\n'
            "Content-Type: text/html\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(f"{base}/v1/sources", data=body, method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read())


def librarian(home: Path) -> str:
    added = subprocess.run(
        [sys.executable, "-m", "citadel", "users", "add", "lib", "--role", "librarian", "--json"],
        env=environment(home),
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(added.stdout)["token"])


def test_parallel_http_uploads_of_one_file_make_one_source(tmp_path: Path) -> None:
    data = shared_path("books", "html", "git-user-manual", "user-manual.html").read_bytes()
    home = tmp_path / "home"
    token = librarian(home)
    server, base = start_edge(home)
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            replies = list(pool.map(lambda _: upload(base, token, data), range(PARALLEL)))
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert [status for status, _ in replies] == [201] * PARALLEL, replies
    found = sorted(str(body["status"]) for _, body in replies)
    assert found == ["created"] + ["unchanged"] * (PARALLEL - 1)
    assert [(v, n) for _, v, n in stored(home)] == [(1, 1)]


def test_a_server_killed_mid_upload_leaves_nothing_after_its_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    token = librarian(home)
    spool = home / "uploads"
    server, base = start_edge(home)
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    boundary = "b" * 16
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.md"\r\n'
        "Content-Type: text/markdown\r\n\r\n"
    ).encode()
    try:
        connection.putrequest("POST", "/v1/sources")
        connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        connection.putheader("Authorization", f"Bearer {token}")
        connection.putheader("Content-Length", str(len(head) + 10_000_000))
        connection.endheaders()
        connection.send(head + b"# Big\n\n" + b"words " * 100_000)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(spool.glob("*/big.md")):
            time.sleep(0.1)
        assert any(spool.glob("*/big.md")), "the upload never reached the spool"
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
    finally:
        connection.close()
    assert any(spool.glob("*/big.md"))  # what the crash left
    restarted, _ = start_edge(home)
    restarted.terminate()
    restarted.wait(timeout=30)
    assert list(spool.iterdir()) == []


class MeetingEmbedder(HashingEmbedder):
    """Holds each of two ingests between its read and its commit until both have read:
    the race of two processes, made certain instead of likely."""

    def __init__(self, meeting: threading.Barrier) -> None:
        super().__init__()
        self._meeting = meeting

    def embed(self, texts: Sequence[str]) -> Vectors:
        with contextlib.suppress(threading.BrokenBarrierError):
            self._meeting.wait(timeout=5)
        return super().embed(texts)


@pytest.mark.parametrize("source_id", ["git", None], ids=["with-source-id", "without-source-id"])
def test_two_ingests_that_both_read_before_either_commits_end_with_one_version(
    tmp_path: Path, source_id: str | None
) -> None:
    """Two libraries over one file (as two processes have); the loser decides again."""
    book = tmp_path / "book.md"
    book.write_text("# Runbook\n\n## Restarts\n\nRestart the workers one at a time.\n")
    meeting = threading.Barrier(2)
    settings = Settings(home=tmp_path / "home", embedder="hashing")
    both = [build(settings, embedder=MeetingEmbedder(meeting)) for _ in range(2)]
    options = IngestOptions(tenant=settings.tenant, source_id=source_id)
    try:
        with ThreadPoolExecutor(2) as pool:
            reports = list(
                pool.map(
                    lambda services: services.ingest.ingest(
                        services.documents.open(book), options, actor=operator(settings.tenant)
                    ),
                    both,
                )
            )
        assert not meeting.broken, "the two ingests did not both read before committing"
        assert sorted(r.status for r in reports) == ["created", "unchanged"]
        assert len({r.source_id for r in reports}) == 1
        [source] = both[0].registry.list()
        assert (
            source.current_version,
            len(both[0].registry.versions(source.tenant, source.source_id)),
        ) == (1, 1)
    finally:
        for services in both:
            services.close()


class RestrictingEmbedder(HashingEmbedder):
    """While an ingest embeds (between its read and its commit), an admin restricts
    the source through another process's services: the race the review found."""

    def __init__(self, restrict: Callable[[], None]) -> None:
        super().__init__()
        self._restrict: Callable[[], None] | None = restrict

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self._restrict is not None:
            restrict, self._restrict = self._restrict, None
            restrict()
        return super().embed(texts)


def test_an_acl_change_made_while_an_ingest_runs_is_not_lost(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text("# Runbook\n\nRestart the workers one at a time.\n")
    settings = Settings(home=tmp_path / "home", embedder="hashing")
    admin = build(settings)
    tenant = settings.tenant
    first = admin.ingest.ingest(
        admin.documents.open(book),
        IngestOptions(tenant=tenant, acl_groups=frozenset({"ops"})),
        actor=operator(tenant),
    )
    book.write_text(book.read_text() + "\nDrain the queue first.\n")

    def restrict() -> None:
        admin.library.set_acl(first.source_id, ["board"], operator(tenant))

    writer = build(settings, embedder=RestrictingEmbedder(restrict))
    try:
        report = writer.ingest.ingest(
            writer.documents.open(book), IngestOptions(tenant=tenant), actor=operator(tenant)
        )
        assert (report.status, report.version) == ("updated", 2)
        source = admin.registry.get(tenant, first.source_id)
        assert source is not None
        assert source.acl_groups == frozenset({"board"}), "the restriction was overwritten"
    finally:
        writer.close()
        admin.close()


def test_an_unchanged_reingest_racing_a_delete_is_decided_again(tmp_path: Path) -> None:
    """The unchanged path writes a move; a delete in between made it a KeyError."""
    book, moved = tmp_path / "a.md", tmp_path / "b.md"
    book.write_text("# Runbook\n\nRestart the workers one at a time.\n")
    settings = Settings(home=tmp_path / "home", embedder="hashing")
    services = build(settings)
    actor = operator(settings.tenant)
    try:
        first = services.ingest.ingest(
            services.documents.open(book), IngestOptions(tenant=settings.tenant), actor=actor
        )
        moved.write_text(book.read_text())
        registry = services.registry
        real_update = registry.update

        def delete_then_update(source: Source) -> None:
            services.library.delete(first.source_id, actor)
            registry.update = real_update  # type: ignore[method-assign]
            real_update(source)

        registry.update = delete_then_update  # type: ignore[method-assign]
        report = services.ingest.ingest(
            services.documents.open(moved), IngestOptions(tenant=settings.tenant), actor=actor
        )
        # Decided again: the source is gone, so the same text is a new source.
        assert report.status == "created" and report.source_id != first.source_id
    finally:
        services.close()
