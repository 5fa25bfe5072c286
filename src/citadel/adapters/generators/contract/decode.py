"""Reading the model's answer, whoever served it: JSON parsed strictly (no duplicate
keys, no NaN, nothing after the value), and the two-line format parsed into the same
``{"segments": [...]}`` shape.

Refs that are well formed but unknown pass through unchanged: membership is the
application's decision, never a generator's.
"""

from __future__ import annotations

import json
from typing import NoReturn

from citadel.adapters.generators.contract.errors import InvalidProviderOutput

__all__ = ["parse_strict_json", "parse_two_line"]


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
