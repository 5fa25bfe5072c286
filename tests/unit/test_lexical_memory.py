"""The in-memory lexical index ranks exactly as FTS5's bm25(): same chunks, same order,
same scores, inside the same scope and filters; and it is never behind the store."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.parsers.pdf import PdfParser
from citadel.adapters.sqlite.lexical_live import LiveIndex
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import LexicalHit
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source
from citadel.domain.text import STOPWORDS, words
from tests.builders import Passage, commit, operator
from tests.conftest import shared_path

# Words that stem together, hyphenated and quoted ones (FTS5 phrases), repeats,
# diacritics, digits, and stop words (indexed, though queries drop them).
VOCABULARY = (
    "run running runs runner matrix matrices eigenvalue eigenvalues t-cell co-op "
    "don't ab-ab-ab naïve café CAFE 42 x2 the of and data tables cell cells "
    "vector vectors space spaces ratio p53 covid-19 long-term"
).split()
TENANTS = ("acme", "other")
GROUPS = ("team", "board")
TAGS = ("x", "y", "z")
AUTHORS = ("Ada", "Bo")


def terms_of(text: str) -> tuple[str, ...]:
    tokens = words(text)
    return tuple(dict.fromkeys([t for t in tokens if t not in STOPWORDS] or tokens))


def assert_same(want: Sequence[LexicalHit], got: Sequence[LexicalHit] | None) -> None:
    assert got is not None, "the in-memory index did not answer"
    assert [h.chunk_id for h in got] == [h.chunk_id for h in want]
    for a, b in zip(want, got, strict=True):
        assert b.score == pytest.approx(a.score, rel=1e-6)


def both(
    lib: SqliteLibrary, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
) -> None:
    want = lib._ranking.from_fts5(terms, scope, filters, limit)
    assert_same(want, lib._ranking.from_memory(terms, scope, filters, limit))


texts = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=12).map(" ".join)
sources = st.lists(
    st.fixed_dictionaries(
        {
            "tenant": st.sampled_from(TENANTS),
            "title": texts,
            "acl": st.frozensets(st.sampled_from(GROUPS), max_size=2),
            "tags": st.lists(st.sampled_from(TAGS), max_size=2, unique=True),
            "authors": st.lists(st.sampled_from(AUTHORS), max_size=2, unique=True),
            "year": st.one_of(st.none(), st.integers(1990, 2000)),
            "passages": st.lists(
                st.tuples(texts, st.sampled_from(["One", "Two"]), st.sampled_from(["", "A"])),
                min_size=1,
                max_size=6,
            ),
        }
    ),
    min_size=1,
    max_size=5,
)
queries = st.lists(
    st.tuples(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5).map(" ".join),
        st.sampled_from(TENANTS),
        st.frozensets(st.sampled_from(GROUPS), max_size=2),
        st.booleans(),
        st.integers(0, 7),
        st.integers(1, 12),
    ),
    min_size=1,
    max_size=8,
)


def filters_of(kind: int, year: int) -> SearchFilters:
    return [
        SearchFilters(),
        SearchFilters(source_ids=frozenset({"s0", "s2"})),
        SearchFilters(tags_any=frozenset({"x"}), authors=frozenset({"Ada"})),
        SearchFilters(tags_all=frozenset({"x", "y"})),
        SearchFilters(year_min=year),
        SearchFilters(year_min=min(1992, year), year_max=year),
        SearchFilters(section_prefix=("Two",)),
        SearchFilters(section_prefix=("One", "A"), year_max=1999),
    ][kind]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources, queries, st.integers(1990, 2000))
def test_random_libraries_rank_as_fts5_in_every_scope_and_filter(
    corpus: list[dict[str, object]],
    asked: list[tuple[str, str, frozenset[str], bool, int, int]],
    year: int,
) -> None:
    with tempfile.TemporaryDirectory() as home:
        lib = SqliteLibrary(Path(home) / "lib.db", lexical_memory="sync")
        for i, spec in enumerate(corpus):
            source = Source(
                source_id=f"s{i}",
                tenant=str(spec["tenant"]),
                title=str(spec["title"]) or "untitled",
                origin=f"/s{i}",
                acl_groups=spec["acl"],  # type: ignore[arg-type]
                tags=tuple(spec["tags"]),  # type: ignore[call-overload]
                authors=tuple(spec["authors"]),  # type: ignore[call-overload]
                year=spec["year"],  # type: ignore[arg-type]
            )
            passages = [
                Passage(text or "empty", chapter=chapter, section=section)
                for text, chapter, section in spec["passages"]  # type: ignore[attr-defined]
            ]
            commit(lib, source, passages)
        for text, tenant, groups, admin, kind, limit in asked:
            scope = AccessScope(tenant, groups, unrestricted=admin)
            both(lib, terms_of(text), scope, filters_of(kind, year), limit)
        lib.close()


@pytest.fixture(scope="module")
def book_library() -> Iterator[SqliteLibrary]:
    """R-intro in two tenants (one copy with an ACL, tags, authors and a year), and a
    small public source beside it."""
    book = shared_path("books", "pdf", "R-intro.pdf")
    with tempfile.TemporaryDirectory() as home:
        lib = SqliteLibrary(Path(home) / "lib.db", lexical_memory="sync")
        ingest = IngestService(lib, FixedClock())
        files = FileDocuments([PdfParser(max_pages=5000)], max_file_bytes=1 << 30)
        options = IngestOptions(
            tenant="acme",
            source_id="r",
            acl_groups=frozenset({"stats"}),
            tags=("r", "manual"),
            authors=("R Core",),
            year=2004,
        )
        ingest.ingest(files.open(book), options, actor=operator("acme"))
        ingest.ingest(files.open(book), IngestOptions(tenant="other"), actor=operator("other"))
        notes = [Passage("Vectors and matrices in R: a short note on data frames.")] * 3
        commit(lib, Source(source_id="n", tenant="acme", title="Notes", origin="/n"), notes)
        yield lib
        lib.close()


def test_a_shared_book_ranks_as_fts5(book_library: SqliteLibrary) -> None:
    lib = book_library
    chunks = lib.chunks("acme", "r", 1)
    rng = random.Random(5)
    prefix = chunks[len(chunks) // 2].section_path[:1]
    scopes = [
        AccessScope("acme", frozenset(), unrestricted=True),
        AccessScope("acme", frozenset({"stats"})),
        AccessScope("acme", frozenset()),  # may read only the public notes
        AccessScope("other", frozenset()),
    ]
    filters = [
        SearchFilters(),
        SearchFilters(tags_all=frozenset({"r", "manual"}), authors=frozenset({"R Core"})),
        SearchFilters(year_min=2000, year_max=2010),
        SearchFilters(source_ids=frozenset({"n"})),
        SearchFilters(section_prefix=prefix),
    ]
    asked = 0
    for chunk in rng.sample(list(chunks), 25):
        sentence = chunk.text.split()
        start = rng.randrange(max(1, len(sentence) - 6))
        terms = terms_of(" ".join(sentence[start : start + rng.randint(1, 6)]))
        if not terms:
            continue
        for scope in scopes:
            for restrict in filters:
                both(lib, terms, scope, restrict, 100)
                asked += 1
    assert asked > 400
    # Hyphens, quotes and stems: phrases and shared tokens.
    for text in ("data-frame", "R's vectors", "matrices matrix", "long-term read.table"):
        both(lib, terms_of(text), scopes[0], SearchFilters(), 100)


def test_a_write_is_seen_by_the_next_search(tmp_path: Path) -> None:
    lib = SqliteLibrary(tmp_path / "lib.db", lexical_memory="sync")
    scope = AccessScope("acme", frozenset())
    commit(lib, Source(source_id="a", tenant="acme", title="A", origin="/a"), [Passage("eigen")])
    assert len(lib.search(("eigen",), scope, SearchFilters(), 10)) == 1
    commit(lib, Source(source_id="b", tenant="acme", title="B", origin="/b"), [Passage("eigen")])
    both(lib, ("eigen",), scope, SearchFilters(), 10)
    assert len(lib.search(("eigen",), scope, SearchFilters(), 10)) == 2
    lib.delete("acme", "a")
    both(lib, ("eigen",), scope, SearchFilters(), 10)
    assert len(lib.search(("eigen",), scope, SearchFilters(), 10)) == 1
    lib.close()


def test_in_the_background_fts5_answers_until_the_index_is_current(tmp_path: Path) -> None:
    lib = SqliteLibrary(tmp_path / "lib.db", lexical_memory="sync")
    commit(lib, Source(source_id="a", tenant="acme", title="A", origin="/a"), [Passage("eigen")])
    live = LiveIndex(lib.database.path, lib._ranking.live("acme")._table, (2.0, 2.0, 1.0, 0.0))
    generation = lib.database.generation()
    assert live.current(generation) is None  # first miss: no build yet
    assert live.current(generation) is None  # second miss starts one
    live.wait()
    index = live.current(generation)
    assert index is not None and index.rows == 1
    commit(lib, Source(source_id="b", tenant="acme", title="B", origin="/b"), [Passage("x")])
    assert live.current(lib.database.generation()) is None  # behind: never used
    live.close()
    lib.close()


def test_a_term_fts5_reads_as_no_token_is_left_to_fts5(tmp_path: Path) -> None:
    lib = SqliteLibrary(tmp_path / "lib.db", lexical_memory="sync")
    commit(lib, Source(source_id="a", tenant="acme", title="A", origin="/a"), [Passage("eigen")])
    scope = AccessScope("acme", frozenset())
    assert lib._ranking.from_memory(("eigen", "'"), scope, SearchFilters(), 10) is None
    assert lib._ranking.from_memory(("eigen",), scope, SearchFilters(), 10) is not None
    lib.close()
