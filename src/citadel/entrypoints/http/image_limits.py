"""Each reader's share of the page renderers: how many images at once, and per minute.

A page image is the one request a reader can make that costs seconds of a render
worker, so beside the request rate limit every reader has its own: at most
``concurrency`` images being drawn at once and ``rate_per_minute`` asked for (a
token bucket). Past either, 429 with ``Retry-After`` at once. Kept in this process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from citadel.entrypoints.http.errors import RateLimited
from citadel.entrypoints.http.security import RateLimiter


class ReaderImages:
    def __init__(self, concurrency: int = 2, rate_per_minute: int = 30) -> None:
        self._concurrency = concurrency
        self._rate = RateLimiter(rate_per_minute)
        self._drawing: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def admitted(self, reader: str) -> Iterator[None]:
        """Held while ``reader``'s image is drawn; ``RateLimited`` when it may not be."""
        with self._lock:
            if self._drawing.get(reader, 0) >= self._concurrency:
                raise RateLimited(1)
            wait = self._rate.take(reader)
            if wait:
                raise RateLimited(wait)
            self._drawing[reader] = self._drawing.get(reader, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._drawing.pop(reader) - 1
                if left:
                    self._drawing[reader] = left
