"""Work on a kept original, off the request threads: fetching it and hashing it.

Before a page image or the viewer's page count reaches the render workers, the
original is fetched (on PostgreSQL, copied out of the database the first time on
this server: seconds for a large PDF) and hashed (the key its renders and refusals
are remembered by). Done on the threads every request shares, forty such calls held
them all and /healthz, search and other tenants waited behind them. So this work
has threads of its own (``threads``) and a bound on how much may wait for them
(``capacity``): past it the caller is told at once (``RenderBusy``, 503
``render_busy`` for an image; the viewer shows the text without the image).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from citadel.app.errors import RenderBusy

T = TypeVar("T")


class OriginalWork:
    def __init__(self, threads: int = 2, capacity: int = 8, retry_after_s: int = 2) -> None:
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="original-work")
        self._capacity = capacity
        self._retry_after_s = retry_after_s
        self._in_flight = 0
        self._lock = threading.Lock()

    async def run(self, work: Callable[..., T], *args: object) -> T:
        """``work(*args)`` on this gate's threads, awaited; ``RenderBusy`` at once when
        ``capacity`` calls are already running or waiting."""
        with self._lock:
            if self._in_flight >= self._capacity:
                raise RenderBusy(self._retry_after_s)
            self._in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, work, *args)
        finally:
            with self._lock:
                self._in_flight -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
