"""domain.names: when two user, tenant or group names look alike."""

from __future__ import annotations

import pytest

from citadel.domain.errors import InvalidValue
from citadel.domain.names import check_new_name, lookalike, skeleton, skeletons


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
