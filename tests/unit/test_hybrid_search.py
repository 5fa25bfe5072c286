"""The search use case: hybrid by default, plain-text queries, scope inside, cached vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.errors import InvalidRequest
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import Vectors
from citadel.app.search import SearchService
from citadel.domain.limits import Limits
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from tests.builders import operator

ACTOR = Actor(user_id="reader", tenant="default", role=Role.READER)

BOOK = """# Data Handbook

## Reading files

The read.table function reads a data frame from a text file with one row per line.

## Factors

A factor stores categorical data; its levels are the distinct categories.

## Plotting

The plot function draws scatter plots of two numeric vectors.
"""


class CountingEmbedder:
    """The hashing embedder, counting how many texts it was asked to embed."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder()
        self.name = self._inner.name
        self.dimension = self._inner.dimension
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self._inner.embed(texts)


@pytest.fixture(params=["sqlite", "memory"])
def setup(request: pytest.FixtureRequest, tmp_path: Path):
    library = SqliteLibrary(tmp_path / "lib.db") if request.param == "sqlite" else InMemoryLibrary()
    embedder = CountingEmbedder()
    ingest = IngestService(
        library, [MarkdownParser()], FixedClock(), embedder=embedder, vectors=library
    )
    book = tmp_path / "handbook.md"
    book.write_text(BOOK)
    ingest.ingest(book, IngestOptions(), actor=operator())
    search = SearchService(library, library, Limits(), vectors=library, embedder=embedder)
    yield search, ingest, embedder, book
    if isinstance(library, SqliteLibrary):
        library.close()


def test_hybrid_ranks_the_matching_section_first_with_scores_in_unit_interval(setup) -> None:
    search, *_ = setup
    result = search.search(SearchRequest("how do I read a data frame from a file"), ACTOR)
    assert result.results[0].section == "Reading files"
    assert all(0.0 <= e.score <= 1.0 for e in result.results)
    assert result.results[0].score == max(e.score for e in result.results)


@pytest.mark.parametrize("mode", list(SearchMode))
def test_every_mode_answers(setup, mode: SearchMode) -> None:
    search, *_ = setup
    result = search.search(SearchRequest("factor levels categories", mode=mode), ACTOR)
    assert result.results and result.results[0].section == "Factors"


def test_query_vectors_are_cached(setup) -> None:
    search, _, embedder, _ = setup
    before = embedder.texts
    for _ in range(3):
        search.search(SearchRequest("scatter plots"), ACTOR)
    search.search(SearchRequest("  scatter   plots "), ACTOR)  # same after normalising spaces
    assert embedder.texts == before + 1


def test_re_ingesting_unchanged_text_never_re_embeds(setup, tmp_path: Path) -> None:
    _, ingest, embedder, book = setup
    before = embedder.texts
    book.write_text(BOOK + "\n## Appendix\n\nA new closing section about saving workspaces.\n")
    report = ingest.ingest(book, IngestOptions(), actor=operator())
    assert report.version == 2
    # Only the new section's chunk is embedded; the unchanged ones come from the cache.
    assert embedder.texts - before == 1


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "NEAR(data frame",
        "data* -frame",
        "title:factor",
        "((((",
        "a AND OR NOT",
        "'; DROP TABLE chunks; --",
        "SELECT * FROM sources",
    ],
)
def test_query_syntax_is_plain_text(setup, query: str) -> None:
    search, *_ = setup
    search.search(SearchRequest(query), ACTOR)  # never raises


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_queries_are_refused_clearly(setup, query: str) -> None:
    search, *_ = setup
    with pytest.raises(InvalidRequest, match="empty"):
        search.search(SearchRequest(query), ACTOR)


def test_oversized_queries_are_refused_clearly(setup) -> None:
    search, *_ = setup
    with pytest.raises(InvalidRequest, match="over 4096 bytes"):
        search.search(SearchRequest("data " * 20_000), ACTOR)  # 100 KB


def test_another_tenant_sees_nothing(setup) -> None:
    search, *_ = setup
    outsider = Actor(user_id="x", tenant="globex")
    for mode in SearchMode:
        assert search.search(SearchRequest("data frame", mode=mode), outsider).results == ()


def test_dense_mode_without_an_embedder_is_a_clear_error() -> None:
    library = InMemoryLibrary()
    search = SearchService(library, library, Limits())
    with pytest.raises(InvalidRequest, match="dense search is not configured"):
        search.search(SearchRequest("x", mode=SearchMode.DENSE), ACTOR)


def test_scores_are_absolute_an_off_topic_query_finds_nothing(setup) -> None:
    search, *_ = setup
    for mode in SearchMode:
        assert search.search(SearchRequest("zyzzyva quokka", mode=mode), ACTOR).results == ()
    on_topic = search.search(SearchRequest("factor levels"), ACTOR).results
    assert on_topic[0].score == pytest.approx(1.0)  # every query term is in the Factors section
