"""UserService.sign_in_external and one-time sign-in links, over the in-memory store."""

from __future__ import annotations

from dataclasses import replace

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.memory import InMemoryUsers
from citadel.app.errors import Unauthenticated, UserDisabled
from citadel.app.users import UserService
from citadel.domain.identity import ExternalIdentity
from citadel.domain.users import Role

ADA = ExternalIdentity(
    issuer="https://id.example",
    subject="s-1",
    email="ada@example.com",
    name="ada",
    groups=frozenset({"ops"}),
    tenant="acme",
)


def service(clock: FixedClock | None = None) -> tuple[UserService, InMemoryUsers]:
    store = InMemoryUsers()
    return UserService(store, clock or FixedClock()), store


def test_first_sign_in_creates_a_reader_keyed_by_issuer_and_subject() -> None:
    users, store = service()
    actor = users.sign_in_external(ADA)
    assert (actor.user_id, actor.tenant, actor.role) == ("ada", "acme", Role.READER)
    assert actor.groups == frozenset({"ops"})
    assert store.by_identity("https://id.example", "s-1") == users.get("ada")
    assert users.sign_in_external(ADA).user_id == "ada", "the same person, the same user"


def test_later_sign_ins_refresh_groups_and_tenant_but_never_the_role() -> None:
    users, _ = service()
    users.sign_in_external(ADA)
    moved = replace(ADA, groups=frozenset({"sre"}), tenant="globex")
    actor = users.sign_in_external(moved)
    assert (actor.tenant, actor.groups, actor.role) == ("globex", frozenset({"sre"}), Role.READER)
    assert users.get("ada").tenant == "globex"


def test_a_role_granted_in_citadel_stays_whatever_the_claims_say() -> None:
    users, store = service()
    users.sign_in_external(ADA)
    admin = replace(store.get("ada"), role=Role.LIBRARIAN)
    store._users["ada"] = admin  # granted in citadel (the store's own record)
    assert users.sign_in_external(replace(ADA, groups=frozenset())).role is Role.LIBRARIAN


def test_the_same_email_at_another_subject_is_another_user() -> None:
    users, _ = service()
    users.sign_in_external(ADA)
    other = users.sign_in_external(replace(ADA, subject="s-2"))
    assert other.user_id == "ada-2", "never matched by email or name"
    elsewhere = users.sign_in_external(replace(ADA, issuer="https://other.example"))
    assert elsewhere.user_id == "ada-3"


def test_a_name_taken_by_a_token_user_is_not_taken_over() -> None:
    users, _ = service()
    users.add("ada", Role.ADMIN, "acme")
    actor = users.sign_in_external(ADA)
    assert actor.user_id == "ada-2" and actor.role is Role.READER
    assert users.get("ada").role is Role.ADMIN


def test_a_name_that_cannot_be_a_user_falls_back() -> None:
    users, _ = service()
    assert users.sign_in_external(replace(ADA, name="a/b")).user_id == "user-2"


def test_a_disabled_user_cannot_sign_in() -> None:
    users, _ = service()
    users.sign_in_external(ADA)
    users.disable("ada")
    with pytest.raises(UserDisabled):
        users.sign_in_external(ADA)


def test_rotating_ends_an_external_users_sessions() -> None:
    users, _ = service()
    users.sign_in_external(ADA)
    stamp = users.session_stamp_of("ada")
    assert users.session_actor("ada", stamp).user_id == "ada"
    users.rotate("ada")
    with pytest.raises(Unauthenticated):
        users.session_actor("ada", stamp)


def test_a_sign_in_link_works_once() -> None:
    users, _ = service()
    users.add("bo", Role.READER, "acme")
    secret = users.issue_link("bo")
    assert users.use_link(secret).user_id == "bo"
    with pytest.raises(Unauthenticated, match="used"):
        users.use_link(secret)
    with pytest.raises(Unauthenticated):
        users.use_link("not-a-link")


def test_a_sign_in_link_expires() -> None:
    clock = FixedClock("2026-01-01T00:00:00+00:00")
    users, _ = service(clock)
    users.add("bo", Role.READER, "acme")
    secret = users.issue_link("bo")
    clock.iso = "2026-01-01T00:15:00+00:00"
    with pytest.raises(Unauthenticated):
        users.use_link(secret)


def test_a_sign_in_link_of_a_disabled_user_is_refused() -> None:
    users, _ = service()
    users.add("bo", Role.READER, "acme")
    users.add("root", Role.ADMIN, "acme")
    secret = users.issue_link("bo")
    users.disable("bo")
    with pytest.raises(UserDisabled):
        users.use_link(secret)
