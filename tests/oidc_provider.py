"""A real OpenID provider on loopback for the sign-in tests: oidc-provider-mock (MIT,
built on authlib), a maintained provider package run as its own server process
(``python -m oidc_provider_mock``) — discovery, signing keys, the authorization
code grant, nonces required.

``Provider.authorize`` plays the person at the provider's sign-in form: it
posts the subject the form asks for and returns where the provider sends the
browser back. ``Provider.claims`` sets what the provider says about a subject.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx

START_S = 30.0

CLIENT_ID = "citadel-tests"
CLIENT_SECRET = "a-secret-the-provider-accepts"


@dataclass
class Provider:
    issuer: str

    def claims(self, subject: str, **claims: object) -> None:
        reply = httpx.put(f"{self.issuer}/users/{subject}", json=claims, timeout=10)
        assert reply.status_code == 204, reply.text

    def authorize(self, authorization_url: str, subject: str) -> str:
        """The callback URL (with code and state) the provider redirects to once
        ``subject`` signs in at its form."""
        reply = httpx.post(authorization_url, data={"sub": subject}, timeout=10)
        assert reply.status_code in (302, 303), reply.text[:500]
        return reply.headers["location"]


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_provider(host: str = "127.0.0.1") -> Iterator[Provider]:
    """The provider on a free loopback port; ``host`` is the name it is reached by (and
    its issuer's): ``localhost`` puts it on another site than a server on 127.0.0.1,
    as a real provider is, so a browser treats its redirects as cross-site."""
    port = _free_port()
    issuer = f"http://{host}:{port}"
    # Its own process: the package still uses authlib APIs that warn, which this
    # test process (-W error) would turn into failed requests.
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed below, after the process
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oidc_provider_mock",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--require-nonce",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                if httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2).is_success:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                _, err = (
                    process.communicate(timeout=5) if process.poll() is not None else (b"", b"")
                )
                raise RuntimeError(f"the OpenID provider did not start: {err.decode()[-2000:]}")
            time.sleep(0.1)
        yield Provider(issuer)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
