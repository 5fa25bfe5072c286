"""A library embedded with truncation is stale for the windowed embedder; reindex fixes it.

Windowing changes the vectors of long chunks only, under a new model name
(``…-win``), so a library built before has no vectors under the name search
now reads. ``citadel reindex`` embeds its chunks again (chunks and citations
unchanged); the long chunk's vector then covers its tail, which dense search
finds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.files import FileDocuments
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import Embedder
from citadel.app.reindex import ReindexService
from citadel.app.search import SearchService
from citadel.domain.chunking import embedding_key, embedding_text
from citadel.domain.limits import Limits
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from tests.builders import operator

# Configuration lines: few estimated pieces, many real ones, so one chunk holds
# them all (the chunker's estimate) and its tail lies past the model's window.
FILLER = "Set qzx_vrk=7 in ledgrcfg then run ldgsync --fxq. "
TAIL = "Penguins huddle together on the Antarctic ice to survive the winter storms."
BOOK = f"""# Ledger Handbook

## Records

{FILLER * 14}{TAIL}

## Columns

Columns hold the amounts, the accounts and the currency of each record.
"""
ACTOR = Actor(user_id="reader", tenant="default", role=Role.READER)


@pytest.fixture
def library(tmp_path: Path) -> Iterator[SqliteLibrary]:
    lib = SqliteLibrary(tmp_path / "lib.db")
    yield lib
    lib.close()


def ingest(library: SqliteLibrary, book: Path, embedder: Embedder) -> None:
    service = IngestService(library, FixedClock(), embedder=embedder, vectors=library)
    document = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20).open(book)
    service.ingest(document, IngestOptions(tenant="default"), actor=operator("default"))


def test_reindex_gives_a_truncated_library_windowed_vectors(
    library: SqliteLibrary, tmp_path: Path
) -> None:
    book = tmp_path / "ledger.md"
    book.write_text(BOOK, encoding="utf-8")
    truncated, windowed = MiniLmEmbedder(windows=False), MiniLmEmbedder()
    ingest(library, book, truncated)
    (source,) = library.list("default")
    chunks = library.chunks("default", source.source_id, 1)
    long_chunk = next(c for c in chunks if TAIL in c.text)
    text = embedding_text(source.title, long_chunk.section_path, long_chunk.text)

    service = ReindexService(library, windowed)
    before = service.coverage()
    assert before is not None and before.missing == before.chunks == len(chunks)
    report = service.reindex()
    assert report.embedded == len(chunks)
    assert service.coverage() == before.__class__(chunks=len(chunks), missing=0)

    key = embedding_key(text)
    stored = library.cached_vectors([key], windowed.name)[key]
    old = library.cached_vectors([key], truncated.name)[key]
    np.testing.assert_allclose(stored, windowed.embed([text])[0], atol=1e-6)
    np.testing.assert_allclose(old, truncated.embed([text.replace(TAIL, "")])[0], atol=1e-6)
    assert float(stored @ old) < 0.99  # the truncated vector never saw the tail

    search = SearchService(library, library, Limits(), vectors=library, embedder=windowed)
    try:
        found = search.search(
            SearchRequest("penguins on antarctic ice in winter", mode=SearchMode.DENSE), ACTOR
        )
    finally:
        search.close()
    assert found.results[0].chunk_id == long_chunk.chunk_id
