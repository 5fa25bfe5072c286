"""One contract for the storage ports, run against every adapter (the in-memory fake included).

SourceRegistry, ChunkStore and LexicalIndex as their docstrings in
``citadel.app.ports`` describe them: versions are committed whole, old versions
stay addressable but leave search, and the access scope is applied inside search.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import pytest

from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.postgres.library import PostgresLibrary
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.errors import VersionConflict
from citadel.app.ports import ChunkStore, LexicalHit, LexicalIndex, SourceRegistry, UnitStore
from citadel.domain.document import Chunk
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source
from tests.builders import Passage, commit
from tests.old_schema import to_schema_4


class Library(SourceRegistry, ChunkStore, UnitStore, LexicalIndex, Protocol):
    """What both adapters are: all three storage ports in one object."""


@pytest.fixture(params=["sqlite", "postgresql", "memory"])
def library(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Library]:
    if request.param == "sqlite":
        sqlite = SqliteLibrary(tmp_path / "contract" / "library.db")
        yield sqlite
        sqlite.close()
    elif request.param == "postgresql":
        postgres = PostgresLibrary(request.getfixturevalue("postgres_url"))
        yield postgres
        postgres.close()
    else:
        yield InMemoryLibrary()


def source(
    source_id: str = "src-a",
    *,
    tenant: str = "acme",
    title: str = "Reliable Service Design",
    acl: frozenset[str] = frozenset(),
    origin: str = "/books/reliable.pdf",
) -> Source:
    return Source(
        source_id=source_id,
        tenant=tenant,
        title=title,
        authors=("Ann Author", "Bo Writer"),
        year=2021,
        tags=("reliability", "ops"),
        acl_groups=acl,
        canonical_url="https://books.example/reliable",
        origin=origin,
    )


SCOPE = AccessScope("acme", frozenset())
NO_FILTERS = SearchFilters()


def search(
    library: Library,
    *terms: str,
    scope: AccessScope = SCOPE,
    filters: SearchFilters = NO_FILTERS,
    limit: int = 20,
) -> list[LexicalHit]:
    return list(library.search(terms, scope, filters, limit))


def hit_ids(hits: list[LexicalHit]) -> set[str]:
    return {h.chunk_id for h in hits}


# -- SourceRegistry ----------------------------------------------------------------------


class TestSourceRegistry:
    def test_an_empty_library(self, library: Library) -> None:
        assert library.get("acme", "nope") is None
        assert list(library.versions("acme", "nope")) == []
        assert list(library.list()) == []
        assert list(library.list("acme")) == []
        assert list(library.matching("acme", content_sha256="0" * 64)) == []
        assert list(library.matching("acme", origin="/books/reliable.pdf")) == []

    def test_commit_then_get_versions_and_list(self, library: Library) -> None:
        stored, version, _ = commit(library, source(), [Passage("Retries are bounded.")])
        got = library.get("acme", "src-a")
        assert got == stored
        assert got is not None
        assert got.current_version == 1
        assert (got.authors, got.tags, got.year) == (
            ("Ann Author", "Bo Writer"),
            ("reliability", "ops"),
            2021,
        )
        assert got.canonical_url == "https://books.example/reliable"
        assert not got.deleted
        assert list(library.versions("acme", "src-a")) == [version]
        assert list(library.list("acme")) == [stored]
        assert list(library.list()) == [stored]
        assert list(library.list("other")) == []

    def test_metadata_round_trips_exactly(self, library: Library) -> None:
        odd = Source(
            source_id="src-odd",
            tenant="acme",
            title="Ünïcode — “quotes” and 'apostrophes'; DROP TABLE sources; --",
            acl_groups=frozenset({"staff", "ops"}),
            origin="/books/ünï code.md",
        )
        stored, _, _ = commit(library, odd, [Passage("Some text.")])
        assert library.get("acme", "src-odd") == stored
        assert stored.authors == () and stored.year is None and stored.canonical_url is None

    def test_list_is_live_sources_by_title_across_tenants(self, library: Library) -> None:
        b, _, _ = commit(library, source("src-1", title="Beta"), [Passage("one")])
        a, _, _ = commit(library, source("src-2", title="Alpha"), [Passage("two")])
        c, _, _ = commit(library, source("src-3", title="Gamma", tenant="other"), [Passage("x")])
        a2, _, _ = commit(library, source("src-0", title="Alpha"), [Passage("three")])
        assert list(library.list("acme")) == [a2, a, b]
        assert list(library.list()) == [a2, a, b, c]
        assert list(library.list("other")) == [c]

    def test_find_by_content_hash_and_by_origin_within_a_tenant(self, library: Library) -> None:
        stored, version, _ = commit(library, source(), [Passage("Retries are bounded.")])
        assert list(library.matching("acme", content_sha256=version.content_sha256)) == [stored]
        assert list(library.matching("acme", origin="/books/reliable.pdf")) == [stored]
        assert list(library.matching("other", content_sha256=version.content_sha256)) == []
        assert list(library.matching("other", origin="/books/reliable.pdf")) == []
        assert list(library.matching("acme", content_sha256="f" * 64)) == []
        assert list(library.matching("acme", origin="/books/elsewhere.pdf")) == []
        assert list(library.matching("acme")) == []

    def test_a_second_version_becomes_current(self, library: Library) -> None:
        _, v1, _ = commit(library, source(), [Passage("First edition text.")])
        stored, v2, _ = commit(
            library,
            source(title="Reliable Service Design, 2nd ed."),
            [Passage("Second.")],
            version=2,
        )
        assert v1.content_sha256 != v2.content_sha256
        got = library.get("acme", "src-a")
        assert got == stored
        assert got is not None and got.current_version == 2
        assert got.title == "Reliable Service Design, 2nd ed."
        assert list(library.versions("acme", "src-a")) == [v1, v2]  # oldest first
        # Only the current version's hash identifies the source now.
        assert list(library.matching("acme", content_sha256=v2.content_sha256)) == [stored]
        assert list(library.matching("acme", content_sha256=v1.content_sha256)) == []
        assert list(library.matching("acme", origin="/books/reliable.pdf")) == [stored]
        assert list(library.list("acme")) == [stored]

    def test_committing_an_existing_version_is_refused_and_changes_nothing(
        self, library: Library
    ) -> None:
        stored, version, chunks = commit(library, source(), [Passage("Original text.")])

        def again() -> None:
            commit(library, source(title="Hijacked"), [Passage("Replacement text.")])

        assert refused(again)
        assert library.get("acme", "src-a") == stored
        assert list(library.versions("acme", "src-a")) == [version]
        assert list(library.chunks("acme", "src-a", 1)) == chunks
        assert hit_ids(search(library, "original")) == {chunks[0].chunk_id}
        assert search(library, "replacement") == []

    def test_a_commit_that_lost_a_race_is_a_version_conflict_and_writes_nothing(
        self, library: Library
    ) -> None:
        """The preconditions of commit_version: what an ingest decided from its read
        must still hold when it writes, else VersionConflict and nothing changes."""
        stored, v1, chunks = commit(library, source(), [Passage("Original text.")])
        cases: list[Callable[[], object]] = [
            # Another writer made version 2 first: this version 3 skips one...
            lambda: commit(library, source(), [Passage("Skipping text.")], version=3),
            # ...and a version 1 of a stored source is stale.
            lambda: commit(library, source(), [Passage("Stale text.")], version=1),
            # Another tenant has no src-a of its own: a version 2 of it skips one too.
            lambda: commit(library, source(tenant="other"), [Passage("Other text.")], version=2),
            # The same content as another live source the scope reads (no id was named).
            lambda: commit(library, source("src-b"), [Passage("Original text.")], unique_in=SCOPE),
        ]
        for case in cases:
            with pytest.raises(VersionConflict):
                case()
        assert library.get("acme", "src-a") == stored
        assert library.get("acme", "src-b") is None
        assert library.get("other", "src-a") is None
        assert list(library.versions("acme", "src-a")) == [v1]
        assert hit_ids(search(library, "original")) == {chunks[0].chunk_id}
        assert search(library, "stale") == search(library, "skipping") == []

    def test_identical_content_is_unique_only_within_what_the_scope_reads(
        self, library: Library
    ) -> None:
        commit(library, source(acl=frozenset({"ops"})), [Passage("Restricted text.")])
        # A reader outside ``ops`` does not see src-a: to it the content is new.
        commit(library, source("src-b"), [Passage("Restricted text.")], unique_in=SCOPE)
        # A named id (no unique_in) may hold content another source holds.
        commit(library, source("src-c"), [Passage("Restricted text.")])
        assert [s.source_id for s in library.matching("acme", origin="/books/reliable.pdf")] == [
            "src-a",
            "src-b",
            "src-c",
        ]

    def test_writes_from_a_stale_read_are_conflicts_and_write_nothing(
        self, library: Library
    ) -> None:
        """Compare-and-swap on the revision: an ACL change made while an ingest ran is
        never overwritten by the ingest's commit, nor by a move read before it."""
        read, _, _ = commit(library, source(), [Passage("Original text.")])
        restricted = dataclasses.replace(read, acl_groups=frozenset({"board"}))
        library.update(restricted)  # another writer, after ``read`` was taken
        with pytest.raises(VersionConflict):
            commit(library, source(), [Passage("New text.")], version=2, revision=read.revision)
        with pytest.raises(VersionConflict):
            library.update(dataclasses.replace(read, origin="/books/elsewhere.pdf"))
        now = library.get("acme", "src-a")
        assert now is not None
        assert (now.acl_groups, now.origin, now.current_version) == (
            frozenset({"board"}),
            "/books/reliable.pdf",
            1,
        )
        library.delete("acme", "src-a")
        gone = library.get("acme", "src-a")
        assert gone is not None
        with pytest.raises(KeyError):
            library.update(dataclasses.replace(gone, title="Back"))

    def test_a_deleted_source_takes_no_new_version(self, library: Library) -> None:
        commit(library, source(), [Passage("Original text.")])
        library.delete("acme", "src-a")
        with pytest.raises(VersionConflict):
            commit(library, source(), [Passage("Revived text.")], version=2)
        with pytest.raises(VersionConflict):
            commit(library, source(), [Passage("Revived text.")], version=1)
        tombstone = library.get("acme", "src-a")
        assert tombstone is not None
        assert tombstone.deleted
        assert search(library, "revived") == []

    def test_update_replaces_metadata_and_leaves_versions_alone(self, library: Library) -> None:
        _, v1, _ = commit(library, source(), [Passage("First edition text.")])
        stored, v2, chunks = commit(library, source(), [Passage("Second text.")], version=2)
        moved = dataclasses.replace(
            stored,
            title="Kestrel Handbook",
            origin="/books/moved.pdf",
            acl_groups=frozenset({"staff"}),
        )
        library.update(moved)
        assert library.get("acme", "src-a") == moved
        assert list(library.versions("acme", "src-a")) == [v1, v2]
        assert list(library.chunks("acme", "src-a", 2)) == chunks
        assert list(library.matching("acme", origin="/books/moved.pdf")) == [moved]
        assert list(library.matching("acme", origin="/books/reliable.pdf")) == []
        assert list(library.matching("acme", content_sha256=v2.content_sha256)) == [moved]
        # Search sees the new title and the new ACL at once.
        staff = AccessScope("acme", frozenset({"staff"}))
        assert hit_ids(search(library, "kestrel", scope=staff)) == {chunks[0].chunk_id}
        assert search(library, "kestrel") == []
        assert search(library, "second") == []

    def test_every_change_to_a_source_moves_its_revision_on(self, library: Library) -> None:
        assert library.revisions(["src-a"]) == {}
        commit(library, source(), [Passage("First edition text.")])
        commit(library, source("src-b"), [Passage("Another book.")])
        seen = [library.revisions(["src-a", "src-b", "src-unknown"])]
        assert set(seen[0]) == {"src-a", "src-b"}
        stored, _, _ = commit(library, source(), [Passage("Second.")], version=2)
        seen.append(library.revisions(["src-a", "src-b"]))
        library.update(dataclasses.replace(stored, acl_groups=frozenset({"staff"})))
        seen.append(library.revisions(["src-a", "src-b"]))
        library.delete("acme", "src-a")
        seen.append(library.revisions(["src-a", "src-b"]))
        revisions_of_a = [s["src-a"] for s in seen]
        assert revisions_of_a == sorted(set(revisions_of_a)), "each change must move it on"
        assert {s["src-b"] for s in seen} == {seen[0]["src-b"]}, "other sources stay put"
        got = library.get("acme", "src-a")
        assert got is not None and got.revision == seen[-1]["src-a"]

    def test_locations_keep_where_a_source_was_before_a_move_or_a_new_url(
        self, library: Library
    ) -> None:
        stored, _, _ = commit(library, source(), [Passage("First edition text.")])
        commit(library, source("src-b", origin="/books/b.pdf"), [Passage("Other.")])
        commit(library, source("src-a", tenant="other"), [Passage("Theirs.")])
        library.update(dataclasses.replace(stored, origin="/shelf/reliable.pdf"))
        with pytest.raises(VersionConflict):  # a refused change records nothing
            library.update(dataclasses.replace(stored, origin="/never/there.pdf"))
        renamed = dataclasses.replace(
            source(origin="/shelf/reliable.pdf"), canonical_url="https://books.example/v2"
        )
        commit(library, renamed, [Passage("Second edition text.")], version=2)
        library.delete("acme", "src-a")
        got = {(x.source_id, x.kind, x.location, x.current) for x in library.locations("acme")}
        assert got == {
            ("src-a", "url", "https://books.example/v2", True),
            ("src-a", "origin", "/shelf/reliable.pdf", True),
            ("src-a", "origin", "/books/reliable.pdf", False),
            ("src-a", "url", "https://books.example/reliable", False),
            ("src-b", "url", "https://books.example/reliable", True),
            ("src-b", "origin", "/books/b.pdf", True),
        }
        listed = [(x.source_id, x.current) for x in library.locations("acme")]
        assert listed == sorted(listed, key=lambda x: (x[0], not x[1]))

    def test_update_of_an_unknown_or_deleted_source_is_refused(self, library: Library) -> None:
        stored, _, _ = commit(library, source(), [Passage("Text.")])
        with pytest.raises(KeyError):
            library.update(source("src-unknown"))
        library.delete("acme", "src-a")
        with pytest.raises(KeyError):
            library.update(dataclasses.replace(stored, title="Back from the dead"))
        tombstone = library.get("acme", "src-a")
        assert tombstone is not None and tombstone.deleted and tombstone.title == stored.title

    def test_delete_leaves_a_tombstone_and_takes_the_text(self, library: Library) -> None:
        stored, version, chunks = commit(library, source(), [Passage("Deleted secret text.")])
        _, _, kept = commit(
            library, source("src-b", origin="/books/kept.pdf"), [Passage("Kept secret text.")]
        )
        library.delete("acme", "src-a")
        tombstone = library.get("acme", "src-a")
        assert tombstone == dataclasses.replace(stored, deleted=True)
        assert [s.source_id for s in library.list()] == ["src-b"]
        assert list(library.matching("acme", content_sha256=version.content_sha256)) == []
        assert list(library.matching("acme", origin=stored.origin)) == []
        admin = AccessScope("acme", frozenset(), unrestricted=True)
        assert hit_ids(search(library, "secret", scope=admin)) == {kept[0].chunk_id}
        assert list(library.chunks("acme", "src-a", 1)) == []
        assert library.passages([chunks[0].chunk_id]) == {}
        assert [(v.version, v.retained) for v in library.versions("acme", "src-a")] == [(1, False)]
        with pytest.raises(KeyError):
            library.delete("acme", "src-a")
        with pytest.raises(KeyError):
            library.delete("acme", "src-unknown")

    def test_prune_drops_all_but_the_newest_versions_text(self, library: Library) -> None:
        _, _, c1 = commit(library, source(), [Passage("Edition one.")])
        _, _, c2 = commit(library, source(), [Passage("Edition two.")], version=2)
        _, _, c3 = commit(library, source(), [Passage("Edition three.")], version=3)
        assert library.prune("acme", "src-a", 2) == 1
        assert list(library.chunks("acme", "src-a", 1)) == []
        assert library.passages([c1[0].chunk_id]) == {}
        assert list(library.chunks("acme", "src-a", 2)) == c2
        assert list(library.chunks("acme", "src-a", 3)) == c3
        assert [(v.version, v.retained) for v in library.versions("acme", "src-a")] == [
            (1, False),
            (2, True),
            (3, True),
        ]
        assert library.prune("acme", "src-a", 2) == 0
        # The current version is never pruned, whatever ``keep`` says.
        assert library.prune("acme", "src-a", 0) == 1
        assert list(library.chunks("acme", "src-a", 3)) == c3
        assert hit_ids(search(library, "edition")) == {c3[0].chunk_id}


def refused(action: Callable[[], None]) -> bool:
    """True when ``action`` raised; which error is the adapter's own business."""
    try:
        action()
    except Exception:
        return True
    return False


# -- source ids are scoped to their tenant ----------------------------------------------


OTHER = AccessScope("other", frozenset())


class TestTenantScopedIds:
    """Two tenants may each have a source of one id: independent in every port."""

    def both(self, library: Library) -> tuple[list[Chunk], list[Chunk]]:
        _, _, ours = commit(library, source("guide"), [Passage("Acme restarts workers.")])
        _, _, theirs = commit(
            library,
            source("guide", tenant="other", title="Other Guide", acl=frozenset({"crew"})),
            [Passage("Other drains queues.")],
        )
        return ours, theirs

    def test_one_id_in_two_tenants_is_two_sources(self, library: Library) -> None:
        ours, theirs = self.both(library)
        acme, other = library.get("acme", "guide"), library.get("other", "guide")
        assert acme is not None and other is not None
        assert (acme.tenant, acme.title, acme.acl_groups) == (
            "acme",
            "Reliable Service Design",
            frozenset(),
        )
        assert (other.tenant, other.title, other.acl_groups) == (
            "other",
            "Other Guide",
            frozenset({"crew"}),
        )
        assert library.get("third", "guide") is None
        assert [s.tenant for s in library.list("acme")] == ["acme"]
        assert [s.tenant for s in library.list("other")] == ["other"]
        assert len(library.list()) == 2
        assert list(library.chunks("acme", "guide", 1)) == ours
        assert list(library.chunks("other", "guide", 1)) == theirs
        assert {c.chunk_id for c in ours}.isdisjoint(c.chunk_id for c in theirs)
        assert [v.version for v in library.versions("acme", "guide")] == [1]
        assert [v.version for v in library.versions("other", "guide")] == [1]
        passages = library.passages([ours[0].chunk_id, theirs[0].chunk_id])
        assert passages[ours[0].chunk_id].source.tenant == "acme"
        assert passages[theirs[0].chunk_id].source.tenant == "other"
        assert [x.source_id for x in library.matching("other", origin=other.origin)] == ["guide"]

    def test_search_of_one_tenant_never_finds_the_other_tenants_source_of_that_id(
        self, library: Library
    ) -> None:
        ours, theirs = self.both(library)
        by_id = SearchFilters(source_ids=frozenset({"guide"}))
        assert hit_ids(search(library, "restarts", "drains", filters=by_id)) == {ours[0].chunk_id}
        crew = AccessScope("other", frozenset({"crew"}))
        assert hit_ids(search(library, "restarts", "drains", scope=crew, filters=by_id)) == {
            theirs[0].chunk_id
        }
        assert search(library, "drains", scope=OTHER) == []  # their ACL holds inside "other"

    def test_versions_updates_and_deletion_stay_in_their_tenant(self, library: Library) -> None:
        ours, theirs = self.both(library)
        # A new version in acme: other's version 1 stays current and searchable.
        _, _, newer = commit(library, source("guide"), [Passage("Acme second.")], version=2)
        assert [v.version for v in library.versions("other", "guide")] == [1]
        crew = AccessScope("other", frozenset({"crew"}))
        assert hit_ids(search(library, "drains", scope=crew)) == {theirs[0].chunk_id}
        # An update of acme's record leaves other's alone.
        acme = library.get("acme", "guide")
        assert acme is not None
        library.update(dataclasses.replace(acme, title="Acme Renamed"))
        other = library.get("other", "guide")
        assert other is not None and other.title == "Other Guide"
        # Prune and delete in acme: other keeps its text.
        assert library.prune("acme", "guide", 1) == 1
        assert list(library.chunks("acme", "guide", 1)) == []
        assert list(library.chunks("other", "guide", 1)) == theirs
        before = library.revisions(["guide"], "other")
        library.delete("acme", "guide")
        gone = library.get("acme", "guide")
        assert gone is not None and gone.deleted
        still = library.get("other", "guide")
        assert still is not None and not still.deleted
        assert library.revisions(["guide"], "other") == before
        assert list(library.chunks("other", "guide", 1)) == theirs
        assert hit_ids(search(library, "drains", scope=crew)) == {theirs[0].chunk_id}
        assert library.passages([newer[0].chunk_id, ours[0].chunk_id]) == {}
        # A deleted id stays unavailable in its own tenant only.
        with pytest.raises(VersionConflict):
            commit(library, source("guide"), [Passage("Revived.")], version=3)
        with pytest.raises(KeyError):
            library.delete("acme", "guide")
        library.delete("other", "guide")
        with pytest.raises(KeyError):
            library.delete("other", "guide")
        commit(library, source("guide", tenant="third"), [Passage("A third tenant's guide.")])
        third = library.get("third", "guide")
        assert third is not None and not third.deleted

    def test_revisions_per_tenant_and_across_them(self, library: Library) -> None:
        self.both(library)
        acme, other = library.revisions(["guide"], "acme"), library.revisions(["guide"], "other")
        overall = library.revisions(["guide"])
        assert overall == {"guide": acme["guide"] + other["guide"]}
        stored = library.get("other", "guide")
        assert stored is not None
        library.update(dataclasses.replace(stored, title="Moved on"))
        assert library.revisions(["guide"], "acme") == acme
        assert library.revisions(["guide"], "other")["guide"] > other["guide"]
        assert library.revisions(["guide"])["guide"] > overall["guide"]


# -- ChunkStore ----------------------------------------------------------------------------


class TestChunkStore:
    def test_chunks_come_back_in_reading_order_exactly_as_committed(self, library: Library) -> None:
        passages = [
            Passage("First passage.", chapter="1 Intro", section="", page=7, label="1"),
            Passage(
                "Second — with “Unicode” and a\nnewline.",
                chapter="1 Intro",
                section="1.1 Scope",
                page=8,
                label="2",
                page_end=9,
                label_end="3",
            ),
            Passage("Third, with no pages.", chapter="2 Body", section="2.1 Detail"),
        ]
        _, _, chunks = commit(library, source(), passages)
        assert list(library.chunks("acme", "src-a", 1)) == chunks
        assert [c.ordinal for c in library.chunks("acme", "src-a", 1)] == [0, 1, 2]
        assert list(library.chunks("acme", "src-a", 2)) == []
        assert list(library.chunks("acme", "nope", 1)) == []

    def test_passages_join_chunks_with_their_source(self, library: Library) -> None:
        stored, _, chunks = commit(library, source(), [Passage("One."), Passage("Two.")])
        found = library.passages([chunks[1].chunk_id, "unknown-chunk", chunks[0].chunk_id])
        assert set(found) == {chunks[0].chunk_id, chunks[1].chunk_id}
        for chunk in chunks:
            assert found[chunk.chunk_id].chunk == chunk
            assert found[chunk.chunk_id].source == stored
        assert library.passages([]) == {}
        assert library.passages(["unknown-chunk"]) == {}

    def test_stored_units_come_back_as_committed(self, library: Library) -> None:
        # Opaque to the store (ingest cuts them, the extractive generator reads them):
        # kept exactly, NUL escape and all, and None stays None.
        units = '{"format":"units/1","units":[[0,5,0,"Alpha \\u0000 “quoted”","a","a"]]}'
        _, _, chunks = commit(
            library, source(), [Passage("Alpha text.", units=units), Passage("Beta text.")]
        )
        assert [c.units for c in library.chunks("acme", "src-a", 1)] == [units, None]
        found = library.passages([c.chunk_id for c in chunks])
        assert [found[c.chunk_id].chunk.units for c in chunks] == [units, None]

    def test_units_are_filled_in_only_where_none_are_stored(self, library: Library) -> None:
        _, _, first = commit(
            library, source(), [Passage("Alpha text.", units="kept"), Passage("Beta text.")]
        )
        _, _, second = commit(library, source(), [Passage("Gamma text.")], version=2)
        missing = library.chunks_without_units(10)
        assert missing == [(first[1].chunk_id, "Beta text."), (second[0].chunk_id, "Gamma text.")]
        assert library.chunks_without_units(1) == missing[:1]
        took = library.store_units(
            {first[0].chunk_id: "not over what is stored", first[1].chunk_id: "beta", "gone": "x"}
        )
        assert took == 1
        assert [c.units for c in library.chunks("acme", "src-a", 1)] == ["kept", "beta"]
        assert library.chunks_without_units(10) == [(second[0].chunk_id, "Gamma text.")]
        assert library.store_units({}) == 0

    def test_old_versions_stay_addressable(self, library: Library) -> None:
        _, _, old = commit(library, source(), [Passage("Alpha edition text.")])
        current, _, new = commit(library, source(), [Passage("Bravo edition text.")], version=2)
        assert list(library.chunks("acme", "src-a", 1)) == old
        assert list(library.chunks("acme", "src-a", 2)) == new
        found = library.passages([old[0].chunk_id])
        assert found[old[0].chunk_id].chunk == old[0]
        assert found[old[0].chunk_id].source == current  # the source as it is now


# -- LexicalIndex ----------------------------------------------------------------------------


class TestLexicalIndex:
    def test_finds_matching_chunks_best_first(self, library: Library) -> None:
        _, _, chunks = commit(
            library,
            source(),
            [
                Passage("Backoff backoff backoff: exponential backoff between attempts."),
                Passage("Queues drain slowly; backoff helps a little."),
                Passage("Nothing relevant to the query lives here."),
            ],
        )
        hits = search(library, "backoff")
        assert [h.chunk_id for h in hits] == [chunks[0].chunk_id, chunks[1].chunk_id]
        assert all(h.score > 0 for h in hits)
        assert hits[0].score > hits[1].score

    def test_any_term_matches_and_limit_is_respected(self, library: Library) -> None:
        _, _, chunks = commit(
            library,
            source(),
            [Passage("Alpha only."), Passage("Bravo only."), Passage("Charlie only.")],
        )
        assert hit_ids(search(library, "alpha", "bravo")) == {c.chunk_id for c in chunks[:2]}
        assert len(search(library, "alpha", "bravo", "charlie", limit=2)) == 2
        assert search(library) == []
        assert search(library, "zulu") == []

    def test_stemming_matches_plural_and_singular(self, library: Library) -> None:
        _, _, chunks = commit(library, source(), [Passage("Retries cost attempts.")])
        assert hit_ids(search(library, "retry")) == {chunks[0].chunk_id}
        assert hit_ids(search(library, "ATTEMPT")) == {chunks[0].chunk_id}

    def test_the_title_and_headings_are_searchable(self, library: Library) -> None:
        _, _, chunks = commit(
            library,
            source(title="Kestrel Handbook"),
            [Passage("Body text.", chapter="3 Falconry", section="3.1 Hooding")],
        )
        assert hit_ids(search(library, "kestrel")) == {chunks[0].chunk_id}
        assert hit_ids(search(library, "hooding")) == {chunks[0].chunk_id}

    def test_a_new_version_replaces_the_old_one_in_search(self, library: Library) -> None:
        _, _, old = commit(library, source(), [Passage("Alpha edition about retries.")])
        _, _, new = commit(library, source(), [Passage("Bravo edition about retries.")], version=2)
        assert search(library, "alpha") == []
        assert hit_ids(search(library, "bravo")) == {new[0].chunk_id}
        assert hit_ids(search(library, "retries")) == {new[0].chunk_id}
        assert old[0].chunk_id not in hit_ids(search(library, "edition", "retries"))

    def test_another_tenants_chunks_are_never_returned(self, library: Library) -> None:
        _, _, mine = commit(library, source("src-mine"), [Passage("Shared secret word.")])
        commit(library, source("src-theirs", tenant="other"), [Passage("Shared secret word.")])
        assert hit_ids(search(library, "secret")) == {mine[0].chunk_id}
        admin_elsewhere = AccessScope("nobody", frozenset({"staff"}), unrestricted=True)
        assert search(library, "secret", scope=admin_elsewhere) == []

    def test_acl_is_applied_inside_search(self, library: Library) -> None:
        _, _, open_ = commit(library, source("src-open"), [Passage("Budget numbers, open.")])
        _, _, staff = commit(
            library,
            source("src-staff", acl=frozenset({"staff", "finance"})),
            [Passage("Budget numbers, restricted.")],
        )
        commit(
            library,
            source("src-other-tenant", tenant="other", acl=frozenset({"staff"})),
            [Passage("Budget numbers, another tenant.")],
        )
        everyone = {open_[0].chunk_id}
        with_staff = {open_[0].chunk_id, staff[0].chunk_id}

        assert hit_ids(search(library, "budget")) == everyone
        assert (
            hit_ids(search(library, "budget", scope=AccessScope("acme", frozenset({"ops"}))))
            == everyone
        )
        assert (
            hit_ids(search(library, "budget", scope=AccessScope("acme", frozenset({"finance"}))))
            == with_staff
        )
        assert (
            hit_ids(search(library, "budget", scope=AccessScope("acme", frozenset({"staff", "x"}))))
            == with_staff
        )
        # An admin is unrestricted by ACLs, but only inside its own tenant.
        admin = AccessScope("acme", frozenset(), unrestricted=True)
        assert hit_ids(search(library, "budget", scope=admin)) == with_staff

    def test_the_scope_is_applied_before_the_limit(self, library: Library) -> None:
        commit(
            library,
            source("src-hidden", acl=frozenset({"staff"})),
            [Passage(f"Retry retry retry, hidden passage {i}.") for i in range(5)],
        )
        _, _, visible = commit(library, source("src-visible"), [Passage("A single retry.")])
        # The hidden passages rank higher; filtering after a limit of 1 would return nothing.
        assert hit_ids(search(library, "retry", limit=1)) == {visible[0].chunk_id}

    def test_source_ids_filter(self, library: Library) -> None:
        _, _, one = commit(library, source("src-1"), [Passage("Common term here.")])
        _, _, two = commit(library, source("src-2"), [Passage("Common term there.")])
        commit(library, source("src-3"), [Passage("Common term everywhere.")])
        only_two = SearchFilters(source_ids=frozenset({"src-2"}))
        assert hit_ids(search(library, "common", filters=only_two)) == {two[0].chunk_id}
        both = SearchFilters(source_ids=frozenset({"src-1", "src-2"}))
        assert hit_ids(search(library, "common", filters=both)) == {
            one[0].chunk_id,
            two[0].chunk_id,
        }
        none = SearchFilters(source_ids=frozenset({"src-missing"}))
        assert search(library, "common", filters=none) == []

    @pytest.mark.parametrize(
        "term",
        [
            '"',
            '""',
            '"unbalanced',
            "*",
            "a*",
            "NEAR",
            "NEAR(a b)",
            "NEAR/2",
            "-b",
            ":",
            "title:secret",
            "(",
            ")",
            "( )",
            "^",
            "+",
            "AND",
            "OR",
            "NOT",
            "{title body}: x",
            "'; DROP TABLE chunks; --",
            "'; DROP TABLE chunks_fts; --",
            "' OR '1'='1",
            "%",
            "_",
            "\\",
            "",
            " ",
            "\x00",
            "nul\x00inside",
            "\ud800",
        ],
    )
    def test_query_syntax_in_terms_is_never_interpreted(self, library: Library, term: str) -> None:
        _, _, chunks = commit(library, source(), [Passage("The secret word is here, a b c.")])
        hits = search(library, term)
        assert all(isinstance(h, LexicalHit) for h in hits)
        hits = search(library, term, "secret")
        assert chunks[0].chunk_id in hit_ids(hits)
        # Nothing was dropped or changed by the term.
        assert list(library.chunks("acme", "src-a", 1)) == chunks
        assert hit_ids(search(library, "secret")) == {chunks[0].chunk_id}


def test_the_sqlite_library_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "library.db"
    first = SqliteLibrary(path)
    stored, version, chunks = commit(first, source(), [Passage("Durable text.")])
    first.close()
    again = SqliteLibrary(path)
    try:
        assert again.get("acme", "src-a") == stored
        assert list(again.versions("acme", "src-a")) == [version]
        assert list(again.chunks("acme", "src-a", 1)) == chunks
        assert hit_ids(list(again.search(["durable"], SCOPE, NO_FILTERS, 5))) == {
            chunks[0].chunk_id
        }
    finally:
        again.close()


def test_a_schema_3_library_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "library.db"
    first = SqliteLibrary(path)
    stored, _, chunks = commit(first, source(), [Passage("Durable text.")])
    first.close()
    to_schema_4(path)
    with sqlite3.connect(path) as old:  # what a schema-3 library looked like
        old.execute("ALTER TABLE sources DROP COLUMN revision")
        old.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    again = SqliteLibrary(path)
    try:
        assert again.get("acme", "src-a") == stored
        assert again.revisions(["src-a"], "acme") == {"src-a": 0}
        again.update(dataclasses.replace(stored, title="Renamed"))
        assert again.revisions(["src-a"], "acme") == {"src-a": 1}
        assert list(again.chunks("acme", "src-a", 1)) == chunks
    finally:
        again.close()
