"""An ID token's claims become an ExternalIdentity: (issuer, subject) as the key, groups
and tenant from configured (and nested) claims, never a role."""

from __future__ import annotations

import pytest

from citadel.domain.errors import InvalidValue
from citadel.domain.identity import ClaimNames, claim, map_claims

BASE = {"iss": "https://id.example", "sub": "248289761001", "email": "ada@example.com"}


def test_issuer_and_subject_are_the_key_and_the_email_only_a_hint_for_the_name() -> None:
    identity = map_claims({**BASE, "groups": ["ops", "sre"]}, ClaimNames())
    assert (identity.issuer, identity.subject) == ("https://id.example", "248289761001")
    assert identity.email == "ada@example.com"
    assert identity.name == "ada"
    assert identity.groups == frozenset({"ops", "sre"})
    assert identity.tenant == "default"


def test_preferred_username_wins_and_the_subject_is_the_last_resort() -> None:
    assert map_claims({**BASE, "preferred_username": "lovelace"}, ClaimNames()).name == "lovelace"
    bare = {"iss": "https://id.example", "sub": "abc"}
    assert map_claims(bare, ClaimNames()).name == "abc"


def test_nested_claims_name_groups_and_tenant() -> None:
    claims = {
        **BASE,
        "realm_access": {"roles": ["readers", "/platform"]},
        "org": {"id": "acme"},
    }
    names = ClaimNames(groups="realm_access.roles", tenant="org.id")
    identity = map_claims(claims, names)
    assert identity.groups == frozenset({"readers", "platform"})
    assert identity.tenant == "acme"


def test_a_claim_named_with_dots_is_found_whole() -> None:
    claims = {**BASE, "https://example.com/groups": ["x"]}
    assert claim(claims, "https://example.com/groups") == ["x"]
    names = ClaimNames(groups="https://example.com/groups")
    assert map_claims(claims, names).groups == frozenset({"x"})


def test_groups_citadel_cannot_hold_are_left_out() -> None:
    claims = {**BASE, "groups": ["ok", "two words", "a,b", 7, "x" * 65]}
    assert map_claims(claims, ClaimNames()).groups == frozenset({"ok"})
    assert map_claims({**BASE, "groups": "solo"}, ClaimNames()).groups == frozenset({"solo"})
    assert map_claims({**BASE, "groups": {"no": 1}}, ClaimNames()).groups == frozenset()


def test_a_missing_tenant_claim_is_the_default_and_a_bad_one_refused() -> None:
    names = ClaimNames(tenant="tenant", default_tenant="main")
    assert map_claims(BASE, names).tenant == "main"
    assert map_claims({**BASE, "tenant": ["globex"]}, names).tenant == "globex"
    with pytest.raises(InvalidValue):
        map_claims({**BASE, "tenant": "two words"}, names)


def test_claims_never_carry_a_role() -> None:
    identity = map_claims({**BASE, "role": "admin", "groups": ["admin"]}, ClaimNames())
    assert not hasattr(identity, "role")
    assert identity.groups == frozenset({"admin"}), "a group named admin is only a group"


@pytest.mark.parametrize("missing", ["iss", "sub"])
def test_no_issuer_or_subject_is_refused(missing: str) -> None:
    with pytest.raises(InvalidValue, match="issuer"):
        map_claims({k: v for k, v in BASE.items() if k != missing}, ClaimNames())
