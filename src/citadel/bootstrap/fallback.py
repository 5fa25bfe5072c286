"""What the support checkers' and relevance scorers' tables share: a packaged model
loaded when the services are built, the fallback when it cannot be, a refusal's wording.

A model is loaded at once (``loaded``), so that a missing or altered file is found
when the services are built and never in the middle of an answer. A choice whose
model raises ``ModelUnavailable`` gives way to its family's model-free choice, with
one warning per process and reason (``built_or_fallback``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from citadel.app.errors import ModelUnavailable


class _Loads(Protocol):
    def load(self) -> None: ...


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_Model = TypeVar("_Model", bound=_Loads)
_Built = TypeVar("_Built", bound=_Named)


def loaded(model: _Model) -> _Model:
    """``model``, its files checked and loaded now (``ModelUnavailable`` if they cannot be)."""
    model.load()
    return model


def built_or_fallback(
    build: Callable[[], _Built],
    fallback: Callable[[], _Built],
    *,
    warned: set[str],
    log: logging.Logger,
    message: str,
) -> _Built:
    """``build()``, or ``fallback()`` when its model cannot be used. ``message`` is
    logged once per reason in ``warned``, with the fallback's name and the reason."""
    try:
        return build()
    except ModelUnavailable as exc:
        chosen = fallback()
        reason = str(exc)
        if reason not in warned:
            warned.add(reason)
            log.warning(message, chosen.name, reason)
        return chosen


def alternatives(names: Iterable[str]) -> str:
    """``a, b or c``: a table's names as a refusal lists them."""
    *rest, last = names
    return f"{', '.join(rest)} or {last}" if rest else last
