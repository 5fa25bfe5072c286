"""An answer generator over any OpenAI-compatible ``POST {base_url}/chat/completions``.

The model writes candidates; it decides nothing. This adapter only transports
and decodes: it sends the question and the closed evidence as JSON *data* under
a fixed, versioned system policy, reads a bounded response, parses it strictly
and hands the decoded object to the application's validator. Refs that are
well formed but unknown pass through unchanged — membership is the
application's decision, never this adapter's.

Structured output is asked for as a strict ``json_schema``; a provider that
refuses it (HTTP 400 naming ``response_format``) is asked for ``json_object``;
one that refuses JSON mode entirely, or answers JSON mode with prose, is asked
once for two lines (``Citations: E1, E3`` / ``Answer: ...``), parsed into the
same ``{"segments": [...]}`` shape.

The modules, in the order a call passes through them::

    prompt    the system policy, its two reply formats, the request body
    wire      the endpoint, the HTTP exchange, size caps, one retry, httpx errors translated
    decode    the completion envelope, strict JSON, the two-line format
    adapter   OpenAICompatibleGenerator: the format fallback and the deadline around it all
    errors    the tree below

Errors (``reason`` is a stable code; no message ever holds the API key, the
prompt or a passage)::

    AppError                          citadel.app.errors
    └── GeneratorError                .reason
        ├── GeneratorConfigError      config: refused at construction (URL, CA file, limits)
        ├── RequestTooLarge           oversized_request: over max_request_bytes, never sent
        ├── ProviderUnavailable       connect, connect_timeout, transport
        ├── ProviderTimeout           timeout: the generator deadline passed (a TimeoutError too)
        ├── ProviderStatusError       http_status, rate_limited, refused_json_mode; .status
        └── InvalidProviderOutput     oversized_response, unexpected_encoding,
                                      unexpected_content_type, invalid_utf8, invalid_json,
                                      duplicate_key, unexpected_field, wrong_type,
                                      provider_error, null_content, tool_call, refusal,
                                      truncated, content_filter, empty, prose, two_line_format

The API key is a ``citadel.domain.secrets.SecretStr``, a settings type.
"""

from __future__ import annotations

from citadel.adapters.generators.openai.adapter import OpenAICompatibleGenerator
from citadel.adapters.generators.openai.decode import parse_strict_json, parse_two_line
from citadel.adapters.generators.openai.errors import (
    GeneratorConfigError,
    GeneratorError,
    InvalidProviderOutput,
    ProviderStatusError,
    ProviderTimeout,
    ProviderUnavailable,
    RequestTooLarge,
)
from citadel.adapters.generators.openai.prompt import (
    PROMPT_SHA256,
    PROMPT_VERSION,
    SYSTEM_POLICY,
    TWO_LINE_POLICY,
    TWO_LINE_PROMPT_SHA256,
)
from citadel.adapters.generators.openai.wire import is_loopback

__all__ = [
    "PROMPT_SHA256",
    "PROMPT_VERSION",
    "SYSTEM_POLICY",
    "TWO_LINE_POLICY",
    "TWO_LINE_PROMPT_SHA256",
    "GeneratorConfigError",
    "GeneratorError",
    "InvalidProviderOutput",
    "OpenAICompatibleGenerator",
    "ProviderStatusError",
    "ProviderTimeout",
    "ProviderUnavailable",
    "RequestTooLarge",
    "is_loopback",
    "parse_strict_json",
    "parse_two_line",
]
