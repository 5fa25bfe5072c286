"""Cursor pagination of the API's lists: ``?limit=&cursor=``, ``next_cursor`` in the reply.

A page is keyed on an identifier that never changes (a source id within its
tenant, a user name): the cursor carries the last key a page returned, and
the next page starts strictly after it. A walk therefore returns every item
that stayed listed exactly once, whatever is added or removed meanwhile, and
an item added during the walk at most once (when its key sorts after the
cursor). The cursor is opaque to callers (base64url of a tagged key): it
names the list it belongs to, so one list's cursor is refused by another.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Generic, TypeVar

from fastapi import Query

from citadel.app.errors import InvalidRequest

T = TypeVar("T")

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

Limit = Annotated[
    int, Query(ge=1, le=MAX_LIMIT, description=f"Items per page (at most {MAX_LIMIT}).")
]
Cursor = Annotated[
    str | None,
    Query(max_length=512, description="The next_cursor of the previous page; none: the first."),
]


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(kind: str, key: str) -> str:
    raw = f"{kind}\n{key}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(kind: str, cursor: str) -> str:
    """The key ``cursor`` carries; ``InvalidRequest`` for anything not made by
    ``encode_cursor(kind, ...)``."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        tag, sep, key = raw.decode("utf-8").partition("\n")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidRequest("cursor: not a cursor this API returned") from None
    if not sep or tag != kind or not key:
        raise InvalidRequest("cursor: not a cursor of this list") from None
    return key


def page_of(
    items: Sequence[T], key: Callable[[T], str], kind: str, limit: int, cursor: str | None
) -> Page[T]:
    """The page of ``items`` (in any order) after ``cursor``, ordered by ``key``."""
    after = decode_cursor(kind, cursor) if cursor is not None else None
    ordered = sorted(items, key=key)
    if after is not None:
        ordered = [item for item in ordered if key(item) > after]
    shown = ordered[:limit]
    more = len(ordered) > limit
    return Page(shown, encode_cursor(kind, key(shown[-1])) if more and shown else None)
