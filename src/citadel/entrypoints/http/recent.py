"""Each reader's recent questions, for the ask page: per user, bounded, in memory.

Kept in this process's memory, not in the user store: a list of what someone
asked is personal, and a convenience list does not justify a new table of it
on disk (the audit log already records answers, for its own purpose). So it is
lost on restart and not shared between server processes, and signing out clears
it. Entries are keyed by tenant and user name; a reader is only ever shown their
own. At most ``per_user`` questions each, for at most ``users`` readers (the
least recently active are forgotten first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from citadel.domain.users import Actor
from citadel.entrypoints.http.ask_query import AskQuery


class RecentQuestions:
    def __init__(self, per_user: int = 10, users: int = 1000) -> None:
        self._per_user = per_user
        self._users = users
        self._kept: OrderedDict[tuple[str, str], list[AskQuery]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, actor: Actor, query: AskQuery) -> None:
        """``query`` first in ``actor``'s list (an earlier identical one moves up)."""
        key = (actor.tenant, actor.user_id)
        with self._lock:
            kept = [q for q in self._kept.pop(key, []) if q != query]
            kept.insert(0, query)
            self._kept[key] = kept[: self._per_user]
            while len(self._kept) > self._users:
                self._kept.popitem(last=False)

    def of(self, actor: Actor) -> list[AskQuery]:
        with self._lock:
            return list(self._kept.get((actor.tenant, actor.user_id), []))

    def forget(self, tenant: str, user_id: str) -> None:
        with self._lock:
            self._kept.pop((tenant, user_id), None)
