"""The adapter: ``OpenAICompatibleGenerator`` behind the AnswerGenerator port.

It asks for a strict ``json_schema``; a provider that refuses it (HTTP 400, 422
or 5xx naming ``response_format``) is asked for ``json_object`` with the schema,
then plain ``json_object``; one that refuses JSON mode entirely, or answers JSON
mode with prose, is asked once for two lines. What it refused once it will refuse
again, so later calls start from the format that worked.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx

from citadel.adapters.generators.contract.decode import parse_strict_json, parse_two_line
from citadel.adapters.generators.contract.errors import (
    GeneratorConfigError,
    InvalidProviderOutput,
    ProviderStatusError,
    ProviderTimeout,
)
from citadel.adapters.generators.contract.prompt import (
    PROMPT_SHA256,
    PROMPT_VERSION,
    TWO_LINE_PROMPT_SHA256,
)
from citadel.adapters.generators.openai.envelope import message_content
from citadel.adapters.generators.openai.request import FALLBACK, Mode, request_body
from citadel.adapters.generators.openai.wire import (
    Reply,
    Wire,
    parse_endpoint,
    raise_status,
    refuses_json_mode,
    tls_context,
)
from citadel.domain.answer import Candidate, GenerationRequest
from citadel.domain.secrets import SecretStr

__all__ = ["OpenAICompatibleGenerator"]

# One logger for the package, named as the module was before it became one.
log = logging.getLogger(__package__)


class OpenAICompatibleGenerator:
    """Candidates from a chat-completions endpoint, every call inside ``deadline_s``."""

    name = "openai"
    quotes = False

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: SecretStr | None = None,
        *,
        ca_file: Path | str | None = None,
        deadline_s: float = 30.0,
        max_request_bytes: int = 128 * 1024,
        max_response_bytes: int = 128 * 1024,
        max_output_tokens: int | None = None,
        two_line_fallback: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        endpoint = parse_endpoint(base_url)
        if not model.strip():
            raise GeneratorConfigError("a model name is required (CITADEL_LLM_MODEL)")
        if not deadline_s > 0:
            raise GeneratorConfigError("deadline_s must be positive")
        if max_request_bytes < 1024 or max_response_bytes < 1024:
            raise GeneratorConfigError("request and response caps must be at least 1 KiB")
        if max_output_tokens is not None and max_output_tokens < 1:
            raise GeneratorConfigError("max_output_tokens must be at least 1")
        key = api_key.get_secret_value() if api_key is not None else ""
        if any(not "!" <= char <= "~" for char in key):
            # Caught here, before an HTTP library quotes the bad header value in its error.
            raise GeneratorConfigError(
                "the API key holds whitespace or characters an HTTP header cannot carry"
            )
        self._host = endpoint.host
        self._model = model
        self._deadline_s = deadline_s
        self._max_request_bytes = max_request_bytes
        self._max_output_tokens = max_output_tokens
        self._two_line_fallback = two_line_fallback
        self._wire = Wire(
            endpoint,
            api_key or SecretStr(""),
            deadline_s=deadline_s,
            max_response_bytes=max_response_bytes,
            verify=tls_context(ca_file) if endpoint.scheme == "https" else False,
            transport=transport,
        )
        # What the provider refused once it will refuse again: later calls skip the round trip.
        self._mode: Mode = "json_schema"

    @property
    def model(self) -> str:
        return self._model

    @property
    def prompt_version(self) -> str:
        return PROMPT_VERSION

    @property
    def prompt_sha256(self) -> str:
        return PROMPT_SHA256

    def __repr__(self) -> str:
        return f"OpenAICompatibleGenerator(host={self._host!r}, model={self._model!r})"

    async def generate(self, request: GenerationRequest) -> Candidate:
        """A decoded candidate, or a ``GeneratorError``; never later than ``deadline_s``."""
        deadline = asyncio.get_running_loop().time() + self._deadline_s
        try:
            async with asyncio.timeout_at(deadline):
                return await self._generate(request, deadline)
        except ProviderTimeout:
            raise
        except TimeoutError:
            raise ProviderTimeout(
                "timeout", f"no complete answer within {self._deadline_s:g} s"
            ) from None

    async def _generate(self, request: GenerationRequest, deadline: float) -> Candidate:
        mode = self._mode
        prose_retry = self._two_line_fallback
        # A client per call: the service may run each request in its own event loop.
        async with self._wire.client() as client:
            while True:
                body = request_body(
                    request,
                    mode,
                    model=self._model,
                    max_output_tokens=self._max_output_tokens,
                    max_request_bytes=self._max_request_bytes,
                )
                reply = await self._wire.call(client, body, deadline, json_mode=mode != "two_line")
                if _refuses_json_mode(reply, mode):
                    following = FALLBACK[mode]
                    if following == "two_line" and not self._two_line_fallback:
                        raise ProviderStatusError(
                            "refused_json_mode",
                            f"the provider refused JSON mode (HTTP {reply.status})",
                            reply.status,
                        )
                    log.info("provider refused %s; asking for %s", mode, following)
                    self._mode = mode = following
                    continue
                if reply.status != 200:
                    raise_status(reply)
                content = message_content(reply)
                if mode == "two_line":
                    payload: object = parse_two_line(content)
                elif content.lstrip()[:1] in ("{", "["):
                    payload = parse_strict_json(content, what="the answer")
                elif prose_retry:
                    log.info("provider answered JSON mode with prose; asking for two lines")
                    prose_retry = False
                    mode = "two_line"
                    continue
                else:
                    raise InvalidProviderOutput("prose", "the answer is prose, not JSON")
                return Candidate(
                    payload=payload,
                    raw=content,
                    model=self._model,
                    prompt_version=PROMPT_VERSION,
                    prompt_sha256=TWO_LINE_PROMPT_SHA256 if mode == "two_line" else PROMPT_SHA256,
                )


def _refuses_json_mode(reply: Reply, mode: Mode) -> bool:
    """A refusal of the JSON mode asked for (``wire.refuses_json_mode``); the two-line
    format asks for none."""
    return mode != "two_line" and refuses_json_mode(reply)
