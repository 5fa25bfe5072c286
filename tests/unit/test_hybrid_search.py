"""The search use case: hybrid by default, plain-text queries, scope inside, cached vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.files import FileDocuments
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
FILES = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20)

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
    ingest = IngestService(library, FixedClock(), embedder=embedder, vectors=library)
    book = tmp_path / "handbook.md"
    book.write_text(BOOK)
    ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
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
    report = ingest.ingest(FILES.open(book), IngestOptions(), actor=operator())
    assert report.version == 2
    # Only the new section's chunk is embedded; the unchanged ones come from the cache.
    assert embedder.texts - before == 1


def ranked(search: SearchService, query: str, mode: SearchMode) -> list[tuple[str, float]]:
    result = search.search(SearchRequest(query, mode=mode), ACTOR)
    return [(e.chunk_id, e.score) for e in result.results]


def sections(search: SearchService, query: str) -> list[str]:
    result = search.search(SearchRequest(query, mode=SearchMode.LEXICAL), ACTOR)
    return [e.section for e in result.results]


# FTS5 query syntax (and SQL), each with its words in lower case, where FTS5 reads no
# operator: the query is searched as those words.
SYNTAX = [
    ('"unbalanced', "unbalanced"),
    ('"frame data"', "frame data"),
    ("NEAR(data frame", "near data frame"),
    ("NEAR(read frame, 0)", "near read frame 0"),
    ("data* -frame", "data frame"),
    ("plo*", "plo"),
    ("title:factor", "title factor"),
    ("{title headings}: plot", "title headings plot"),
    ("^levels", "levels"),
    ("factor AND plot", "factor and plot"),
    ("data NOT frame", "data not frame"),
    ("(factor OR plot) AND frame", "factor or plot and frame"),
    ("a AND OR NOT", "a and or not"),
    ("'; DROP TABLE chunks; --", "drop table chunks"),
    ("SELECT * FROM sources", "select from sources"),
]


@pytest.mark.parametrize("mode", list(SearchMode))
@pytest.mark.parametrize(("query", "plain"), SYNTAX)
def test_query_syntax_is_searched_as_its_words(
    setup, query: str, plain: str, mode: SearchMode
) -> None:
    search, *_ = setup
    assert ranked(search, query, mode) == ranked(search, plain, mode)


def test_no_query_operator_takes_effect(setup) -> None:
    search, *_ = setup
    # A column filter would look for "factor" in the title ("Data Handbook") only.
    assert sections(search, "title:factor")[:1] == ["Factors"]
    assert sections(search, "{title}: plot")[:1] == ["Plotting"]
    # A prefix query would match "plot" and "plots"; "plo" is no word of the book.
    assert sections(search, "plo*") == []
    # "^" would match "levels" only as the first word of a column, which it never is.
    assert sections(search, "^levels")[:1] == ["Factors"]
    # AND would need both words in one chunk, NOT would drop the chunk holding "frame",
    # NEAR and a phrase would need the words side by side: any word is enough instead.
    assert {"Factors", "Plotting"} <= set(sections(search, "factor AND plot"))
    assert "Reading files" in sections(search, "data NOT frame")
    assert {"Reading files", "Factors", "Plotting"} <= set(
        sections(search, "(factor OR plot) AND frame")
    )
    assert "Reading files" in sections(search, "NEAR(read frame, 0)")
    assert "Reading files" in sections(search, '"frame data"')
    # Quotes and SQL are words too: nothing is dropped, the library still answers.
    sections(search, "'; DROP TABLE chunks; --")
    assert sections(search, "factor")[:1] == ["Factors"]


@pytest.mark.parametrize("mode", list(SearchMode))
@pytest.mark.parametrize("query", ["((((", '""', "* ^ : - ( )"])
def test_query_syntax_without_words_finds_nothing_lexically(
    setup, query: str, mode: SearchMode
) -> None:
    search, *_ = setup
    result = search.search(SearchRequest(query, mode=mode), ACTOR)  # not an error
    if mode is SearchMode.LEXICAL:
        assert result.results == ()


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
