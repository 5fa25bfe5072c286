"""The preconditions of a new version and of a metadata update (``domain.source_writes``),
and how ``refuse_write`` raises them: each condition, their order, their words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from citadel.app.errors import VersionConflict, refuse_write
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.source_writes import (
    Refusal,
    StoredSource,
    WriteRefused,
    commit_refusal,
    update_refusal,
)

SCOPE = AccessScope("acme", frozenset({"staff"}))


def source(
    source_id: str = "src-a",
    *,
    revision: int = 3,
    acl_groups: frozenset[str] = frozenset(),
    deleted: bool = False,
) -> Source:
    return Source(
        source_id=source_id,
        tenant="acme",
        title="T",
        acl_groups=acl_groups,
        deleted=deleted,
        revision=revision,
    )


def version(number: int, sha256: str = "c0ffee") -> SourceVersion:
    return SourceVersion("src-a", number, sha256, "markdown", "v1", 1, 1, 1, "2025-01-01")


def live(current_version: int = 1, revision: int = 3) -> StoredSource:
    return StoredSource(current_version=current_version, deleted=False, revision=revision)


def reason(refused: WriteRefused | None) -> Refusal | None:
    return None if refused is None else refused.reason


def test_a_new_source_takes_version_1_only() -> None:
    assert commit_refusal(source(), version(1), None) is None
    assert reason(commit_refusal(source(), version(2), None)) is Refusal.NEWER_VERSION


def test_a_stored_source_takes_the_next_version_at_the_revision_read() -> None:
    assert commit_refusal(source(), version(2), live()) is None
    assert reason(commit_refusal(source(), version(1), live())) is Refusal.NEWER_VERSION
    assert reason(commit_refusal(source(), version(3), live())) is Refusal.NEWER_VERSION
    assert reason(commit_refusal(source(revision=2), version(2), live())) is Refusal.CHANGED


def test_a_deleted_source_takes_no_version() -> None:
    tombstone = StoredSource(current_version=1, deleted=True, revision=3)
    assert reason(commit_refusal(source(), version(2), tombstone)) is Refusal.NOT_WRITABLE


def test_the_checks_run_in_order_deleted_revision_version_content() -> None:
    """Each refusal is the first condition that fails, whatever fails after it."""
    holder = source("src-b")
    everything_wrong = StoredSource(current_version=5, deleted=True, revision=9)
    refused = commit_refusal(
        source(), version(1), everything_wrong, unique_in=SCOPE, holders=[holder]
    )
    assert reason(refused) is Refusal.NOT_WRITABLE
    stale_and_behind = StoredSource(current_version=5, deleted=False, revision=9)
    refused = commit_refusal(
        source(), version(1), stale_and_behind, unique_in=SCOPE, holders=[holder]
    )
    assert reason(refused) is Refusal.CHANGED
    refused = commit_refusal(source(), version(1), live(), unique_in=SCOPE, holders=[holder])
    assert reason(refused) is Refusal.NEWER_VERSION
    refused = commit_refusal(source(), version(2), live(), unique_in=SCOPE, holders=[holder])
    assert reason(refused) is Refusal.CONTENT_HELD


def test_content_is_held_only_by_another_source_the_scope_allows() -> None:
    def refusal(*holders: Source, scope: AccessScope | None = SCOPE) -> Refusal | None:
        return reason(commit_refusal(source(), version(1), None, unique_in=scope, holders=holders))

    assert refusal() is None
    assert refusal(source("src-b")) is Refusal.CONTENT_HELD
    assert refusal(source("src-b", acl_groups=frozenset({"staff"}))) is Refusal.CONTENT_HELD
    assert refusal(source()) is None  # the source itself holds it
    assert refusal(source("src-b", acl_groups=frozenset({"board"}))) is None  # unseen
    assert refusal(source("src-b", deleted=True)) is None
    other_tenant = Source(source_id="src-b", tenant="other", title="T")
    assert refusal(other_tenant) is None
    assert refusal(source("src-b"), scope=None) is None  # a named id may share content


def test_holders_are_read_only_when_the_earlier_checks_pass() -> None:
    def never() -> Iterator[Source]:
        raise AssertionError("read the holders")
        yield  # pragma: no cover

    for stored, number in ((None, 2), (live(), 1), (StoredSource(1, True, 3), 2)):
        assert commit_refusal(source(), version(number), stored, unique_in=SCOPE, holders=never())


def test_an_update_needs_a_live_source_at_the_revision_read() -> None:
    assert update_refusal(source(), live()) is None
    assert reason(update_refusal(source(), None)) is Refusal.GONE
    assert reason(update_refusal(source(), StoredSource(1, True, 3))) is Refusal.GONE
    assert reason(update_refusal(source(), StoredSource(1, True, 4))) is Refusal.GONE
    assert reason(update_refusal(source(revision=2), live())) is Refusal.CHANGED


@pytest.mark.parametrize(
    ("refused", "message"),
    [
        (WriteRefused(Refusal.NOT_WRITABLE, "src-a"), "source src-a is not writable"),
        (WriteRefused(Refusal.CHANGED, "src-a"), "source src-a changed since it was read"),
        (WriteRefused(Refusal.NEWER_VERSION, "src-a"), "source src-a has a newer version"),
        (WriteRefused(Refusal.CONTENT_HELD, "src-a"), "another source holds this content now"),
    ],
)
def test_refuse_write_raises_a_version_conflict_in_these_words(
    refused: WriteRefused, message: str
) -> None:
    with pytest.raises(VersionConflict) as raised:
        refuse_write(refused)
    assert raised.value.args == (message,)


def test_refuse_write_raises_key_error_for_a_gone_source_and_nothing_for_none() -> None:
    with pytest.raises(KeyError) as raised:
        refuse_write(WriteRefused(Refusal.GONE, "src-a"))
    assert raised.value.args == ("src-a",)
    refuse_write(None)
