"""LibraryService.set_acl: librarians and admins change who may read a source."""

from __future__ import annotations

import pytest

from citadel.adapters.memory import InMemoryLibrary
from citadel.app.errors import Forbidden, InvalidRequest, NotFound
from citadel.app.library import LibraryService
from citadel.domain.source import Source
from citadel.domain.users import Actor, Role
from tests.builders import Passage, commit

ADMIN = Actor(user_id="admin", tenant="acme", role=Role.ADMIN)
LIBRARIAN = Actor(user_id="lib", tenant="acme", role=Role.LIBRARIAN, groups=frozenset({"ops"}))
OPS_READER = Actor(user_id="ops", tenant="acme", groups=frozenset({"ops"}))
DEV_READER = Actor(user_id="dev", tenant="acme", groups=frozenset({"dev"}))


@pytest.fixture
def library() -> tuple[LibraryService, InMemoryLibrary]:
    lib = InMemoryLibrary()
    commit(
        lib,
        Source(source_id="runbook", tenant="acme", title="Runbook", acl_groups=frozenset({"ops"})),
        [Passage("Restart the queue workers one at a time.")],
    )
    return LibraryService(lib, lib), lib


def titles(service: LibraryService, actor: Actor) -> list[str]:
    return [s.title for s in service.list(actor)]


def test_an_admin_replaces_the_groups(library: tuple[LibraryService, InMemoryLibrary]) -> None:
    service, lib = library
    assert titles(service, DEV_READER) == []
    changed = service.set_acl("runbook", ["dev"], ADMIN)
    assert changed.acl_groups == frozenset({"dev"})
    assert lib.get("acme", "runbook") == changed
    assert titles(service, DEV_READER) == ["Runbook"]
    assert titles(service, OPS_READER) == []


def test_no_groups_opens_the_source_to_the_tenant(
    library: tuple[LibraryService, InMemoryLibrary],
) -> None:
    service, _ = library
    assert service.set_acl("runbook", [], LIBRARIAN).acl_groups == frozenset()
    assert titles(service, DEV_READER) == ["Runbook"]


def test_a_reader_may_not_change_an_acl(library: tuple[LibraryService, InMemoryLibrary]) -> None:
    service, lib = library
    with pytest.raises(Forbidden, match="only librarians and admins"):
        service.set_acl("runbook", [], OPS_READER)
    source = lib.get("acme", "runbook")
    assert source is not None and source.acl_groups == frozenset({"ops"})


def test_bad_groups_and_foreign_sources_are_refused(
    library: tuple[LibraryService, InMemoryLibrary],
) -> None:
    service, _ = library
    with pytest.raises(InvalidRequest, match="whitespace"):
        service.set_acl("runbook", ["two words"], ADMIN)
    with pytest.raises(NotFound):
        service.set_acl("runbook", ["dev"], Actor(user_id="x", tenant="globex", role=Role.ADMIN))
    with pytest.raises(NotFound):
        service.set_acl("no-such-source", ["dev"], ADMIN)
