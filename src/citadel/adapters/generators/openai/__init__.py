"""An answer generator over any OpenAI-compatible ``POST {base_url}/chat/completions``.

The model writes candidates; it decides nothing. This adapter only transports
and decodes: it sends the question and the closed evidence as JSON *data* under
the contract's fixed, versioned policy (``generators.contract``), reads a bounded
response, parses it strictly and hands the decoded object to the application's
validator. Refs that are well formed but unknown pass through unchanged —
membership is the application's decision, never this adapter's.

Structured output is asked for as a strict ``json_schema``; a provider that
refuses it (HTTP 400 naming ``response_format``) is asked for ``json_object``;
one that refuses JSON mode entirely, or answers JSON mode with prose, is asked
once for two lines (``Citations: E1, E3`` / ``Answer: ...``), parsed into the
same ``{"segments": [...]}`` shape.

What is OpenAI's here, in the order a call passes through it::

    request   the reply formats asked for, their order, the chat-completions body
    wire      the endpoint, the HTTP exchange, size caps, one retry, httpx errors translated
    envelope  the chat-completion envelope checked field by field
    adapter   OpenAICompatibleGenerator: the format fallback and the deadline around it all

The policy, the decoders and the error tree are the contract's
(``generators.contract``), which any other provider's adapter would share.
The API key is a ``citadel.domain.secrets.SecretStr``, a settings type.
"""

from __future__ import annotations

from citadel.adapters.generators.openai.adapter import OpenAICompatibleGenerator
from citadel.adapters.generators.openai.wire import is_loopback

__all__ = ["OpenAICompatibleGenerator", "is_loopback"]
