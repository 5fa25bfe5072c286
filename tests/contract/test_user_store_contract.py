"""One contract for the UserStore port, run against SQLite, PostgreSQL and the in-memory fake.

Users are keyed by name across tenants, found by the hash of their token,
disabled in place, and listed by name without any token material.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.memory import InMemoryUsers
from citadel.adapters.postgres import database as postgres
from citadel.adapters.postgres.users import PostgresUsers
from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.adapters.sqlite.users import SqliteUsers
from citadel.app.ports import UserRecord, UserStore
from citadel.domain.users import Role, User, UserStatus


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UserStore]:
    if request.param == "sqlite":
        db = Database(tmp_path / "contract" / "library.db")
        yield SqliteUsers(db)
        db.close()
    elif request.param == "postgresql":
        # A fresh database of its own (tests/postgres.py); skips saying why without a server.
        pg = postgres.Database(request.getfixturevalue("postgres_url"))
        yield PostgresUsers(pg)
        pg.close()
    else:
        yield InMemoryUsers()


def user(
    name: str = "ada",
    *,
    tenant: str = "acme",
    role: Role = Role.READER,
    groups: frozenset[str] = frozenset({"ops", "sre"}),
) -> User:
    return User(
        name=name,
        tenant=tenant,
        role=role,
        groups=groups,
        status=UserStatus.ACTIVE,
        created_at="2026-01-01T00:00:00+00:00",
    )


def test_an_added_user_reads_back_whole(store: UserStore) -> None:
    ada = user(role=Role.LIBRARIAN)
    assert store.add(ada, "hash-ada")
    assert store.get("ada") == ada
    assert store.by_token("hash-ada") == UserRecord(ada, "hash-ada")


def test_unknown_names_and_hashes_are_none(store: UserStore) -> None:
    store.add(user(), "hash-ada")
    assert store.get("bob") is None
    assert store.get("ADA") is None, "names compare exactly"
    assert store.by_token("hash-bob") is None


def test_a_taken_name_is_refused_and_nothing_changes(store: UserStore) -> None:
    ada = user()
    assert store.add(ada, "hash-ada")
    assert not store.add(user(tenant="globex", role=Role.ADMIN), "hash-other")
    assert store.get("ada") == ada
    assert store.by_token("hash-other") is None
    assert store.by_token("hash-ada") == UserRecord(ada, "hash-ada")


def test_status_changes_in_place_and_keeps_the_token(store: UserStore) -> None:
    ada = user()
    store.add(ada, "hash-ada")
    disabled = store.set_status("ada", UserStatus.DISABLED)
    assert disabled == dataclasses.replace(ada, status=UserStatus.DISABLED)
    assert store.get("ada") == disabled
    assert store.by_token("hash-ada") == UserRecord(disabled, "hash-ada")
    # Idempotent, and reversible by the store (the service only ever disables).
    assert store.set_status("ada", UserStatus.DISABLED) == disabled
    assert store.set_status("ada", UserStatus.ACTIVE) == ada


def test_setting_the_status_of_an_unknown_user_is_a_key_error(store: UserStore) -> None:
    with pytest.raises(KeyError):
        store.set_status("nobody", UserStatus.DISABLED)


def test_a_record_holds_the_user_and_its_current_token_hash(store: UserStore) -> None:
    ada = user()
    store.add(ada, "hash-ada")
    assert store.record("ada") == UserRecord(ada, "hash-ada")
    assert store.record("nobody") is None


def test_a_new_token_hash_replaces_the_old_one_at_once(store: UserStore) -> None:
    ada, bo = user(), user("bo")
    store.add(ada, "hash-ada")
    store.add(bo, "hash-bo")
    assert store.set_token("ada", "hash-ada-2") == ada
    assert store.by_token("hash-ada") is None
    assert store.by_token("hash-ada-2") == UserRecord(ada, "hash-ada-2")
    assert store.record("ada") == UserRecord(ada, "hash-ada-2")
    # Another user's hash is refused and nothing changes.
    with pytest.raises(ValueError, match="already registered"):
        store.set_token("ada", "hash-bo")
    assert store.record("ada") == UserRecord(ada, "hash-ada-2")
    assert store.by_token("hash-bo") == UserRecord(bo, "hash-bo")
    with pytest.raises(KeyError):
        store.set_token("nobody", "hash-x")


def test_list_is_by_name_and_filters_by_tenant(store: UserStore) -> None:
    for name, tenant in [("cy", "acme"), ("ada", "acme"), ("bo", "globex")]:
        store.add(user(name, tenant=tenant), f"hash-{name}")
    assert [u.name for u in store.list()] == ["ada", "bo", "cy"]
    assert [u.name for u in store.list("acme")] == ["ada", "cy"]
    assert [u.name for u in store.list("globex")] == ["bo"]
    assert list(store.list("nobody")) == []


def test_empty_groups_round_trip(store: UserStore) -> None:
    solo = user("solo", groups=frozenset())
    store.add(solo, "hash-solo")
    assert store.get("solo") == solo


def test_sqlite_users_share_the_library_file_without_bumping_its_generation(
    tmp_path: Path,
) -> None:
    library = SqliteLibrary(tmp_path / "library.db")
    try:
        users = SqliteUsers(library.database)
        before = library.database.generation()
        users.add(user(), "hash-ada")
        users.set_status("ada", UserStatus.DISABLED)
        assert library.database.generation() == before, "user writes leave library caches alone"
    finally:
        library.close()
    reopened = Database(tmp_path / "library.db")
    try:
        assert SqliteUsers(reopened).get("ada") is not None
    finally:
        reopened.close()


def test_an_ended_session_is_remembered_until_it_would_have_expired(store: UserStore) -> None:
    assert not store.session_ended("s1")
    store.end_session("s1", expires_at=1_060, now=1_000)
    store.end_session("s2", expires_at=2_000, now=1_000)
    assert store.session_ended("s1") and store.session_ended("s2")
    assert not store.session_ended("s3"), "only the sessions that were signed out"
    # Past s1's expiry, the next sign-out drops its record (the cookie is dead anyway)...
    store.end_session("s3", expires_at=3_000, now=1_061)
    assert not store.session_ended("s1")
    # ...but never a live one's: that would revive a signed-out session.
    assert store.session_ended("s2") and store.session_ended("s3")


def test_ended_sessions_survive_a_reopened_database(tmp_path: Path) -> None:
    path = tmp_path / "library.db"
    db = Database(path)
    SqliteUsers(db).end_session("s1", expires_at=2_000, now=1_000)
    db.close()
    again = Database(path)
    assert SqliteUsers(again).session_ended("s1")
    again.close()


def test_an_external_user_is_found_by_issuer_and_subject_only(store: UserStore) -> None:
    ada = user()
    assert store.add_external(ada, "hash-ada", "https://id.example", "s-1")
    assert store.by_identity("https://id.example", "s-1") == ada
    assert store.get("ada") == ada
    assert store.record("ada") == UserRecord(ada, "hash-ada")
    assert store.by_identity("https://id.example", "s-2") is None
    assert store.by_identity("https://other.example", "s-1") is None
    store.add(user("bo"), "hash-bo")
    assert store.by_identity("https://id.example", "bo") is None, "token users have none"


def test_a_taken_name_or_identity_adds_nothing(store: UserStore) -> None:
    store.add(user("ada"), "hash-ada")
    assert not store.add_external(user("ada"), "hash-x", "https://id.example", "s-1")
    assert store.by_identity("https://id.example", "s-1") is None
    assert store.add_external(user("bo"), "hash-bo", "https://id.example", "s-1")
    assert not store.add_external(user("cy"), "hash-cy", "https://id.example", "s-1")
    assert store.get("cy") is None
    assert store.by_token("hash-cy") is None
    assert store.by_identity("https://id.example", "s-1") == user("bo")


def test_membership_changes_tenant_and_groups_only(store: UserStore) -> None:
    ada = user(role=Role.LIBRARIAN)
    store.add_external(ada, "hash-ada", "https://id.example", "s-1")
    moved = store.set_membership("ada", "globex", frozenset({"x"}))
    assert moved == dataclasses.replace(ada, tenant="globex", groups=frozenset({"x"}))
    assert store.by_identity("https://id.example", "s-1") == moved
    assert [u.name for u in store.list("globex")] == ["ada"]
    assert store.by_token("hash-ada") == UserRecord(moved, "hash-ada")
    with pytest.raises(KeyError):
        store.set_membership("nobody", "acme", frozenset())


def test_a_sign_in_link_is_taken_once_and_not_after_it_expires(store: UserStore) -> None:
    store.add(user(), "hash-ada")
    store.add_signin_link("link-1", "ada", expires_at=1_900)
    store.add_signin_link("link-2", "ada", expires_at=1_100)
    assert store.take_signin_link("link-1", now=1_000) == "ada"
    assert store.take_signin_link("link-1", now=1_000) is None, "used once"
    assert store.take_signin_link("link-2", now=1_100) is None, "expired at its expiry"
    assert store.take_signin_link("unknown", now=1_000) is None
    store.add_signin_link("link-3", "gone", expires_at=1_900)
    assert store.take_signin_link("link-3", now=1_000) is None, "its user is unknown"
