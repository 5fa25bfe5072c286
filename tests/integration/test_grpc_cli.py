"""``citadel certs dev`` and ``citadel serve-grpc`` as an operator runs them.

The served test starts real processes — Retrieval, and Answer searching on it
(split mode) — and asks through the edge's client, as ``citadel serve
--answer-grpc`` does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from typer.testing import CliRunner

from citadel.app.answer import AnswerRequest
from citadel.bootstrap.grpc_wiring import build_answer_client
from citadel.config import Settings
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor
from citadel.entrypoints.cli import app
from tests.integration.test_cli import CLEAN_ENV


def san(cert: x509.Certificate) -> list[str]:
    extension = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return extension.value.get_values_for_type(x509.DNSName)


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_certs_dev_mints_the_ca_the_services_and_the_test_certificates(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(app, ["certs", "dev", str(tmp_path / "certs"), "--json"])
    assert outcome.exit_code == 0, outcome.stderr
    certs = tmp_path / "certs"
    ca = load(certs / "ca.crt")
    now = dt.datetime.now(dt.UTC)
    for name in ("edge-api", "answer-service", "retrieval-service"):
        cert = load(certs / f"{name}.crt")
        assert san(cert) == [name]
        assert cert.issuer == ca.subject
        cert.verify_directly_issued_by(ca)
        assert cert.not_valid_before_utc < now < cert.not_valid_after_utc
    assert san(load(certs / "test-wrong-san.crt")) == ["edge-api.intruder.invalid"]
    stranger = load(certs / "test-other-ca.crt")
    assert san(stranger) == ["edge-api"] and stranger.issuer != ca.subject
    expired = load(certs / "test-expired.crt")
    assert san(expired) == ["edge-api"] and expired.not_valid_after_utc < now
    expired.verify_directly_issued_by(ca)
    for key in certs.glob("*.key"):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    assert len(list(certs.glob("*.key"))) == 7


def test_serve_grpc_needs_a_service_to_serve(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(app, ["serve-grpc", "--certs", str(tmp_path)], env=CLEAN_ENV)
    assert outcome.exit_code == 2
    assert "--retrieval HOST:PORT, --answer HOST:PORT" in outcome.stderr


@pytest.mark.parametrize("roles", ["", "guest", "reader,guest"])
def test_serve_grpc_refuses_unknown_roles(tmp_path: Path, roles: str) -> None:
    outcome = CliRunner().invoke(
        app,
        ["serve-grpc", "--certs", str(tmp_path), "--answer", "127.0.0.1:0", "--roles", roles],
        env=CLEAN_ENV,
    )
    assert outcome.exit_code == 2
    assert "--roles takes one or more of" in outcome.stderr


def test_serve_grpc_says_which_certificate_is_missing(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(
        app,
        ["serve-grpc", "--certs", str(tmp_path), "--retrieval", "127.0.0.1:0"],
        env=CLEAN_ENV,
    )
    assert outcome.exit_code == 2
    assert "ca.crt" in outcome.stderr


NOTE = "# Capacitors\n\nThe flux capacitor workers restart one at a time after a deploy.\n"
LISTENING = re.compile(r"(citadel\.v1\.\w+) on (127\.0\.0\.1:\d+)")


def start(home: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CITADEL_", "GRPC_"))},
        "CITADEL_HOME": str(home),
        "CITADEL_TENANT": "acme",
        "CITADEL_EMBEDDER": "hashing",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "citadel", "serve-grpc", *args],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line)
        found = LISTENING.search(line)
        if found:
            return process, found.group(2)
    process.kill()
    process.wait()
    raise AssertionError("serve-grpc did not start:\n" + "".join(seen))


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture
def library(tmp_path: Path) -> tuple[Path, Path]:
    certs, home = tmp_path / "certs", tmp_path / "home"
    runner = CliRunner()
    assert runner.invoke(app, ["certs", "dev", str(certs)]).exit_code == 0
    note = tmp_path / "note.md"
    note.write_text(NOTE, encoding="utf-8")
    env = dict(CLEAN_ENV, CITADEL_TENANT="acme", CITADEL_EMBEDDER="hashing")
    ingested = runner.invoke(app, ["ingest", "--home", str(home), str(note)], env=env)
    assert ingested.exit_code == 0, ingested.stderr
    return certs, home


def handshake(certs: Path, address: str, version: ssl.TLSVersion) -> str:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = context.maximum_version = version
    context.load_verify_locations(certs / "ca.crt")
    context.load_cert_chain(certs / "answer-service.crt", certs / "answer-service.key")
    host, port = address.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="retrieval-service") as tls,
    ):
        return str(tls.version())


def add_user(home: Path, name: str) -> str:
    """``citadel users add NAME --tenant acme``; the user's token."""
    added = CliRunner().invoke(
        app,
        ["users", "add", name, "--tenant", "acme", "--json", "--home", str(home)],
        env=CLEAN_ENV,
    )
    assert added.exit_code == 0, added.stderr
    return str(json.loads(added.stdout)["token"])


def test_split_mode_across_processes(library: tuple[Path, Path]) -> None:
    certs, home = library
    # The services confirm the actor the edge asserts against the user store.
    add_user(home, "rita")
    retrieval, retrieval_at = start(home, "--certs", str(certs), "--retrieval", "127.0.0.1:0")
    try:
        # The command applies the TLS policy itself, before gRPC starts in its process.
        with pytest.raises((ssl.SSLError, ConnectionError)):
            handshake(certs, retrieval_at, ssl.TLSVersion.TLSv1_2)
        assert handshake(certs, retrieval_at, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
        answer, answer_at = start(
            home,
            *("--certs", str(certs), "--answer", "127.0.0.1:0"),
            *("--retrieval-target", retrieval_at),
        )
        try:
            edge = build_answer_client(Settings(home=home), answer_at, certs)

            async def ask() -> None:
                try:
                    request = AnswerRequest(
                        SearchRequest("How do the flux capacitor workers restart?")
                    )
                    result = await edge.answer(request, Actor("rita", "acme"))
                    assert result.answer is not None, result.degraded
                    [first, *_] = result.search.results
                    assert "one at a time" in first.passage
                finally:
                    await edge.aclose()

            asyncio.run(ask())
        finally:
            assert stop(answer) == 0
    finally:
        assert stop(retrieval) == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http(method: str, url: str, token: str = "", body: object = None) -> tuple[int, Any]:
    status, _, parsed = http_full(method, url, token, body)
    return status, parsed


def http_full(
    method: str,
    url: str,
    token: str = "",
    body: object = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, Any]:
    """One request; its status, its reply headers and its JSON body."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.headers, json.loads(reply.read())
    except urllib.error.HTTPError as failed:
        return failed.code, failed.headers, json.loads(failed.read() or b"null")


def start_edge(home: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """``citadel serve`` in its own process; returns it and its base URL once /healthz answers."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CITADEL_", "GRPC_"))},
        "CITADEL_HOME": str(home),
        "CITADEL_TENANT": "acme",
        "CITADEL_EMBEDDER": "hashing",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "citadel", "serve", "--port", str(port), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if http("GET", f"{base}/healthz")[0] == 200:
                return process, base
        except OSError:
            time.sleep(0.2)
    process.kill()
    process.wait()
    raise AssertionError(f"citadel serve did not start (exit {process.returncode})")


def test_the_http_edge_answers_through_the_answer_service(library: tuple[Path, Path]) -> None:
    """``citadel serve --answer-grpc``: three processes, as a split deployment runs."""
    certs, home = library
    added = CliRunner().invoke(
        app,
        ["users", "add", "rita", "--tenant", "acme", "--json", "--home", str(home)],
        env=CLEAN_ENV,
    )
    assert added.exit_code == 0, added.stderr
    token = json.loads(added.stdout)["token"]
    retrieval, retrieval_at = start(home, "--certs", str(certs), "--retrieval", "127.0.0.1:0")
    answer, answer_at = start(
        home, "--certs", str(certs), "--answer", "127.0.0.1:0", "--retrieval-target", retrieval_at
    )
    edge, base = start_edge(home, "--answer-grpc", answer_at, "--certs", str(certs))
    try:
        status, ready = http("GET", f"{base}/readyz")
        assert (status, ready["generator"]) == (200, "remote"), ready
        question = {"search": {"query": "How do the flux capacitor workers restart?"}}
        status, body = http("POST", f"{base}/v1/answer", token, question)
        assert status == 200, body
        assert body["answer"] is not None, body["degraded"]
        assert "one at a time" in body["search"]["results"][0]["passage"]
        citations = [c for s in body["answer"]["segments"] for c in s["citations"]]
        assert citations
        # The edge resolves the citation from the audit record the Answer service wrote.
        ref = citations[0]["ref"]
        status, resolved = http(
            "GET", f"{base}/v1/answers/{body['answer_id']}/citations/{ref}", token
        )
        assert status == 200, resolved
        assert resolved["link"]["state"] == citations[0]["link"]["state"]
        # No token, no answer: the edge authenticates before anything goes over gRPC.
        assert http("POST", f"{base}/v1/answer", "", question)[0] == 401
    finally:
        edge.send_signal(signal.SIGTERM)
        try:
            # uvicorn shuts down gracefully, then re-raises the signal it caught.
            stopped = edge.wait(timeout=20)
        finally:
            if edge.poll() is None:
                edge.kill()
            codes = (stop(answer), stop(retrieval))
    assert stopped in (0, -signal.SIGTERM)
    assert codes == (0, 0)


def stop_edge(edge: subprocess.Popen[bytes]) -> int:
    edge.send_signal(signal.SIGTERM)
    try:
        # uvicorn shuts down gracefully, then re-raises the signal it caught.
        return edge.wait(timeout=20)
    finally:
        if edge.poll() is None:
            edge.kill()


EDGE_ACCEPTED_IDS = [
    "trace:1",
    "a.b_c-d:e",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "x" * 128,
]


def test_split_mode_keeps_every_request_id_the_edge_accepts(library: tuple[Path, Path]) -> None:
    """One request-id rule for every entrypoint: what the edge accepts, the services keep."""
    certs, home = library
    token = add_user(home, "rita")
    retrieval, retrieval_at = start(home, "--certs", str(certs), "--retrieval", "127.0.0.1:0")
    answer, answer_at = start(
        home, "--certs", str(certs), "--answer", "127.0.0.1:0", "--retrieval-target", retrieval_at
    )
    edge, base = start_edge(home, "--answer-grpc", answer_at, "--certs", str(certs))
    try:
        question = {"search": {"query": "How do the flux capacitor workers restart?"}}
        for request_id in EDGE_ACCEPTED_IDS:
            status, headers, body = http_full(
                "POST", f"{base}/v1/answer", token, question, {"X-Request-ID": request_id}
            )
            assert status == 200, (request_id, body)
            assert headers["X-Request-ID"] == request_id == body["request_id"]
        # An id the edge replaces is replaced once, by the edge, and the answer still comes.
        status, headers, body = http_full(
            "POST", f"{base}/v1/answer", token, question, {"X-Request-ID": "not a valid id"}
        )
        assert status == 200, body
        assert headers["X-Request-ID"] == body["request_id"] != "not a valid id"
    finally:
        stopped = stop_edge(edge)
        codes = (stop(answer), stop(retrieval))
    assert stopped in (0, -signal.SIGTERM)
    assert codes == (0, 0)
