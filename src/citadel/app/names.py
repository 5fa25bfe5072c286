"""New user, tenant and group names are unmistakable: none looks like one that exists.

A group or a tenant has no table of its own: it exists once a user is in it or a
source names it in its ACL (``ingest --acl``, ``sources acl``, an upload's ACL).
``NameRegister`` reads both, so ``ɡ1`` (script g) is refused beside a ``g1`` that
only a source's ACL holds, and the same rule runs wherever a name enters: adding a
user (CLI and API), ingesting (every entrypoint) and changing a source's ACL. A name
that already exists, exactly, is reused and never checked again (names made before
these rules keep working); a new one must be NFKC and of one script, and look like
no existing name of its kind (``domain.names``). Groups are compared within their
tenant; tenants and user names across the whole store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from citadel.app.errors import LookalikeName
from citadel.domain.errors import InvalidValue
from citadel.domain.names import check_new_name, lookalike
from citadel.domain.source import Source
from citadel.domain.users import User

_REMEMBERED = 10_000


class UserLister(Protocol):
    def list(self, tenant: str | None = None) -> Sequence[User]:
        """Users (of ``tenant``, or all)."""
        ...


class SourceLister(Protocol):
    def list(self, tenant: str | None = None) -> Sequence[Source]:
        """Live sources (of ``tenant``, or all)."""
        ...


class NameRegister:
    """The names users and sources already hold, and the check a new one must pass."""

    def __init__(self, users: UserLister | None = None, sources: SourceLister | None = None):
        self._users = users
        self._sources = sources
        self._passed: set[tuple[str, str, str]] = set()
        """(kind, tenant, name) already found to exist (names are not removed): an ingest
        of many files into one tenant and ACL reads the users and sources once, not once
        per file. A new name is not remembered until it is seen to exist."""

    def check_user(self, name: str) -> None:
        """``LookalikeName`` unless ``name`` is a user name no existing user's looks like."""
        users = [u.name for u in self._users.list()] if self._users is not None else []
        # Not naming the other user: it may be of another tenant (names are global).
        self._check("user", name, users, "a user whose name looks like {new} already exists")

    def check_tenant(self, tenant: str) -> None:
        """``LookalikeName`` unless ``tenant`` exists, or is new and looks like no tenant."""
        key = ("tenant", "", tenant)
        if key in self._passed:
            return
        if self._known_tenant(tenant):
            self._remember(key)
            return
        tenants = {u.tenant for u in self._list_users(None)}
        tenants |= {s.tenant for s in self._list_sources(None)}
        self._check("tenant", tenant, tenants, "tenant {new} looks like the existing {old}")

    def check_groups(self, tenant: str, groups: Iterable[str]) -> None:
        """``LookalikeName`` unless each of ``groups`` exists in ``tenant``, or is new and
        looks like no group of ``tenant`` (nor like another of ``groups``)."""
        wanted = sorted(set(groups))
        if all(("group", tenant, group) in self._passed for group in wanted):
            return
        known = {g for u in self._list_users(tenant) for g in u.groups}
        if not known.issuperset(wanted):
            # An ACL usually names its readers' groups: only otherwise are sources read.
            known |= {g for s in self._list_sources(tenant) for g in s.acl_groups}
        for group in wanted:
            others = known | (set(wanted) - {group})
            if group not in known:
                self._check("group", group, others, "group {new} looks like the group {old}")
        for group in known.intersection(wanted):
            self._remember(("group", tenant, group))

    def _remember(self, key: tuple[str, str, str]) -> None:
        if len(self._passed) >= _REMEMBERED:
            self._passed.clear()
        self._passed.add(key)

    def _check(self, kind: str, name: str, existing: Iterable[str], message: str) -> None:
        existing = set(existing)
        if name in existing:
            return
        try:
            check_new_name(kind, name)
        except InvalidValue as exc:
            raise LookalikeName(str(exc)) from None
        old = lookalike(name, sorted(existing))
        if old is not None:
            raise LookalikeName(message.format(new=repr(name), old=repr(old)))

    def _known_tenant(self, tenant: str) -> bool:
        return bool(self._list_users(tenant)) or bool(self._list_sources(tenant))

    def _list_users(self, tenant: str | None) -> Sequence[User]:
        return self._users.list(tenant) if self._users is not None else ()

    def _list_sources(self, tenant: str | None) -> Sequence[Source]:
        return self._sources.list(tenant) if self._sources is not None else ()
