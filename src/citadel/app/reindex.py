"""Reindex use case: give every current chunk a vector under the configured embedder.

Vectors are stored per (embedded text hash, model name), and dense search reads
only the configured model's. A library built under another model (another
``CITADEL_EMBEDDER``, or a model whose name changed with its arithmetic) has
no vectors under this one, so dense search finds nothing there; re-ingesting
the unchanged files is a no-op and cannot help. This use case embeds exactly
the chunks that lack a vector, reuses a vector already stored for the same
text, and stores each batch as it completes: an interrupted run keeps what it
did, and a rerun carries on from there.

It also stores the quotable units of the chunks stored before ingest cut them
(``Chunk.units``: a library of schema 6 or older), so the extractive generator
reads them rather than cutting them on every answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from citadel.app.errors import InvalidRequest, LibraryChanged
from citadel.app.ports import (
    Embedder,
    ProgressCallback,
    UnembeddedChunk,
    UnitStore,
    VectorCoverage,
    VectorIndex,
)
from citadel.domain.chunking import embedding_key, embedding_text

# Chunks per batch: what the ingest embeds at a time, and what a run loses at most
# when it is interrupted.
DEFAULT_BATCH = 256
# Missing chunks listed at a time. Each listing reads past every chunk that has a
# vector (2 s at 100k chunks, measured), so pages much smaller than this would
# spend minutes listing; 4,096 texts are a few MiB.
DEFAULT_PAGE = 4096


@dataclass(frozen=True, slots=True)
class ReindexReport:
    model: str
    chunks: int
    """Current chunks of live sources."""
    had_vectors: int
    """Chunks that already had a vector under ``model``; nothing was done for them."""
    embedded: int
    """Texts the embedder ran on."""
    reused: int
    """Chunks that got a vector without the embedder: one was stored for the same text
    (under another chunk, or earlier in this run)."""
    seconds: float
    units_stored: int = 0
    """Chunks whose quotable units were cut and stored (they had none)."""


class ReindexService:
    """Fills in the configured model's missing vectors, for the whole library or a few sources."""

    def __init__(
        self,
        vectors: VectorIndex,
        embedder: Embedder | None,
        *,
        batch_size: int = DEFAULT_BATCH,
        page_size: int = DEFAULT_PAGE,
        units: tuple[UnitStore, Callable[[str], str]] | None = None,
    ) -> None:
        """``units``: where units are stored and what cuts a chunk's text into them
        (as ``IngestService``'s), to fill in those of chunks stored without."""
        if batch_size < 1 or page_size < 1:
            raise ValueError("batch_size and page_size must be at least 1")
        self._vectors = vectors
        self._units = units
        self._embedder = embedder
        self._batch_size = batch_size
        self._page_size = page_size

    def coverage(self) -> VectorCoverage | None:
        """How many current chunks the configured model's vectors cover; None when no
        embedder is configured (search is lexical only, and nothing is missing)."""
        if self._embedder is None:
            return None
        return self._vectors.vector_coverage(self._embedder.name)

    @property
    def model(self) -> str | None:
        """The configured embedder's name, the model vectors are stored under."""
        return self._embedder.name if self._embedder is not None else None

    def reindex(self, progress: ProgressCallback | None = None) -> ReindexReport:
        """Store the quotable units chunks lack, then embed every current chunk that has
        no vector under the configured model.

        ``progress`` gets (chunks done, chunks missing) after each stored batch.
        ``InvalidRequest`` when no embedder is configured (after the units, which need
        none, are stored); ``LibraryChanged`` when a
        chunk went away meanwhile (the batches stored before it are kept).
        """
        started = time.perf_counter()
        units_stored = self.fill_units()  # needs no embedder
        embedder = self._embedder
        if embedder is None:
            stored = f" (quotable units were stored for {units_stored:,} chunks)"
            raise InvalidRequest(
                "no embedder is configured (CITADEL_EMBEDDER=none), so there are no vectors"
                " to build; set CITADEL_EMBEDDER=minilm to use dense search"
                + (stored if units_stored else "")
            )
        coverage = self._vectors.vector_coverage(embedder.name)
        embedded = reused = 0
        previous: set[str] = set()
        # A page at a time, so a large library's texts are never all in memory:
        # storing a page's vectors takes its chunks off the list of missing ones.
        while page := self._vectors.unembedded_chunks(embedder.name, limit=self._page_size):
            ids = {c.chunk_id for c in page}
            if ids & previous:
                raise RuntimeError("stored vectors did not take their chunks off the list")
            before = embedded + reused

            def tick(done: int, _: int, before: int = before) -> None:
                if progress:
                    progress(before + done, max(before + done, coverage.missing))

            more_embedded, more_reused = self._store(embedder, page, tick, done=before)
            embedded, reused, previous = embedded + more_embedded, reused + more_reused, ids
        return ReindexReport(
            model=embedder.name,
            chunks=coverage.chunks,
            had_vectors=coverage.chunks - coverage.missing,
            embedded=embedded,
            reused=reused,
            seconds=time.perf_counter() - started,
            units_stored=units_stored,
        )

    def fill_units(self) -> int:
        """Cut and store the quotable units of every chunk stored without; how many.
        (About 0.15 ms a chunk: seconds for a library of tens of thousands.)"""
        if self._units is None:
            return 0
        store, cut = self._units
        stored = 0
        while page := store.chunks_without_units(self._page_size):
            took = store.store_units({chunk_id: cut(text) for chunk_id, text in page})
            # None taken: every one got units meanwhile, or went; else the list is stuck.
            if took == 0 and store.chunks_without_units(1) == page[:1]:
                raise RuntimeError("stored units did not take their chunks off the list")
            stored += took
        return stored

    def fill_sources(
        self,
        source_ids: Sequence[str],
        progress: ProgressCallback | None = None,
        *,
        tenant: str | None = None,
    ) -> int:
        """Embed the current chunks of these sources that have no vector under the
        configured model (none when no embedder is configured); return how many.

        Source ids are scoped to their tenant: with ``tenant``, only its sources of
        these ids; without, every tenant's (more work, never a wrong vector).

        Best effort: when the library changes meanwhile, what was stored stays and
        the rest is left to the next ingest or ``reindex``.
        """
        embedder = self._embedder
        if embedder is None:
            return 0
        pending = [
            chunk
            for source_id in dict.fromkeys(source_ids)
            for chunk in self._vectors.unembedded_chunks(embedder.name, source_id, tenant=tenant)
        ]
        try:
            embedded, reused = self._store(embedder, pending, progress)
        except LibraryChanged as exc:
            return exc.stored
        return embedded + reused

    def _store(
        self,
        embedder: Embedder,
        pending: Sequence[UnembeddedChunk],
        progress: ProgressCallback | None,
        *,
        done: int = 0,
    ) -> tuple[int, int]:
        """Embed and store ``pending`` batch by batch; (texts embedded, chunks reused).

        ``done``: chunks stored before this call, for ``LibraryChanged``'s count.
        """
        model = embedder.name
        embedded = reused = 0
        for start in range(0, len(pending), self._batch_size):
            batch = pending[start : start + self._batch_size]
            # The key follows the source's title now, so a title edited since
            # ingestion gets the vector of the text search now embeds.
            texts = [embedding_text(c.title, c.section_path, c.text) for c in batch]
            keys = [embedding_key(text) for text in texts]
            known = self._vectors.cached_vectors(keys, model)
            fresh = {key: text for key, text in zip(keys, texts, strict=True) if key not in known}
            if fresh:
                known.update(zip(fresh, embedder.embed(list(fresh.values())), strict=True))
            matrix = np.stack([known[key] for key in keys]).astype(np.float32, copy=False)
            try:
                self._vectors.store_vectors(model, [c.chunk_id for c in batch], keys, matrix)
            except ValueError as exc:  # a chunk is gone: deleted or pruned since the listing
                raise LibraryChanged(
                    f"the library changed during the reindex ({exc}); the {done + start:,}"
                    " vectors stored before are kept: run it again to continue",
                    stored=done + start,
                ) from exc
            embedded += len(fresh)
            reused += len(batch) - len(fresh)
            if progress:
                progress(start + len(batch), len(pending))
        return embedded, reused
