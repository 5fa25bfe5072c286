"""Secrets as a value type: settings hold them, adapters read them, nothing prints them."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["SecretStr"]


class SecretStr:
    """A secret that never shows itself: repr, str and format print a mask; no pickling."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "SecretStr('**********')" if self._value else "SecretStr('')"

    def __str__(self) -> str:
        return "**********" if self._value else ""

    def __reduce__(self) -> NoReturn:
        raise TypeError("a secret is not pickled (it would end up in a cache or a file)")
