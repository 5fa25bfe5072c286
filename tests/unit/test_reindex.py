"""The reindex use case: after a change of embedding model, dense search finds the library again.

Run over SQLite and the in-memory fake, with the hashing embedder under
names of our choosing (two names are two models whose vectors never mix).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.files import FileDocuments
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.errors import AppError, InvalidRequest, LibraryChanged
from citadel.app.ingest import IngestOptions, IngestService, ParsedInput
from citadel.app.ports import (
    ChunkStore,
    LexicalIndex,
    SourceRegistry,
    VectorCoverage,
    VectorIndex,
    Vectors,
)
from citadel.app.reindex import ReindexService
from citadel.app.search import SearchService
from citadel.domain.chunking import embedding_key, embedding_text
from citadel.domain.limits import Limits
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from tests.builders import operator

ACTOR = Actor(user_id="reader", tenant="default", role=Role.READER)
QUESTION = "how do I read a data frame from a text file"

BOOK = """# Data Handbook

## Reading files

The read.table function reads a data frame from a text file with one row per line.

## Factors

A factor stores categorical data; its levels are the distinct categories.

## Plotting

The plot function draws scatter plots of two numeric vectors.

## Loops

A for loop repeats its body once for each element of a sequence.

## Packages

The library function attaches an installed package to the search path.
"""
SECTIONS = 5


class Library(SourceRegistry, ChunkStore, LexicalIndex, VectorIndex, Protocol):
    pass


class NamedEmbedder:
    """The hashing embedder under another name; counts its calls and texts, and can
    fail on one call, as a model that crashes or is interrupted would."""

    def __init__(self, name: str, *, fail_on_call: int | None = None) -> None:
        self._inner = HashingEmbedder()
        self.name = name
        self.dimension = self._inner.dimension
        self.calls = 0
        self.texts = 0
        self._fail_on_call = fail_on_call

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.calls == self._fail_on_call:
            raise RuntimeError("the model stopped")
        self.texts += len(texts)
        return self._inner.embed(texts)


@pytest.fixture(params=["sqlite", "memory"])
def library(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Library]:
    if request.param == "sqlite":
        sqlite = SqliteLibrary(tmp_path / "lib.db")
        yield sqlite
        sqlite.close()
    else:
        yield InMemoryLibrary()


@pytest.fixture
def book(tmp_path: Path) -> Path:
    path = tmp_path / "handbook.md"
    path.write_text(BOOK, encoding="utf-8")
    return path


def ingest(
    library: Library, book: Path, embedder: NamedEmbedder | None, tenant: str = "default"
) -> str:
    service = IngestService(
        library,
        FixedClock(),
        embedder=embedder,
        vectors=library if embedder is not None else None,
    )
    document = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20).open(book)
    return service.ingest(document, IngestOptions(tenant=tenant), actor=operator(tenant)).source_id


def dense_sections(library: Library, embedder: NamedEmbedder) -> list[str]:
    search = SearchService(library, library, Limits(), vectors=library, embedder=embedder)
    try:
        result = search.search(SearchRequest(QUESTION, mode=SearchMode.DENSE), ACTOR)
    finally:
        search.close()
    return [e.section for e in result.results]


def test_a_library_built_under_another_model_is_found_again_after_reindex(
    library: Library, book: Path
) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    new = NamedEmbedder("model-new")
    assert dense_sections(library, new) == []
    service = ReindexService(library, new)
    assert service.coverage() == VectorCoverage(chunks=SECTIONS, missing=SECTIONS)

    report = service.reindex()

    assert (report.model, report.chunks, report.had_vectors) == ("model-new", SECTIONS, 0)
    assert (report.embedded, report.reused) == (SECTIONS, 0)
    assert report.seconds >= 0.0
    assert dense_sections(library, new)[0] == "Reading files"
    assert service.coverage() == VectorCoverage(chunks=SECTIONS, missing=0)


def test_a_rerun_embeds_nothing(library: Library, book: Path) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    new = NamedEmbedder("model-new")
    ReindexService(library, new).reindex()
    texts = new.texts

    again = ReindexService(library, new).reindex()

    assert (again.had_vectors, again.embedded, again.reused) == (SECTIONS, 0, 0)
    assert new.texts == texts


def test_an_interrupted_run_keeps_its_stored_batches_and_a_rerun_continues(
    library: Library, book: Path
) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    failing = NamedEmbedder("model-new", fail_on_call=2)
    with pytest.raises(RuntimeError, match="the model stopped"):
        ReindexService(library, failing, batch_size=2).reindex()
    assert library.vector_coverage("model-new") == VectorCoverage(SECTIONS, SECTIONS - 2)

    report = ReindexService(library, NamedEmbedder("model-new"), batch_size=2).reindex()

    assert (report.had_vectors, report.embedded) == (2, SECTIONS - 2)
    assert library.vector_coverage("model-new") == VectorCoverage(SECTIONS, 0)


def test_progress_counts_the_missing_chunks_batch_by_batch(library: Library, book: Path) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    seen: list[tuple[int, int]] = []
    ReindexService(library, NamedEmbedder("model-new"), batch_size=2).reindex(
        lambda done, total: seen.append((done, total))
    )
    assert seen == [(2, SECTIONS), (4, SECTIONS), (5, SECTIONS)]


def test_a_title_edited_since_ingestion_gives_the_chunks_new_keys(
    library: Library, book: Path
) -> None:
    source_id = ingest(library, book, NamedEmbedder("model-old"))
    source = library.get("default", source_id)
    assert source is not None
    library.update(replace(source, title="R for Data Analysis"))
    new = NamedEmbedder("model-new")

    ReindexService(library, new).reindex()

    chunks = library.chunks("default", source_id, 1)
    retitled = [embedding_text("R for Data Analysis", c.section_path, c.text) for c in chunks]
    original = [embedding_text("Data Handbook", c.section_path, c.text) for c in chunks]
    new_keys = [embedding_key(text) for text in retitled]
    assert set(library.cached_vectors(new_keys, "model-new")) == set(new_keys)
    assert library.cached_vectors([embedding_key(t) for t in original], "model-new") == {}
    # Each chunk now points at the vector of its retitled text.
    query = new.embed([retitled[0]])[0]
    score = library.score_vectors(query, "model-new", [chunks[0].chunk_id])[chunks[0].chunk_id]
    assert score == pytest.approx(1.0, abs=1e-5)


def test_a_vector_stored_for_the_same_text_is_reused(library: Library, book: Path) -> None:
    new = NamedEmbedder("model-new")
    ingest(library, book, new, tenant="default")
    # The same book in another tenant, ingested with no embedder: no vectors at all.
    ingest(library, book, None, tenant="other")
    texts = new.texts

    report = ReindexService(library, new).reindex()

    assert (report.chunks, report.had_vectors) == (2 * SECTIONS, SECTIONS)
    assert (report.embedded, report.reused) == (0, SECTIONS)
    assert new.texts == texts
    assert library.vector_coverage("model-new") == VectorCoverage(2 * SECTIONS, 0)


def test_the_same_text_twice_in_one_run_is_embedded_once(library: Library, book: Path) -> None:
    ingest(library, book, None, tenant="default")
    ingest(library, book, None, tenant="other")
    new = NamedEmbedder("model-new")

    report = ReindexService(library, new).reindex()

    assert (report.embedded, report.reused) == (SECTIONS, SECTIONS)
    assert new.texts == SECTIONS


def test_without_an_embedder_reindex_is_a_clear_error(library: Library) -> None:
    service = ReindexService(library, None)
    assert service.coverage() is None
    with pytest.raises(InvalidRequest, match="CITADEL_EMBEDDER"):
        service.reindex()


def test_reingesting_an_unchanged_file_fills_in_the_missing_vectors(
    library: Library, book: Path
) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    new = NamedEmbedder("model-new")
    service = IngestService(library, FixedClock(), embedder=new, vectors=library)
    files = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20)

    report = service.ingest(files.open(book), IngestOptions(), actor=operator())

    assert (report.status, report.version) == ("unchanged", 1)
    assert library.vector_coverage("model-new") == VectorCoverage(SECTIONS, 0)
    assert dense_sections(library, new)[0] == "Reading files"
    texts = new.texts
    assert service.ingest(files.open(book), IngestOptions(), actor=operator()).status == "unchanged"
    assert new.texts == texts


def test_bulk_ingest_of_unchanged_documents_fills_in_the_missing_vectors(
    library: Library, book: Path
) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    new = NamedEmbedder("model-new")
    service = IngestService(library, FixedClock(), embedder=new, vectors=library)
    document = MarkdownParser().parse(book)

    [report] = service.ingest_documents(
        [(ParsedInput(document, origin=str(book.resolve())), IngestOptions())], actor=operator()
    )

    assert report.status == "unchanged"
    assert library.vector_coverage("model-new") == VectorCoverage(SECTIONS, 0)


def test_a_source_deleted_during_the_run_stops_it_with_the_earlier_batches_kept(
    library: Library, book: Path
) -> None:
    source_id = ingest(library, book, NamedEmbedder("model-old"))

    class DeletingEmbedder(NamedEmbedder):
        """Deletes the source while the second batch is being embedded."""

        def embed(self, texts: Sequence[str]) -> Vectors:
            if self.calls == 1:
                library.delete("default", source_id)
            return super().embed(texts)

    service = ReindexService(library, DeletingEmbedder("model-new"), batch_size=2)
    with pytest.raises(LibraryChanged, match="2 vectors stored before are kept") as caught:
        service.reindex()
    assert caught.value.stored == 2
    assert isinstance(caught.value, AppError)
    # The source is gone, so nothing is missing any more and a rerun has nothing to do.
    assert library.vector_coverage("model-new") == VectorCoverage(0, 0)
    assert ReindexService(library, NamedEmbedder("model-new")).reindex().embedded == 0


def test_a_run_lists_the_missing_chunks_a_page_at_a_time(library: Library, book: Path) -> None:
    ingest(library, book, NamedEmbedder("model-old"))
    listed: list[int] = []
    listing = library.unembedded_chunks

    def recorded(model: str, source_id: str | None = None, limit: int | None = None) -> Any:
        found = listing(model, source_id, limit)
        listed.append(len(found))
        return found

    library.unembedded_chunks = recorded  # type: ignore[method-assign]
    seen: list[tuple[int, int]] = []
    report = ReindexService(library, NamedEmbedder("model-new"), batch_size=1, page_size=2).reindex(
        lambda done, total: seen.append((done, total))
    )
    assert report.embedded == SECTIONS
    assert listed == [2, 2, 1, 0], "pages of at most two, then an empty one"
    assert seen == [(n, SECTIONS) for n in range(1, SECTIONS + 1)], "progress per batch"
