"""The preconditions of the two writes to a source: committing a new version, and
replacing its metadata (origin, title, ACL).

Each write's caller decided from an earlier read; the store reads the source again
inside the write's own transaction and asks the rule here whether that decision
still holds. The rule only answers (a ``WriteRefused``, or None): the store raises what
its port says (``app.errors.refuse_write``), so every store refuses the same writes,
in the same order, with the same words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from citadel.domain.source import AccessScope, Source, SourceVersion


@dataclass(frozen=True, slots=True)
class StoredSource:
    """What a write's transaction read of the stored source (its tenant's, of its id)."""

    current_version: int
    deleted: bool
    revision: int


class Refusal(Enum):
    """Why a write to a source is refused."""

    GONE = "gone"
    """No live source to update (never stored, or deleted)."""
    NOT_WRITABLE = "not_writable"
    """The stored source is a tombstone: it takes no new version."""
    CHANGED = "changed"
    """Its ACL, place or metadata changed after the caller read it: decide again."""
    NEWER_VERSION = "newer_version"
    """The version does not follow the stored current one: another writer was first."""
    CONTENT_HELD = "content_held"
    """Another live source the scope allows already holds this content."""


_MESSAGES = {
    Refusal.GONE: "{source_id}",
    Refusal.NOT_WRITABLE: "source {source_id} is not writable",
    Refusal.CHANGED: "source {source_id} changed since it was read",
    Refusal.NEWER_VERSION: "source {source_id} has a newer version",
    Refusal.CONTENT_HELD: "another source holds this content now",
}


@dataclass(frozen=True, slots=True)
class WriteRefused:
    """A refused write: why, and which source."""

    reason: Refusal
    source_id: str

    @property
    def message(self) -> str:
        """What the refusal says (for ``GONE``, the source id alone: a ``KeyError``'s)."""
        return _MESSAGES[self.reason].format(source_id=self.source_id)


def commit_refusal(
    source: Source,
    version: SourceVersion,
    stored: StoredSource | None,
    *,
    unique_in: AccessScope | None = None,
    holders: Iterable[Source] = (),
) -> WriteRefused | None:
    """Why ``version`` of ``source`` may not be committed now, or None when it may.

    ``stored``: the stored source of ``source.tenant`` and its id (None when there is
    none). ``holders``: the live sources of that tenant whose current version has
    ``version.content_sha256`` (read only with ``unique_in``). In this order: a stored
    source must be live, and at ``source.revision``; ``version`` must follow its
    current version (1 for a source not stored yet); with ``unique_in``, no other
    source that scope allows may hold the content.
    """
    if stored is not None and stored.deleted:
        return WriteRefused(Refusal.NOT_WRITABLE, source.source_id)
    if stored is not None and stored.revision != source.revision:
        return WriteRefused(Refusal.CHANGED, source.source_id)
    if version.version != (stored.current_version if stored else 0) + 1:
        return WriteRefused(Refusal.NEWER_VERSION, source.source_id)
    if unique_in is not None and any(
        other.source_id != source.source_id and unique_in.allows(other) for other in holders
    ):
        return WriteRefused(Refusal.CONTENT_HELD, source.source_id)
    return None


def update_refusal(source: Source, stored: StoredSource | None) -> WriteRefused | None:
    """Why the metadata of ``source`` may not replace the stored source's now, or None.

    A compare-and-swap on the revision: the stored source (of ``source.tenant`` and
    its id) must be live (else ``GONE``) and at ``source.revision``.
    """
    if stored is None or stored.deleted:
        return WriteRefused(Refusal.GONE, source.source_id)
    if stored.revision != source.revision:
        return WriteRefused(Refusal.CHANGED, source.source_id)
    return None
