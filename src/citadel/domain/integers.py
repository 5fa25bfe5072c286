"""Whole numbers from outside: the one rule every parser applies to an integer it reads.

A number from a file, a flag, an environment variable or a request body is
checked where it is read, by ``parse_int``: it is a whole number (never
``true`` or ``5.0``, and text such as ``"5"`` only where the input is text: a
flag, a setting, a query parameter — ``parse_int``; a parsed value — ``check_int``), it is no longer
than ``MAX_INT_DIGITS`` digits (Python refuses to convert past 4,300 and is
slow well before), and it lies in the range its field allows. A refusal is an
``InvalidValue`` whose message names the field and the range, so a batch can
report the one bad input and go on.
"""

from __future__ import annotations

import re

from citadel.domain.errors import InvalidValue

MAX_INT_DIGITS = 64
"""No field citadel reads needs more digits; anything longer is refused unread."""
YEAR_MIN = -9999
YEAR_MAX = 9999
"""The publication years a source may carry (and a filter may name)."""
MAX_VERSION = 2**63 - 1
"""The largest version number a store (SQLite, PostgreSQL ``bigint``, protobuf ``int64``) holds."""

_WHOLE = re.compile(r"[+-]?[0-9]+")
_SHOWN_CHARS = 40


def parse_int(text: str, *, low: int, high: int | None, what: str) -> int:
    """Decimal ``text`` (a flag, a setting, a query parameter; surrounding spaces
    allowed) as an ``int`` in ``[low, high]`` (``high`` None: no bound but the
    digits'); else ``InvalidValue`` naming ``what``."""
    stripped = text.strip()
    if len(stripped) > MAX_INT_DIGITS + 1 or _WHOLE.fullmatch(stripped) is None:
        raise InvalidValue(
            f"{what} must be a whole number {_range(low, high)}; {_shown(text)} is not"
        )
    return check_int(int(stripped), low=low, high=high, what=what)


def check_int(value: object, *, low: int, high: int | None, what: str) -> int:
    """``value`` (already parsed: a JSON value, a message field) when it is an ``int``
    in ``[low, high]`` — not a ``bool``, a ``float`` or text; else ``InvalidValue``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"{what} must be a whole number {_range(low, high)}")
    if value < low or (high is not None and value > high):
        raise InvalidValue(f"{what} must be {_range(low, high)}; {_shown(value)} is not")
    return value


def _range(low: int, high: int | None) -> str:
    return f"at least {low}" if high is None else f"from {low} to {high}"


def check_int_literal(text: str) -> int:
    """A JSON integer literal as an ``int``, refused (``InvalidValue``) past
    ``MAX_INT_DIGITS`` digits: the ``parse_int`` hook of the JSON reader."""
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise InvalidValue(
            f"an integer of {digits} digits is over the {MAX_INT_DIGITS}-digit limit"
        )
    return int(text)


def _shown(value: object) -> str:
    if isinstance(value, int):
        # str() of a huge int is refused (and slow): say its size instead.
        if value.bit_length() > 128:
            return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
        return str(value)
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def declared_over(text: str | None, limit: int) -> bool:
    """True when a declared size (a ``Content-Length`` header) says more than
    ``limit``: ASCII digits naming a larger number, however many there are (a
    number too long to convert is over any limit). Anything else declares nothing;
    the body is still counted as it arrives."""
    stripped = (text or "").strip()
    if not stripped.isascii() or not stripped.isdigit():
        return False  # "²".isdigit() too, which int() refuses
    digits = stripped.lstrip("0")
    return len(digits) > len(str(limit)) or (digits != "" and int(digits) > limit)
