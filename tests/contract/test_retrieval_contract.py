"""One contract for retrieval — lexical and vector search, filters, re-scoring — run
against every adapter (SQLite and the in-memory fake).

Filters and the access scope are applied inside both searches: a chunk outside
them is never scored, counted or returned, whichever method looks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pytest

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.postgres.library import PostgresLibrary
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ports import (
    ChunkStore,
    ChunkVectors,
    LexicalIndex,
    SourceRegistry,
    UnembeddedChunk,
    VectorCoverage,
    VectorIndex,
)
from citadel.domain.chunking import CHUNKER_VERSION, embedding_key
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source, SourceVersion
from tests.builders import Passage, commit, make_chunks, sha256_of

EMBEDDER = HashingEmbedder()
MODEL = EMBEDDER.name


class Library(SourceRegistry, ChunkStore, LexicalIndex, VectorIndex, Protocol):
    """Both adapters implement all four ports in one object."""


@pytest.fixture(params=["sqlite", "sqlite-hnsw", "postgresql", "postgresql-hnsw", "memory"])
def library(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Library]:
    if request.param.startswith("postgresql"):
        # postgresql-hnsw asks pgvector's HNSW index for candidates from the first vector.
        postgres = PostgresLibrary(
            request.getfixturevalue("postgres_url"),
            hnsw_min_vectors=1 if request.param == "postgresql-hnsw" else 0,
        )
        yield postgres
        postgres.close()
        return
    if request.param.startswith("sqlite"):
        # sqlite-hnsw keeps the HNSW index in step with every change (the graph search
        # itself is tested at a useful size in test_hnsw_search.py).
        sqlite = SqliteLibrary(
            tmp_path / "retrieval.db", hnsw_min_vectors=1 if request.param == "sqlite-hnsw" else 0
        )
        yield sqlite
        sqlite.close()
    else:
        yield InMemoryLibrary()


def add(
    library: Library,
    source_id: str,
    passages: Sequence[Passage],
    *,
    tenant: str = "acme",
    authors: tuple[str, ...] = ("Ann Author",),
    tags: tuple[str, ...] = (),
    year: int | None = 2020,
    acl: frozenset[str] = frozenset(),
    version: int = 1,
) -> list[str]:
    """Commit a version with vectors; return its chunk ids."""
    chunks = make_chunks(source_id, version, passages, tenant=tenant)
    texts = [c.text for c in chunks]
    source = Source(
        source_id=source_id,
        tenant=tenant,
        title=f"Book {source_id}",
        authors=authors,
        year=year,
        tags=tags,
        acl_groups=acl,
        origin=f"/books/{source_id}",
        current_version=version,
    )
    record = SourceVersion(
        source_id=source_id,
        version=version,
        content_sha256=sha256_of("".join(texts)),
        parser="test/1",
        chunker=CHUNKER_VERSION,
        page_count=0,
        section_count=1,
        chunk_count=len(chunks),
        created_at="2026-01-01T00:00:00+00:00",
    )
    vectors = ChunkVectors(
        model=MODEL, keys=tuple(embedding_key(t) for t in texts), matrix=EMBEDDER.embed(texts)
    )
    library.commit_version(source, record, chunks, vectors)
    return [c.chunk_id for c in chunks]


SCOPE = AccessScope("acme", frozenset())
EVERYTHING = SearchFilters()


def dense(
    library: Library,
    text: str,
    filters: SearchFilters = EVERYTHING,
    scope: AccessScope = SCOPE,
    limit: int = 50,
) -> list[str]:
    vector = EMBEDDER.embed([text])[0]
    return [h.chunk_id for h in library.search_vectors(vector, MODEL, scope, filters, limit)]


def lexical(
    library: Library, *terms: str, filters: SearchFilters = EVERYTHING, scope: AccessScope = SCOPE
) -> list[str]:
    return [h.chunk_id for h in library.search(terms, scope, filters, 50)]


@pytest.fixture
def shelf(library: Library) -> dict[str, list[str]]:
    """Three books with different authors, tags, years and sections."""
    return {
        "r": add(
            library,
            "r",
            [
                Passage(
                    "Vectors hold numbers; a data frame holds vectors of equal length.",
                    chapter="2 Vectors",
                    section="2.1 Arithmetic",
                ),
                Passage("Factors hold categorical data with levels.", chapter="4 Factors"),
            ],
            authors=("R Core Team",),
            tags=("stats", "r"),
            year=2023,
        ),
        "pg": add(
            library,
            "pg",
            [
                Passage(
                    "A check constraint limits the values a column of a table may hold.",
                    chapter="5 Data Definition",
                    section="5.4 Constraints",
                ),
            ],
            authors=("PostgreSQL Group",),
            tags=("sql",),
            year=2022,
        ),
        "old": add(
            library,
            "old",
            [
                Passage("Vectors and tables in an old manual about data.", chapter="1 Basics"),
            ],
            authors=("Ann Author",),
            tags=("stats",),
            year=1999,
        ),
    }


class TestVectorSearch:
    def test_nearest_chunks_come_first_with_cosine_scores(self, library: Library, shelf) -> None:
        vector = EMBEDDER.embed(["a check constraint on a table column"])[0]
        hits = list(library.search_vectors(vector, MODEL, SCOPE, EVERYTHING, 10))
        assert hits[0].chunk_id == shelf["pg"][0]
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert all(-1.0001 <= s <= 1.0001 for s in scores)

    def test_limit_and_unknown_model(self, library: Library, shelf) -> None:
        assert len(dense(library, "data", limit=2)) == 2
        vector = EMBEDDER.embed(["data"])[0]
        assert list(library.search_vectors(vector, "another-model", SCOPE, EVERYTHING, 10)) == []

    def test_scope_is_applied_inside_vector_search(self, library: Library, shelf) -> None:
        secret = add(
            library,
            "secret",
            [Passage("A check constraint on a secret table column.")],
            acl=frozenset({"finance"}),
        )
        other = add(
            library,
            "other",
            [Passage("A check constraint on another tenant's table.")],
            tenant="globex",
        )
        seen = dense(library, "check constraint table column")
        assert not set(secret) & set(seen) and not set(other) & set(seen)
        finance = AccessScope("acme", frozenset({"finance"}))
        assert set(secret) <= set(dense(library, "check constraint", scope=finance))

    def test_one_source_id_in_two_tenants_is_searched_in_its_own_tenant(
        self, library: Library, shelf
    ) -> None:
        """Source ids are scoped to their tenant: globex's "r" is not acme's "r"."""
        theirs = add(
            library, "r", [Passage("Vectors of globex hold its own numbers.")], tenant="globex"
        )
        globex = AccessScope("globex", frozenset())
        only_r = SearchFilters(source_ids=frozenset({"r"}))
        ours = dense(library, "vectors hold numbers", filters=only_r)
        assert set(ours) == set(shelf["r"])
        assert dense(library, "vectors hold numbers", filters=only_r, scope=globex) == theirs
        assert set(lexical(library, "vectors", filters=only_r)) <= set(shelf["r"])
        assert lexical(library, "vectors", filters=only_r, scope=globex) == theirs
        # A new version of acme's "r" leaves globex's current.
        add(library, "r", [Passage("Vectors, second edition.")], version=2)
        assert dense(library, "vectors", filters=only_r, scope=globex) == theirs
        assert library.score_vectors(EMBEDDER.embed(["vectors"])[0], MODEL, theirs).keys() == {
            *theirs
        }

    def test_a_new_version_replaces_the_old_one(self, library: Library, shelf) -> None:
        newer = add(
            library, "pg", [Passage("Exclusion constraints generalise unique ones.")], version=2
        )
        found = dense(library, "constraint")
        assert set(newer) <= set(found) and not set(shelf["pg"]) & set(found)

    def test_cached_vectors_by_text_hash(self, library: Library, shelf) -> None:
        text = "Factors hold categorical data with levels."
        cached = library.cached_vectors([embedding_key(text), "missing"], MODEL)
        assert set(cached) == {embedding_key(text)}
        assert np.allclose(cached[embedding_key(text)], EMBEDDER.embed([text])[0], atol=1e-6)
        assert library.cached_vectors([embedding_key(text)], "another-model") == {}


@pytest.mark.parametrize("method", ["lexical", "dense"])
class TestFiltersInsideBothSearches:
    def run(self, library: Library, method: str, filters: SearchFilters) -> set[str]:
        if method == "lexical":
            return set(
                lexical(
                    library, "vectors", "data", "table", "constraint", "factors", filters=filters
                )
            )
        return set(dense(library, "vectors data table constraint factors", filters=filters))

    def test_source_ids(self, library: Library, shelf, method: str) -> None:
        assert self.run(library, method, SearchFilters(source_ids=frozenset({"pg"}))) == set(
            shelf["pg"]
        )

    def test_authors(self, library: Library, shelf, method: str) -> None:
        got = self.run(library, method, SearchFilters(authors=frozenset({"R Core Team", "Nobody"})))
        assert got == set(shelf["r"])

    def test_tags_any_and_all(self, library: Library, shelf, method: str) -> None:
        any_stats = self.run(library, method, SearchFilters(tags_any=frozenset({"stats"})))
        assert any_stats == set(shelf["r"]) | set(shelf["old"])
        all_tags = self.run(library, method, SearchFilters(tags_all=frozenset({"stats", "r"})))
        assert all_tags == set(shelf["r"])

    def test_year_range(self, library: Library, shelf, method: str) -> None:
        assert self.run(library, method, SearchFilters(year_min=2000)) == set(shelf["r"]) | set(
            shelf["pg"]
        )
        assert self.run(library, method, SearchFilters(year_max=2022)) == set(shelf["pg"]) | set(
            shelf["old"]
        )
        assert self.run(library, method, SearchFilters(year_min=2023, year_max=2023)) == set(
            shelf["r"]
        )

    def test_section_prefix(self, library: Library, shelf, method: str) -> None:
        got = self.run(library, method, SearchFilters(section_prefix=("2 Vectors",)))
        assert got == {shelf["r"][0]}
        deeper = SearchFilters(section_prefix=("2 Vectors", "2.1 Arithmetic"))
        assert self.run(library, method, deeper) == {shelf["r"][0]}
        assert self.run(library, method, SearchFilters(section_prefix=("2 Vec",))) == set()


class TestRescoring:
    def test_score_vectors_matches_search_scores(self, library: Library, shelf) -> None:
        vector = EMBEDDER.embed(["data frame vectors"])[0]
        hits = {
            h.chunk_id: h.score
            for h in library.search_vectors(vector, MODEL, SCOPE, EVERYTHING, 50)
        }
        rescored = library.score_vectors(vector, MODEL, [*hits, "no-such-chunk"])
        assert rescored.keys() == hits.keys()
        for chunk_id, score in hits.items():
            assert rescored[chunk_id] == pytest.approx(score, abs=1e-5)


OTHER_MODEL = "another-model"


def unembedded(library: Library, model: str, source_id: str | None = None) -> list[str]:
    return [c.chunk_id for c in library.unembedded_chunks(model, source_id)]


def store(library: Library, model: str, chunk_ids: Sequence[str], texts: Sequence[str]) -> None:
    keys = [embedding_key(t) for t in texts]
    library.store_vectors(model, chunk_ids, keys, EMBEDDER.embed(texts))


class TestVectorCoverage:
    def test_coverage_counts_the_current_chunks_of_live_sources(
        self, library: Library, shelf
    ) -> None:
        assert library.vector_coverage(MODEL) == VectorCoverage(chunks=4, missing=0)
        assert library.vector_coverage(OTHER_MODEL) == VectorCoverage(chunks=4, missing=4)
        add(library, "pg", [Passage("One."), Passage("Two.")], version=2)
        library.delete("acme", "old")
        assert library.vector_coverage(MODEL) == VectorCoverage(chunks=4, missing=0)
        bare = Source(source_id="bare", tenant="acme", title="No Vectors", origin="/bare")
        commit(library, bare, [Passage("Committed without vectors.")])
        assert library.vector_coverage(MODEL) == VectorCoverage(chunks=5, missing=1)

    def test_unembedded_chunks_by_source_then_reading_order(self, library: Library, shelf) -> None:
        assert unembedded(library, MODEL) == []
        assert unembedded(library, OTHER_MODEL) == [*shelf["old"], *shelf["pg"], *shelf["r"]]
        assert unembedded(library, OTHER_MODEL, "r") == shelf["r"]
        assert unembedded(library, OTHER_MODEL, "nope") == []
        first = library.unembedded_chunks(OTHER_MODEL, "r")[0]
        assert first == UnembeddedChunk(
            chunk_id=shelf["r"][0],
            title="Book r",
            section_path=("2 Vectors", "2.1 Arithmetic"),
            text="Vectors hold numbers; a data frame holds vectors of equal length.",
        )

    def test_a_limit_gives_the_first_chunks_and_storing_takes_them_off(
        self, library: Library, shelf
    ) -> None:
        everything = unembedded(library, OTHER_MODEL)
        page = library.unembedded_chunks(OTHER_MODEL, limit=3)
        assert [c.chunk_id for c in page] == everything[:3]
        assert [c.chunk_id for c in library.unembedded_chunks(OTHER_MODEL, "r", 1)] == [
            shelf["r"][0]
        ]
        store(library, OTHER_MODEL, [c.chunk_id for c in page], [c.text for c in page])
        assert [c.chunk_id for c in library.unembedded_chunks(OTHER_MODEL, limit=3)] == (
            everything[3:]
        )

    def test_unembedded_chunks_of_one_tenant(self, library: Library, shelf) -> None:
        bare = Source(source_id="r", tenant="globex", title="Globex r", origin="/globex/r")
        _, _, theirs = commit(library, bare, [Passage("Globex text without vectors.")])
        assert unembedded(library, MODEL) == [theirs[0].chunk_id]
        assert [c.chunk_id for c in library.unembedded_chunks(MODEL, "r", tenant="acme")] == []
        assert [c.chunk_id for c in library.unembedded_chunks(MODEL, "r", tenant="globex")] == [
            theirs[0].chunk_id
        ]
        everything = [c.chunk_id for c in library.unembedded_chunks(OTHER_MODEL, tenant="acme")]
        assert everything == [*shelf["old"], *shelf["pg"], *shelf["r"]]
        assert [c.title for c in library.unembedded_chunks(OTHER_MODEL, "r")] == [
            "Book r",
            "Book r",
            "Globex r",
        ]

    def test_old_versions_and_deleted_sources_are_never_listed(
        self, library: Library, shelf
    ) -> None:
        newer = add(library, "pg", [Passage("Exclusion constraints.")], version=2)
        library.delete("acme", "old")
        assert unembedded(library, OTHER_MODEL) == [*newer, *shelf["r"]]

    def test_stored_vectors_are_found_by_the_next_search(self, library: Library, shelf) -> None:
        vector = EMBEDDER.embed(["a check constraint on a table column"])[0]
        # Searched once first: a cached matrix or graph must notice the write.
        assert list(library.search_vectors(vector, OTHER_MODEL, SCOPE, EVERYTHING, 10)) == []
        pending = library.unembedded_chunks(OTHER_MODEL)
        store(library, OTHER_MODEL, [c.chunk_id for c in pending], [c.text for c in pending])
        hits = list(library.search_vectors(vector, OTHER_MODEL, SCOPE, EVERYTHING, 10))
        assert {h.chunk_id for h in hits} == {c.chunk_id for c in pending}
        assert hits[0].chunk_id == shelf["pg"][0]
        assert library.vector_coverage(OTHER_MODEL) == VectorCoverage(chunks=4, missing=0)
        assert unembedded(library, OTHER_MODEL) == []

    def test_a_stored_key_becomes_the_chunks_key_and_an_existing_vector_is_kept(
        self, library: Library, shelf
    ) -> None:
        retitled = "Renamed > 2 Vectors. Vectors hold numbers."
        store(library, MODEL, [shelf["r"][0]], [retitled])
        query = EMBEDDER.embed([retitled])[0]
        assert library.score_vectors(query, MODEL, [shelf["r"][0]])[shelf["r"][0]] == (
            pytest.approx(1.0, abs=1e-5)
        )
        # A vector already under (key, model) stays; the chunk still points at it.
        kept = "Factors hold categorical data with levels."
        library.store_vectors(
            MODEL, [shelf["pg"][0]], [embedding_key(kept)], EMBEDDER.embed(["something else"])
        )
        cached = library.cached_vectors([embedding_key(kept)], MODEL)[embedding_key(kept)]
        assert np.allclose(cached, EMBEDDER.embed([kept])[0], atol=1e-6)
        scores = library.score_vectors(cached, MODEL, [shelf["pg"][0]])
        assert scores[shelf["pg"][0]] == pytest.approx(1.0, abs=1e-5)

    def test_unknown_chunks_or_mismatched_lengths_write_nothing(
        self, library: Library, shelf
    ) -> None:
        text = "Vectors hold numbers; a data frame holds vectors of equal length."
        with pytest.raises(ValueError, match="unknown chunk"):
            store(library, OTHER_MODEL, [shelf["r"][0], "no-such-chunk"], [text, "x"])
        with pytest.raises(ValueError, match="one key and one vector row"):
            library.store_vectors(
                OTHER_MODEL, [shelf["r"][0]], [embedding_key(text)], EMBEDDER.embed([text, "x"])
            )
        assert library.vector_coverage(OTHER_MODEL) == VectorCoverage(chunks=4, missing=4)
        assert library.cached_vectors([embedding_key(text)], OTHER_MODEL) == {}
