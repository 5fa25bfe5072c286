"""The HTTP side of the adapter: where requests go, how they travel, what comes back.

The endpoint is checked once (http only to loopback, no credentials in the URL);
each exchange runs inside the caller's deadline, sends the key only as a header,
follows no redirect, reads at most the response cap (an error body only far
enough to see what it names), retries once after 429 or 5xx when the deadline
allows, and translates httpx's errors into the adapter's at this edge.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import logging
import random
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

import httpx

from citadel.adapters.generators.contract.errors import (
    GeneratorConfigError,
    InvalidProviderOutput,
    ProviderStatusError,
    ProviderTimeout,
    ProviderUnavailable,
)
from citadel.domain.integers import declared_over
from citadel.domain.secrets import SecretStr

__all__ = [
    "BorrowedTransport",
    "Endpoint",
    "Reply",
    "Wire",
    "is_loopback",
    "names_json_mode",
    "parse_endpoint",
    "raise_status",
    "refuses_json_mode",
    "tls_context",
]

# One logger for the package, named as the module was before it became one.
log = logging.getLogger(__package__)

_JSON_MODE_WORDS = ("response_format", "json_schema", "json_object", "json mode")
_ERROR_SNIFF_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: httpx.Headers
    body: bytes
    attempts: int = 1
    retry_refused: str = ""


class BorrowedTransport(httpx.AsyncBaseTransport):
    """Lends a caller's transport to a short-lived client without letting it be closed."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None


class Wire:
    """Exchanges with one chat-completions endpoint, every one inside the caller's deadline."""

    def __init__(
        self,
        endpoint: Endpoint,
        api_key: SecretStr,
        *,
        deadline_s: float,
        max_response_bytes: int,
        verify: ssl.SSLContext | bool,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._api_key = api_key
        self._deadline_s = deadline_s
        self._max_response_bytes = max_response_bytes
        self._verify = verify
        self._transport = BorrowedTransport(transport) if transport is not None else None

    def client(self) -> httpx.AsyncClient:
        """A client for one generation: the service may run each request in its own loop."""
        return httpx.AsyncClient(
            transport=self._transport,
            verify=self._verify,
            trust_env=False,  # no proxies or .netrc picked up from the environment
            follow_redirects=False,  # a redirect must not carry the key elsewhere
        )

    async def call(
        self, client: httpx.AsyncClient, body: bytes, deadline: float, *, json_mode: bool
    ) -> Reply:
        """One exchange, and at most one retry after 429 or 5xx when the deadline allows."""
        reply = await self._exchange(client, body, deadline)
        if reply.status != 429 and not 500 <= reply.status <= 599:
            return reply
        if json_mode and names_json_mode(reply):
            return reply  # a refusal of JSON mode, answered as a server error: not transient
        remaining = deadline - asyncio.get_running_loop().time()
        # Leave the retry time to connect and read, or it is not worth making.
        reserve = min(1.0, self._deadline_s / 4)
        jitter = random.uniform(0.0, min(0.25, remaining / 20))  # noqa: S311 - jitter, not crypto
        wait = _retry_after(reply.headers)
        if wait is None:
            wait = random.uniform(0.05, 0.25)  # noqa: S311 - jitter, not crypto
        if wait + jitter + reserve > remaining:
            return Reply(
                reply.status,
                reply.headers,
                reply.body,
                retry_refused=f"the retry wait of {wait:g} s does not fit the deadline",
            )
        await asyncio.sleep(wait + jitter)
        again = await self._exchange(client, body, deadline)
        return Reply(again.status, again.headers, again.body, attempts=2)

    async def _exchange(self, client: httpx.AsyncClient, body: bytes, deadline: float) -> Reply:
        remaining = max(0.001, deadline - asyncio.get_running_loop().time())
        timeout = httpx.Timeout(
            connect=min(remaining, max(1.0, self._deadline_s / 4)),
            read=remaining,
            write=remaining,
            pool=remaining,
        )
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            # Compressed bodies could expand past the cap inside one decoded chunk.
            "Accept-Encoding": "identity",
            "User-Agent": "citadel",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        started = time.monotonic()
        try:
            async with client.stream(
                "POST", self._endpoint.url, content=body, headers=headers, timeout=timeout
            ) as response:
                if response.status_code == 200:
                    data = await _read_capped(response, self._max_response_bytes)
                else:
                    data = await _read_head(response, _ERROR_SNIFF_BYTES)
        except httpx.ConnectTimeout as exc:
            raise ProviderUnavailable(
                "connect_timeout", f"no connection to {self._endpoint.host} in time"
            ) from exc
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                "timeout", f"no complete answer within {self._deadline_s:g} s"
            ) from exc
        except httpx.ConnectError as exc:
            raise ProviderUnavailable(
                "connect", f"cannot connect to {self._endpoint.host}: {_first_line(exc)}"
            ) from exc
        except httpx.HTTPError as exc:
            # Not chained: an unforeseen transport error might quote the request it failed on.
            raise ProviderUnavailable(
                "transport", f"{type(exc).__name__} talking to {self._endpoint.host}"
            ) from None
        log.debug(
            "chat completion: HTTP %d, %d bytes, %.3f s",
            response.status_code,
            len(data),
            time.monotonic() - started,
        )
        return Reply(response.status_code, response.headers, data)


# -- configuration -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    scheme: str
    host: str


def parse_endpoint(base_url: str) -> Endpoint:
    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise GeneratorConfigError("the LLM base URL is malformed") from None
    if parts.scheme not in ("http", "https") or not host:
        raise GeneratorConfigError("the LLM base URL must be http(s)://host[:port]/path")
    if parts.username is not None or parts.password is not None:
        raise GeneratorConfigError(
            "the LLM base URL must not carry credentials; use CITADEL_LLM_API_KEY"
        )
    if parts.query or parts.fragment:
        raise GeneratorConfigError("the LLM base URL must not have a query or fragment")
    if parts.scheme == "http" and not is_loopback(host):
        raise GeneratorConfigError(
            f"plain http is allowed only to loopback hosts; use https for {host!r}"
        )
    url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/chat/completions"
    return Endpoint(url=url, scheme=parts.scheme, host=host)


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or ``localhost``; nothing that merely resolves there today."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_context(ca_file: Path | str | None) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    except (OSError, ssl.SSLError) as exc:
        raise GeneratorConfigError(f"cannot load the CA file {ca_file}: {exc}") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


# -- reading and status ----------------------------------------------------------------


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """The whole body, read incrementally; past ``limit`` the stream is abandoned."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise InvalidProviderOutput(
            "unexpected_encoding", "the response is compressed though identity was asked for"
        )
    declared = response.headers.get("content-length", "")
    if declared_over(declared, limit):
        raise InvalidProviderOutput(
            "oversized_response", f"the response declares more than {limit} bytes"
        )
    buffer = bytearray()
    async for chunk in response.aiter_raw():
        buffer += chunk
        if len(buffer) > limit:
            raise InvalidProviderOutput(
                "oversized_response", f"the response is over the {limit}-byte cap"
            )
    return bytes(buffer)


async def _read_head(response: httpx.Response, limit: int) -> bytes:
    """The start of an error body, enough to see what it names; the rest is dropped."""
    buffer = bytearray()
    async for chunk in response.aiter_raw():
        buffer += chunk
        if len(buffer) >= limit:
            break
    return bytes(buffer[:limit])


def names_json_mode(reply: Reply) -> bool:
    text = reply.body.decode("utf-8", "replace").lower()
    return any(word in text for word in _JSON_MODE_WORDS)


def refuses_json_mode(reply: Reply) -> bool:
    """A refusal of the response format asked for: a 400/422 naming it, or a 5xx naming it.

    llama-cpp-python's server (0.3.x) answers an unsupported ``json_schema``
    with HTTP 500 and a validation message naming ``response_format``.
    """
    refusing = reply.status in (400, 422) or 500 <= reply.status <= 599
    return refusing and names_json_mode(reply)


def raise_status(reply: Reply) -> NoReturn:
    # The body is never quoted: providers echo requests, and requests hold the passages.
    status = reply.status
    reason = "rate_limited" if status == 429 else "http_status"
    message = f"the provider answered HTTP {status}"
    if reply.attempts > 1:
        message += " again after one retry"
    elif reply.retry_refused:
        message += f"; not retried: {reply.retry_refused}"
    if status in (401, 403):
        message += " (check CITADEL_LLM_API_KEY)"
    elif status == 404:
        message += " (check CITADEL_LLM_BASE_URL and CITADEL_LLM_MODEL)"
    raise ProviderStatusError(reason, message, status)


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``Retry-After`` (delta-seconds or an HTTP date); None if absent."""
    raw = headers.get("retry-after", "").strip()
    if not raw:
        return None
    if raw.isdigit():
        return float(raw)
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]
