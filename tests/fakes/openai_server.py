"""A real OpenAI-compatible HTTP server on 127.0.0.1, scripted per test.

Not a mocked client: the adapter under test opens real TCP connections. Each
request takes the next scripted ``Reply`` (the last one repeats) and is
recorded; a scripted ``Responder`` writes its reply from the request it got. A
reply can wait before its headers, trickle its body, or stream any number of
filler bytes — produced lazily, so a 48 MiB body is never built.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_BLOCK = b"x" * 65536
PATH = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    """Wait this long before sending the status line."""
    stream_bytes: int = 0
    """Send this many filler bytes instead of ``body``."""
    chunked: bool = False
    """Frame the body with chunked transfer encoding instead of a Content-Length."""
    trickle_s: float = 0.0
    """Send the body 16 bytes at a time, pausing this long between pieces."""

    def size(self) -> int:
        return self.stream_bytes or len(self.body)

    def pieces(self) -> Iterator[bytes]:
        if self.stream_bytes:
            left = self.stream_bytes
            while left > 0:
                piece = _BLOCK if left >= len(_BLOCK) else _BLOCK[:left]
                left -= len(piece)
                yield piece
        elif self.trickle_s:
            for start in range(0, len(self.body), 16):
                yield self.body[start : start + 16]
        elif self.body:
            yield self.body


def completion(
    content: str | None,
    *,
    finish_reason: str | None = "stop",
    status: int = 200,
    **message: object,
) -> Reply:
    """A chat completion whose assistant message has ``content`` (and any extra fields)."""
    envelope = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }
    return Reply(status=status, body=json.dumps(envelope).encode("utf-8"))


def answer(payload: object) -> Reply:
    """A completion whose content is ``payload`` as JSON text."""
    return completion(json.dumps(payload, ensure_ascii=False))


def error(status: int, message: str, **extra: object) -> Reply:
    body = {"error": {"message": message, "type": "invalid_request_error", **extra}}
    return Reply(status=status, body=json.dumps(body).encode("utf-8"))


@dataclass(frozen=True, slots=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Responder = Callable[[Received], Reply]
"""A reply that depends on the request: a fake model that reads what it was sent."""


@dataclass
class FakeOpenAIServer:
    """Serves scripted replies on an ephemeral loopback port until stopped."""

    requests: list[Received] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    _script: list[Reply | Responder] = field(default_factory=lambda: [Reply(status=503)])
    _served: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: _Server | None = None
    _thread: threading.Thread | None = None
    tls: ssl.SSLContext | None = None
    """Serve https with this server-side context instead of plain http."""

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply | Responder) -> None:
        with self._lock:
            self._script = list(replies)
            self._served = 0

    def next_reply(self) -> Reply | Responder:
        with self._lock:
            reply = self._script[min(self._served, len(self._script) - 1)]
            self._served += 1
            return reply

    def record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def start(self) -> None:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        if self.tls is not None:
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


@contextmanager
def running_server(tls: ssl.SSLContext | None = None) -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(tls=tls)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAIServer

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        exc = sys.exc_info()[1]
        # A client that hangs up mid-body (the point of several tests), or refuses the
        # certificate, is not a failure of the server.
        if exc is not None and not isinstance(exc, (ConnectionError, ssl.SSLError)):
            self.fake.errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        self._respond(Reply(status=404, body=b'{"error": {"message": "not found"}}'))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        fake = self.server.fake
        received = Received(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        fake.record(received)
        scripted = fake.next_reply()
        reply = scripted if isinstance(scripted, Reply) else scripted(received)
        if self.path != PATH:
            reply = Reply(status=404, body=b'{"error": {"message": "no such path"}}')
        self._respond(reply)

    def _respond(self, reply: Reply) -> None:
        stopping = self.server.fake.stopping
        self.close_connection = True
        if reply.delay_s and stopping.wait(reply.delay_s):
            return
        try:
            self.send_response(reply.status)
            if reply.content_type is not None:
                self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header("Connection", "close")
            if reply.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(reply.size()))
            self.end_headers()
            for piece in reply.pieces():
                if reply.trickle_s and stopping.wait(reply.trickle_s):
                    return
                if reply.chunked:
                    self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                else:
                    self.wfile.write(piece)
            if reply.chunked:
                self.wfile.write(b"0\r\n\r\n")
        except ConnectionError:
            return
