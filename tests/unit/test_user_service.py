"""UserService: tokens shown once and stored hashed, authentication, ``--as`` actors."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.memory import InMemoryUsers
from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.users import SqliteUsers
from citadel.app.errors import (
    Forbidden,
    InvalidRequest,
    LastAdmin,
    NotFound,
    Unauthenticated,
    UserDisabled,
    UserExists,
)
from citadel.app.users import TOKEN_PREFIX, UserService, token_sha256
from citadel.domain.errors import InvalidValue
from citadel.domain.users import Actor, Role, User, UserStatus

CREATED = "2026-01-01T00:00:00+00:00"


@pytest.fixture
def service() -> UserService:
    return UserService(InMemoryUsers(), FixedClock(CREATED))


@pytest.fixture
def sqlite_home(tmp_path: Path) -> Iterator[tuple[UserService, Path]]:
    path = tmp_path / "library.db"
    db = Database(path)
    yield UserService(SqliteUsers(db), FixedClock(CREATED)), path
    db.close()


def test_add_returns_the_user_and_a_fresh_prefixed_token(service: UserService) -> None:
    user, token = service.add("ada", Role.LIBRARIAN, "acme", ["ops", "sre"])
    assert user == User(
        name="ada",
        tenant="acme",
        role=Role.LIBRARIAN,
        groups=frozenset({"ops", "sre"}),
        status=UserStatus.ACTIVE,
        created_at=CREATED,
    )
    assert token.startswith(TOKEN_PREFIX)
    assert len(token) >= len(TOKEN_PREFIX) + 43, "32 random bytes, base64url"
    _, other = service.add("bob", Role.READER, "acme")
    assert other != token


def test_the_token_is_shown_once_and_never_again(service: UserService) -> None:
    user, token = service.add("ada", Role.READER, "acme")
    assert token not in repr(user)
    assert token not in repr(service.get("ada"))
    assert all(token not in repr(u) for u in service.list())
    assert not any("token" in f.name for f in dataclasses.fields(User))


def test_sqlite_stores_only_the_hash_of_the_token(
    sqlite_home: tuple[UserService, Path],
) -> None:
    service, path = sqlite_home
    _, token = service.add("ada", Role.READER, "acme", ["ops"])
    assert service.authenticate(token).user_id == "ada"
    stored = b"".join(p.read_bytes() for p in path.parent.iterdir() if p.is_file())
    assert token.encode() not in stored
    assert token.removeprefix(TOKEN_PREFIX).encode() not in stored
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored


def test_authenticate_gives_the_users_actor(service: UserService) -> None:
    _, token = service.add("ada", Role.LIBRARIAN, "acme", ["ops"])
    assert service.authenticate(token) == Actor(
        user_id="ada", tenant="acme", role=Role.LIBRARIAN, groups=frozenset({"ops"})
    )


@pytest.mark.parametrize("token", ["", "ctd_", "ctd_not-a-token", "not-even-prefixed"])
def test_unknown_tokens_are_refused(service: UserService, token: str) -> None:
    service.add("ada", Role.READER, "acme")
    with pytest.raises(Unauthenticated, match="unknown API token"):
        service.authenticate(token)


def test_a_token_hash_is_not_a_token(service: UserService) -> None:
    _, token = service.add("ada", Role.READER, "acme")
    with pytest.raises(Unauthenticated):
        service.authenticate(token_sha256(token))


def test_disabled_users_are_refused_by_token_and_by_name(service: UserService) -> None:
    _, token = service.add("ada", Role.ADMIN, "acme")
    service.add("keeper", Role.ADMIN, "acme")  # the tenant keeps an enabled admin
    disabled = service.disable("ada")
    assert disabled.status is UserStatus.DISABLED
    assert service.get("ada").status is UserStatus.DISABLED
    with pytest.raises(UserDisabled, match="user ada is disabled"):
        service.authenticate(token)
    with pytest.raises(UserDisabled, match="user ada is disabled"):
        service.actor("ada")
    # Disabling twice is harmless.
    assert service.disable("ada") == disabled


def test_a_disabled_user_can_be_enabled_with_its_token(service: UserService) -> None:
    _, token = service.add("ada", Role.ADMIN, "acme")
    service.add("keeper", Role.ADMIN, "acme")  # the tenant keeps an enabled admin
    service.disable("ada")
    enabled = service.enable("ada")
    assert enabled.status is UserStatus.ACTIVE
    assert service.authenticate(token).user_id == "ada"
    assert service.enable("ada") == enabled  # twice is harmless
    with pytest.raises(NotFound, match="no user bob"):
        service.enable("bob")


def test_rotation_replaces_the_token_and_ends_the_old_ones_sessions(
    service: UserService,
) -> None:
    _, old = service.add("ada", Role.READER, "acme")
    service.add("bo", Role.READER, "acme")
    stamp = service.stamp(old)
    assert service.session_actor("ada", stamp).user_id == "ada"
    user, new = service.rotate("ada")
    assert user.name == "ada" and new != old and new.startswith("ctd_")
    with pytest.raises(Unauthenticated, match="unknown API token"):
        service.authenticate(old)
    assert service.authenticate(new).user_id == "ada"
    with pytest.raises(Unauthenticated, match="session ended"):
        service.session_actor("ada", stamp)
    assert service.session_actor("ada", service.stamp(new)).user_id == "ada"
    # A stamp is bound to its user: bo's session cannot pass for ada's.
    with pytest.raises(Unauthenticated):
        service.session_actor("ada", service.stamp(service.rotate("bo")[1]))
    with pytest.raises(NotFound, match="no user cy"):
        service.rotate("cy")


def test_a_disabled_users_token_can_be_rotated_and_acts_once_enabled(
    service: UserService,
) -> None:
    service.add("ada", Role.READER, "acme")
    service.disable("ada")
    user, token = service.rotate("ada")
    assert user.status is UserStatus.DISABLED
    with pytest.raises(UserDisabled):
        service.authenticate(token)
    service.enable("ada")
    assert service.authenticate(token).user_id == "ada"


def test_actor_by_name(service: UserService) -> None:
    service.add("ada", Role.READER, "acme", ["ops"])
    assert service.actor("ada") == Actor(user_id="ada", tenant="acme", groups=frozenset({"ops"}))
    with pytest.raises(Unauthenticated, match="no user bob"):
        service.actor("bob")


def test_unknown_users_cannot_be_disabled_or_shown(service: UserService) -> None:
    with pytest.raises(NotFound, match="no user bob"):
        service.disable("bob")
    with pytest.raises(NotFound, match="no user bob"):
        service.get("bob")


def test_a_duplicate_name_is_refused_even_in_another_tenant(service: UserService) -> None:
    _, token = service.add("ada", Role.READER, "acme")
    with pytest.raises(UserExists, match="a user named ada already exists"):
        service.add("ada", Role.ADMIN, "globex")
    assert service.authenticate(token).tenant == "acme"
    assert [u.tenant for u in service.list()] == ["acme"]


@pytest.mark.parametrize(
    ("name", "tenant", "groups", "message"),
    [
        ("", "acme", (), "non-empty"),
        ("a b", "acme", (), "whitespace"),
        ("tab\there", "acme", (), "whitespace"),
        ("bell\x07", "acme", (), "control"),
        ("zero\u200bwidth", "acme", (), "control"),
        ("x" * 65, "acme", (), "at most 64"),
        ("ada", "", (), "tenant needs a non-empty name"),
        ("ada", "ac me", (), "tenant name may not contain whitespace"),
        ("ada", "acme", ("ok", "not ok"), "group name may not contain whitespace"),
        ("ada", "acme", ("",), "group needs a non-empty name"),
        ("ada", "acme", ("a,b",), "comma"),
    ],
)
def test_bad_names_are_refused(
    service: UserService, name: str, tenant: str, groups: tuple[str, ...], message: str
) -> None:
    with pytest.raises(InvalidRequest, match=message):
        service.add(name, Role.READER, tenant, groups)
    assert list(service.list()) == []


def test_a_name_of_64_characters_is_fine(service: UserService) -> None:
    user, _ = service.add("é" * 64, Role.READER, "acme")
    assert service.get("é" * 64) == user


def test_the_domain_refuses_invalid_users_too() -> None:
    with pytest.raises(InvalidValue):
        User(
            name="a\nb",
            tenant="acme",
            role=Role.READER,
            groups=frozenset(),
            status=UserStatus.ACTIVE,
            created_at=CREATED,
        )


# --- confirming an actor a caller asserts (the gRPC services) ----------------


def test_confirm_gives_the_stored_actor_for_a_genuine_assertion(service: UserService) -> None:
    service.add("ada", Role.LIBRARIAN, "acme", ["ops", "sre"])
    genuine = service.actor("ada")
    assert service.confirm(genuine) == genuine
    # Claiming less than the store grants runs with less, never with more.
    fewer = dataclasses.replace(genuine, groups=frozenset({"ops"}))
    assert service.confirm(fewer) == fewer


@pytest.mark.parametrize(
    ("asserted", "message"),
    [
        (Actor("mallory", "acme", Role.ADMIN), "not registered"),
        (Actor("rita", "acme", Role.READER, groups=frozenset({"ops"})), "not in group"),
        (Actor("dora", "acme", Role.READER), "disabled"),
        (Actor("otto", "acme", Role.ADMIN), "tenant acme"),
        (Actor("otto", "globex", Role.ADMIN), "role admin"),
        (Actor("rita", "acme", Role.LIBRARIAN), "role librarian"),
        (Actor("rita", "acme", Role.READER, UserStatus.DISABLED), "disabled"),
        (Actor("local", "acme", Role.ADMIN), "not registered"),  # the CLI's administrator
    ],
)
def test_confirm_refuses_what_the_store_does_not_grant(
    service: UserService, asserted: Actor, message: str
) -> None:
    service.add("rita", Role.READER, "acme")
    service.add("dora", Role.READER, "acme")
    service.disable("dora")
    service.add("otto", Role.READER, "globex")
    with pytest.raises(Forbidden, match=message):
        service.confirm(asserted)


@pytest.mark.parametrize(
    "name",
    ["a/b", "a\\b", "x%2Fy", ".", "..", "-", "e\u0301", "\u0430dam"],  # NFD é; Cyrillic а
)
def test_a_new_name_the_api_cannot_address_or_a_reader_could_mistake_is_refused(
    service: UserService, name: str
) -> None:
    # a/b was accepted and then could not be disabled over HTTP (/v1/users/a%2Fb/...): a
    # hostile review; "-" is the logs' no-user placeholder.
    with pytest.raises(InvalidRequest):
        service.add(name, Role.READER, "default")
    assert service.list() == []


@pytest.mark.parametrize(
    "look_alike", ["ADAM", "Adam", "\uff41\uff44\uff41\uff4d", "\u0430d\u0430m"]
)
def test_a_new_name_that_looks_like_an_existing_one_is_refused(
    service: UserService, look_alike: str
) -> None:
    service.add("adam", Role.READER, "default")
    with pytest.raises((UserExists, InvalidRequest)):
        service.add(look_alike, Role.ADMIN, "other")
    assert [u.name for u in service.list()] == ["adam"]
    service.add("adams", Role.READER, "default")  # a different look is fine


def test_the_last_enabled_admin_of_a_tenant_is_never_disabled(service: UserService) -> None:
    service.add("root", Role.ADMIN, "acme")
    service.add("ada", Role.READER, "acme")
    service.add("other-root", Role.ADMIN, "globex")
    with pytest.raises(LastAdmin, match="root is the last enabled admin of tenant acme"):
        service.disable("root")
    assert service.get("root").active
    assert service.disable("ada").status is UserStatus.DISABLED
    service.add("boss", Role.ADMIN, "acme")
    assert service.disable("root").status is UserStatus.DISABLED
    with pytest.raises(LastAdmin):
        service.disable("boss")
    # Disabling a disabled admin again stays harmless; enabling it lifts the rule.
    assert service.disable("root").status is UserStatus.DISABLED
    service.enable("root")
    assert service.disable("boss").status is UserStatus.DISABLED
    with pytest.raises(LastAdmin, match="tenant globex"):
        service.disable("other-root")


def test_an_admin_acting_through_an_interface_never_disables_itself(
    service: UserService,
) -> None:
    service.add("root", Role.ADMIN, "acme")
    service.add("boss", Role.ADMIN, "acme")
    root = service.actor("root")
    with pytest.raises(LastAdmin, match="you cannot disable yourself"):
        service.disable("root", by=root)
    assert service.disable("boss", by=root).status is UserStatus.DISABLED


class _RacingUsers(InMemoryUsers):
    """A store where another admin is disabled between this disable's check and its write
    (another request or server doing the same at the same time)."""

    def __init__(self, other: str) -> None:
        super().__init__()
        self.other: str | None = other

    def set_status(self, name: str, status: UserStatus) -> User:
        if self.other is not None and status is UserStatus.DISABLED:
            other, self.other = self.other, None
            super().set_status(other, UserStatus.DISABLED)
        return super().set_status(name, status)


def test_two_admins_disabled_at_once_leave_the_tenant_an_admin() -> None:
    store = _RacingUsers(other="boss")
    service = UserService(store, FixedClock(CREATED))
    service.add("root", Role.ADMIN, "acme")
    service.add("boss", Role.ADMIN, "acme")
    with pytest.raises(LastAdmin, match="at the same time"):
        service.disable("root")
    assert service.get("root").active and not service.get("boss").active
