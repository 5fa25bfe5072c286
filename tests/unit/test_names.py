"""domain.names: when two user, tenant or group names look alike; app.names: the check."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from citadel.app.errors import LookalikeName
from citadel.app.names import NameRegister
from citadel.domain.errors import InvalidValue
from citadel.domain.names import check_new_name, lookalike, skeleton, skeletons
from citadel.domain.users import Role, User, UserStatus


@pytest.mark.parametrize(
    ("new", "existing"),
    [
        ("IibA", "libA"),  # a capital I passes for l: the skeleton is taken before case folds
        ("ɡ1", "g1"),  # Latin script g
        ("ｇ1", "g1"),  # fullwidth (NFKC)
        ("ɡ1", "ｇ1"),
        ("ADAM", "adam"),
        ("Ian", "ian"),  # and a capital I still folds to i
        ("Ian", "lan"),
        ("0ps", "ops"),
        ("OPS", "0ps"),
        ("l1b", "llb"),
        ("rnary", "mary"),
        ("vviki", "wiki"),
        ("\u0430dam", "adam"),  # Cyrillic а
        ("\u0410DAM", "adam"),  # Cyrillic А
        ("\u0406ib", "lib"),  # Cyrillic І, like a capital I
        ("\u0399ib", "lib"),  # Greek Ι
        ("\u03bf\u03c1s", "ops"),  # Greek ο, ρ
        ("\U0001d425ib", "lib"),  # mathematical bold l (NFKC)
    ],
)
def test_lookalikes_collide(new: str, existing: str) -> None:
    assert lookalike(new, [existing]) == existing
    assert lookalike(existing, [new]) == new


@pytest.mark.parametrize(
    ("one", "other"), [("lib", "iib"), ("ops", "sre"), ("adam", "adams"), ("g1", "g2"), ("m", "n")]
)
def test_different_looks_do_not_collide(one: str, other: str) -> None:
    assert lookalike(one, [other]) is None
    assert not skeletons(one) & skeletons(other)


def test_a_name_never_collides_with_itself() -> None:
    assert lookalike("libA", ["libA"]) is None
    assert skeleton("IibA") == skeleton("libA") == "liba"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ｇ1", "NFKC form: 'ｇ1' is written 'g1'"),
        ("e\u0301", "NFKC"),
        ("\u0430dam", "several scripts"),
        ("g\u03bf", "several scripts"),
    ],
)
def test_a_new_name_is_nfkc_and_of_one_script(name: str, message: str) -> None:
    with pytest.raises(InvalidValue, match=message):
        check_new_name("group", name)


@pytest.mark.parametrize("name", ["g1", "ɡ1", "ops-team", "café", "データ", "omega"])
def test_ordinary_names_pass(name: str) -> None:
    assert check_new_name("group", name) == name


class _CountingUsers:
    """Users of one tenant, counting how often the register lists them."""

    def __init__(self) -> None:
        self.lists = 0
        self.users = [
            User("ada", "acme", Role.READER, frozenset({"g1"}), UserStatus.ACTIVE, "2026-01-01")
        ]

    def list(self, tenant: str | None = None) -> Sequence[User]:
        self.lists += 1
        return [u for u in self.users if tenant is None or u.tenant == tenant]


def test_the_register_reads_the_store_once_for_names_that_exist() -> None:
    users = _CountingUsers()
    names = NameRegister(users)
    for _ in range(50):  # as an ingest of 50 files into one tenant and ACL
        names.check_tenant("acme")
        names.check_groups("acme", ["g1"])
    assert users.lists == 2
    with pytest.raises(LookalikeName, match="group 'ɡ1' looks like the group 'g1'"):
        names.check_groups("acme", ["ɡ1"])
    with pytest.raises(LookalikeName, match="tenant 'ACME'"):
        names.check_tenant("ACME")
    names.check_groups("acme", ["g2"])  # new, and unlike g1: accepted, not remembered
    before = users.lists
    names.check_groups("acme", ["g2"])
    assert users.lists > before
