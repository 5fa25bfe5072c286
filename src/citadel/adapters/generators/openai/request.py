"""The chat-completions request: the reply formats an OpenAI-compatible server is asked
for, the order they are tried in, and the body built from a ``GenerationRequest``
under the contract's policy (``generators.contract.prompt``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from citadel.adapters.generators.contract.errors import RequestTooLarge
from citadel.adapters.generators.contract.prompt import (
    SYSTEM_POLICY,
    TWO_LINE_POLICY,
    answer_schema,
    user_message,
)
from citadel.domain.answer import GenerationRequest

__all__ = ["FALLBACK", "Mode", "request_body"]

Mode = Literal["json_schema", "json_object_schema", "json_object", "two_line"]
# json_object_schema is json_object carrying the schema as llama.cpp's servers read it
# (they compile it into a grammar); a provider that refuses the extra field gets plain
# json_object next.
FALLBACK: dict[Mode, Mode] = {
    "json_schema": "json_object_schema",
    "json_object_schema": "json_object",
    "json_object": "two_line",
}


def request_body(
    request: GenerationRequest,
    mode: Mode,
    *,
    model: str,
    max_output_tokens: int | None,
    max_request_bytes: int,
) -> bytes:
    """The chat-completions body for ``request`` in ``mode``; ``RequestTooLarge`` past the cap."""
    tokens = request.max_output_tokens
    if max_output_tokens is not None:
        tokens = min(tokens, max_output_tokens)
    payload: dict[str, Any] = {
        "model": model,
        "messages": [
            {
                "role": "system",
                "content": TWO_LINE_POLICY if mode == "two_line" else SYSTEM_POLICY,
            },
            {"role": "user", "content": user_message(request)},
            # A repair note is the application's own fixed text, never the model's.
            *([{"role": "system", "content": request.repair}] if request.repair else []),
        ],
        "max_tokens": tokens,
        "temperature": 0,
        "n": 1,
        "stream": False,
    }
    refs = [e.ref for e in request.evidence]
    if mode == "json_schema":
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": "citadel_answer",
                "strict": True,
                "schema": answer_schema(refs),
            },
        }
    elif mode == "json_object_schema":
        payload["response_format"] = {
            "type": "json_object",
            "schema": answer_schema(refs, bounded_text=True),
        }
    elif mode == "json_object":
        payload["response_format"] = {"type": "json_object"}
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
    if len(body) > max_request_bytes:
        # The selector bounds the evidence; trimming here would change what the manifest says.
        raise RequestTooLarge(
            "oversized_request",
            f"the request is {len(body)} bytes, over the {max_request_bytes}-byte cap",
        )
    return body
