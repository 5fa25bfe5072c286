"""JSON from outside: the one reader every input surface parses JSON text with.

Standard JSON only (RFC 8259), and nothing a second reader could take
differently: an object's keys are unique (a duplicate is refused, never
"the last one wins"), numbers are finite (no ``NaN``, ``Infinity`` or a
literal that overflows to it), and an integer literal has at most
``MAX_INT_DIGITS`` digits (``integers.check_int_literal``), so a long one is a
clear refusal rather than Python's conversion error. HTTP bodies, shadow
records and sidecar manifests are read here; MCP and gRPC requests arrive
parsed by their SDKs and meet the same field rules in their models.
"""

from __future__ import annotations

import json
import math
from typing import Any

from citadel.domain.errors import InvalidValue
from citadel.domain.integers import check_int_literal


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidValue(f"duplicate key {key[:64]!r}: each field may appear once")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise InvalidValue(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise InvalidValue(f"the number {text[:40]} is too large")
    return number


def loads_strict(raw: str | bytes) -> Any:
    """The JSON value of ``raw`` (UTF-8 when bytes); ``InvalidValue`` saying what is wrong."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_int=check_int_literal,
            parse_float=_finite,
        )
    except InvalidValue:
        raise
    except UnicodeDecodeError:
        raise InvalidValue("not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InvalidValue(f"not valid JSON: {exc.msg} at {exc.pos}") from None
    except (ValueError, RecursionError) as exc:
        raise InvalidValue(f"not valid JSON: {exc}") from None
