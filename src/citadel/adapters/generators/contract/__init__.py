"""The generation contract every model-backed generator shares, whoever the provider.

A provider's adapter (``generators.openai`` today) only transports: it puts the
policy and the user message into its own wire format, and hands what the model
wrote to the decoders here. The contract, in the order a call passes through it::

    prompt    the fixed, versioned answer policy in its two reply formats, its hashes,
              the user message (question and evidence as JSON data), the answer's schema
    decode    strict JSON and the two-line format, read into ``{"segments": [...]}``
    errors    the tree below

Errors (``reason`` is a stable code; no message ever holds an API key, the prompt or
a passage; the codes a provider's wire raises are the OpenAI adapter's today)::

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
"""

from __future__ import annotations

from citadel.adapters.generators.contract.decode import parse_strict_json, parse_two_line
from citadel.adapters.generators.contract.errors import (
    GeneratorConfigError,
    GeneratorError,
    InvalidProviderOutput,
    ProviderStatusError,
    ProviderTimeout,
    ProviderUnavailable,
    RequestTooLarge,
)
from citadel.adapters.generators.contract.prompt import (
    PROMPT_SHA256,
    PROMPT_VERSION,
    SYSTEM_POLICY,
    TWO_LINE_POLICY,
    TWO_LINE_PROMPT_SHA256,
    answer_schema,
    user_message,
)

__all__ = [
    "PROMPT_SHA256",
    "PROMPT_VERSION",
    "SYSTEM_POLICY",
    "TWO_LINE_POLICY",
    "TWO_LINE_PROMPT_SHA256",
    "GeneratorConfigError",
    "GeneratorError",
    "InvalidProviderOutput",
    "ProviderStatusError",
    "ProviderTimeout",
    "ProviderUnavailable",
    "RequestTooLarge",
    "answer_schema",
    "parse_strict_json",
    "parse_two_line",
    "user_message",
]
