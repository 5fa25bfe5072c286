"""Answer cache and in-flight coalescing: one generation per distinct question and evidence.

An entry is a *validated* answer (segments and refs, never links: links are
resolved for each reader when shown) under a key that pins everything the
answer depends on — the normalised question, the frozen manifest's hash, the
generator, its model and prompt version, the support checker and the relevance
scorer, and the reader's tenant and access context. It remembers the revision
of every source its manifest names; a lookup whose sources have moved on since
(new version, ACL or metadata edit, deletion) drops the entry instead of
serving it.

Identical requests that arrive while a generation runs wait for that one
generation instead of starting their own.
"""

from __future__ import annotations

import asyncio
import threading
import time
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from citadel.domain.answer import JudgedCitation
from citadel.domain.support import Support
from citadel.domain.users import Actor, Role
from citadel.domain.validation import Accepted

T = TypeVar("T")


DEFAULT_CAPACITY = 256
"""Validated answers kept (``CITADEL_ANSWER_CACHE_SIZE``)."""
DEFAULT_TTL_S = 3600.0
"""How long one is kept (``CITADEL_ANSWER_CACHE_TTL_S``)."""


def normalise_question(question: str) -> str:
    """The form two questions are considered the same in: NFKC, case-folded, one space."""
    return " ".join(unicodedata.normalize("NFKC", question).casefold().split())


def access_context(actor: Actor) -> str:
    """Everything about the reader that decides what they may read (not who they are)."""
    if actor.role is Role.ADMIN:
        return f"{actor.tenant}\x1f*"
    return "\x1f".join([actor.tenant, *sorted(actor.groups)])


@dataclass(frozen=True, slots=True)
class AnswerKey:
    question: str
    manifest_sha256: str
    generator: str
    model: str
    prompt_version: str
    access: str
    support: str = ""
    """The support checker and policy the answer was checked under."""
    relevance: str = ""
    """The relevance scorer that decided answerability and ordered the evidence ("" when
    none): an answer never crosses scorers."""


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A validated answer and what it was made under."""

    verdict: Accepted
    model: str
    prompt_version: str
    prompt_sha256: str
    raw_sha256: str
    revisions: Mapping[str, int]
    """The revision of each source the manifest names, read before generation began."""
    supports: tuple[tuple[Support, ...], ...] | None = None
    limited: bool = False
    judged: tuple[JudgedCitation, ...] = ()
    """The span-support judge's verdicts behind ``supports``: a hit's audit record
    carries them as the first answer's did."""


class AnswerCache:
    """A bounded LRU of validated answers with a time to live; safe across threads."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        ttl_s: float = DEFAULT_TTL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0 (0 turns the cache off)")
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        self._capacity = capacity
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[AnswerKey, tuple[float, CachedAnswer]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._capacity > 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: AnswerKey, revisions: Mapping[str, int]) -> CachedAnswer | None:
        """The entry for ``key`` if it is fresh and every source is still at its revision."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            stored_at, entry = found
            stale = self._clock() - stored_at > self._ttl_s or any(
                revisions.get(source_id) != revision
                for source_id, revision in entry.revisions.items()
            )
            if stale:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def put(self, key: AnswerKey, entry: CachedAnswer) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._entries[key] = (self._clock(), entry)
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)


class _Run(Generic[T]):
    __slots__ = ("task", "waiters")

    def __init__(self, task: asyncio.Future[T]) -> None:
        self.task = task
        self.waiters = 0


class Coalescer(Generic[T]):
    """Runs one task per key at a time; callers with the same key share its result.

    The task belongs to its callers together: one caller giving up (its
    cancellation or deadline) leaves the others' shared work running, and the
    last one giving up cancels it, so abandoned work frees its resources.
    Tasks belong to an event loop: requests on different loops do not share.
    """

    def __init__(self) -> None:
        self._running: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[AnswerKey, _Run[T]]
        ] = weakref.WeakKeyDictionary()

    def in_flight(self) -> int:
        return sum(len(runs) for runs in self._running.values())

    async def run(self, key: AnswerKey, work: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """``work()``'s result, and whether it was shared from another caller's run.

        ``work`` should return its failures as values: an exception it raises
        reaches every caller still waiting.
        """
        runs = self._running.setdefault(asyncio.get_running_loop(), {})
        current = runs.get(key)
        shared = current is not None
        if current is None:
            current = _Run(asyncio.ensure_future(work()))
            runs[key] = current
            current.task.add_done_callback(lambda _: runs.pop(key, None))
        current.waiters += 1
        try:
            return await asyncio.shield(current.task), shared
        except asyncio.CancelledError:
            if current.waiters == 1:
                current.task.cancel()
            raise
        finally:
            current.waiters -= 1
