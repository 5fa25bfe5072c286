"""The chat-completion envelope, checked field by field: the assistant's text out of
``choices[0].message``, or the reason it is not an answer.
"""

from __future__ import annotations

from citadel.adapters.generators.contract.decode import parse_strict_json
from citadel.adapters.generators.contract.errors import InvalidProviderOutput
from citadel.adapters.generators.openai.wire import Reply

__all__ = ["message_content"]

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
