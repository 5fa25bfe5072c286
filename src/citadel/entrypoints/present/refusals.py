"""A validator's refusals in citadel's own words, for every surface that validates with pydantic.

The HTTP API's 422 bodies (``http.errors``) and MCP's tool errors for refused
arguments (``mcp.arguments``) both say it here: one clause per field, naming the
field, what is wrong and the limit. pydantic's own text (its documentation URLs,
its type codes, its model names) and the refused input never reach the caller.
The errors are read as plain mappings (``ValidationError.errors()``), so this
module imports no validator.
"""

from __future__ import annotations

from typing import Any


def validation_message(errors: Any, whole: str = "the body") -> str:
    """The validator's errors in citadel's own words, one clause per field: the field,
    what is wrong and the limit. Nothing of the validator's own text reaches the
    caller (no documentation URL, no type codes, no model names, not the input).
    ``whole`` names what an error without a field is about (an HTTP body, a tool's
    arguments)."""
    parts: list[str] = []
    for error in list(errors)[:10]:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        parts.append(
            _in_own_words(".".join(loc), error.get("type", ""), error.get("ctx") or {}, whole)
        )
    return "; ".join(parts) or "invalid request"


# What each kind of value must be, named as a JSON caller knows it.
_KINDS = {
    "string_type": "text (a JSON string)",
    "int_type": "a whole number (a JSON integer)",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list (a JSON array)",
    "dict_type": "an object (a JSON object)",
    "model_type": "an object (a JSON object)",
    "model_attributes_type": "an object (a JSON object)",
    "enum": "one of the documented values",
    "literal_error": "one of the documented values",
}


def _in_own_words(where: str, kind: str, ctx: Any, whole: str) -> str:
    field = f"{where!r}" if where else whole
    limit = {k: ctx[k] for k in ("ge", "gt", "le", "lt", "min_length", "max_length") if k in ctx}
    if kind == "extra_forbidden":
        return (
            f"unknown field {field}: the request carries only the documented fields"
            " (passages, citations and identity come from the server, never the caller)"
        )
    if kind == "missing":
        return f"{field} is required"
    if kind in ("string_too_short", "too_short"):
        unit = "character" if kind.startswith("string") else "item"
        n = limit.get("min_length", 1)
        return f"{field} needs at least {n} {unit}{'' if n == 1 else 's'}"
    if kind in ("string_too_long", "too_long"):
        unit = "character" if kind.startswith("string") else "item"
        n = limit.get("max_length")
        return f"{field} may hold at most {n} {unit}{'' if n == 1 else 's'}"
    if kind == "greater_than_equal":
        return f"{field} must be at least {limit['ge']}"
    if kind == "greater_than":
        return f"{field} must be more than {limit['gt']}"
    if kind == "less_than_equal":
        return f"{field} must be at most {limit['le']}"
    if kind == "less_than":
        return f"{field} must be less than {limit['lt']}"
    if kind in _KINDS:
        if kind in ("enum", "literal_error") and "expected" in ctx:
            return f"{field} must be one of {ctx['expected']}"
        return f"{field} must be {_KINDS[kind]}"
    if kind == "value_error" and "error" in ctx:
        # A validator of citadel's own raised it: its message is written for callers.
        return f"{field}: {ctx['error']}"
    return f"{field} is not valid here"
