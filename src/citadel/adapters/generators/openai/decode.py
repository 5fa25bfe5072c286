"""Reading what the provider said: the chat-completion envelope checked field by field,
JSON parsed strictly (no duplicate keys, no NaN, nothing after the value), and the
two-line fallback format parsed into the same ``{"segments": [...]}`` shape.

Refs that are well formed but unknown pass through unchanged: membership is the
application's decision, never this adapter's.
"""

from __future__ import annotations

import json
from typing import NoReturn

from citadel.adapters.generators.openai.errors import InvalidProviderOutput
from citadel.adapters.generators.openai.wire import Reply

__all__ = ["message_content", "parse_strict_json", "parse_two_line"]

_MESSAGE_FIELDS = frozenset(
    # OpenAI's assistant message, plus the reasoning text some servers add (never used).
    {"role", "content", "refusal", "tool_calls", "function_call", "annotations", "audio"}
    | {"reasoning_content", "reasoning"}
)


def message_content(reply: Reply) -> str:
    """The assistant's text from a chat completion, checked field by field."""
    media = reply.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise InvalidProviderOutput(
            "unexpected_content_type", f"the response is {media or 'untyped'}, not JSON"
        )
    try:
        text = reply.body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidProviderOutput("invalid_utf8", "the response is not valid UTF-8") from None
    envelope = parse_strict_json(text, what="the response")
    if not isinstance(envelope, dict):
        raise InvalidProviderOutput("wrong_type", "the response is not a JSON object")
    if envelope.get("error") is not None:
        raise InvalidProviderOutput("provider_error", "the response is an error object")
    choices = envelope.get("choices")
    if not isinstance(choices, list):
        raise InvalidProviderOutput("wrong_type", "choices is not a list")
    if not choices:
        raise InvalidProviderOutput("empty", "the response has no choices")
    if len(choices) > 1:
        raise InvalidProviderOutput("unexpected_field", "more than the one choice asked for")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise InvalidProviderOutput("wrong_type", "the choice has no message object")
    message: dict[str, object] = choice["message"]
    unknown = set(message) - _MESSAGE_FIELDS
    if unknown:
        raise InvalidProviderOutput(
            "unexpected_field", f"the message has {len(unknown)} unknown field(s)"
        )
    if message.get("tool_calls") or message.get("function_call") is not None:
        raise InvalidProviderOutput("tool_call", "the model called a tool instead of answering")
    if choice.get("finish_reason") in ("tool_calls", "function_call"):
        raise InvalidProviderOutput("tool_call", "the model stopped to call a tool")
    if message.get("refusal"):
        raise InvalidProviderOutput("refusal", "the model refused to answer")
    if message.get("annotations") or message.get("audio") is not None:
        raise InvalidProviderOutput("unexpected_field", "the message carries annotations or audio")
    if message.get("role", "assistant") != "assistant":
        raise InvalidProviderOutput("wrong_type", "the message is not the assistant's")
    content = message.get("content")
    if content is None:
        raise InvalidProviderOutput("null_content", "the message content is null")
    if not isinstance(content, str):
        raise InvalidProviderOutput("wrong_type", "the message content is not a string")
    if choice.get("finish_reason") == "length":
        raise InvalidProviderOutput("truncated", "the answer was cut off at max_tokens")
    if choice.get("finish_reason") == "content_filter":
        raise InvalidProviderOutput("content_filter", "the provider filtered the answer")
    if not content.strip():
        raise InvalidProviderOutput("empty", "the message content is empty")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidProviderOutput("invalid_utf8", "the content holds lone surrogates") from None
    return content


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey
        result[key] = value
    return result


class _DuplicateKey(ValueError):
    pass


class _NonFinite(ValueError):
    pass


def _no_constant(name: str) -> NoReturn:
    raise _NonFinite


def parse_strict_json(text: str, *, what: str) -> object:
    """JSON with no duplicate keys, no NaN or Infinity, and nothing after the value."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except _DuplicateKey:
        raise InvalidProviderOutput("duplicate_key", f"{what} repeats a JSON key") from None
    except _NonFinite:
        raise InvalidProviderOutput("invalid_json", f"{what} holds NaN or Infinity") from None
    except json.JSONDecodeError as exc:
        # The decoder's message names the problem and the offset, never the text.
        raise InvalidProviderOutput(
            "invalid_json", f"{what} is not valid JSON ({exc.msg}, char {exc.pos})"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InvalidProviderOutput(
            "invalid_json", f"{what} is not valid JSON ({type(exc).__name__})"
        ) from None


def parse_two_line(content: str) -> dict[str, object]:
    """``Citations: E1, E3`` and ``Answer: ...`` as ``{"segments": [...]}``; refs kept verbatim.

    Only the separators are parsed: each ref is what stands between commas with
    the spaces around it removed, so a wrong, padded-inside or invented ref still
    reaches the validator as the model wrote it.
    """
    lines = [line for line in content.strip().splitlines() if line.strip()]
    fields: dict[str, str] = {}
    for line in lines:
        label, colon, value = line.partition(":")
        key = label.strip().lower()
        if not colon or key not in ("citations", "answer") or key in fields:
            raise InvalidProviderOutput(
                "two_line_format", "the answer is not the two lines Citations: and Answer:"
            )
        fields[key] = value
    if set(fields) != {"citations", "answer"}:
        raise InvalidProviderOutput(
            "two_line_format", "the answer is not the two lines Citations: and Answer:"
        )
    cited = fields["citations"].strip(" \t")
    refs = [part.strip(" \t") for part in cited.split(",")] if cited else []
    return {"segments": [{"text": fields["answer"].strip(" \t"), "evidence_ids": refs}]}
