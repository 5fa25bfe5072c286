"""The in-memory lexical index kept in step with the store's generation.

A search asks for the index at the database's current generation and gets it
or None; None means "rank in FTS5", which is always exact, so a search never
waits for a build it did not ask for and never sees a half-built or stale
index: an index is replaced whole (one reference swap) and carries the
generation it was read at. Modes:

- ``sync``: the search that finds the index missing or behind reads it first
  (evaluation runs, benchmarks, tests);
- ``background`` (the default): once ``warm_after`` searches have found it
  missing or behind, one thread reads it while FTS5 answers; one-shot commands
  (a single search) never pay for a build;
- ``off``: FTS5 only.

Any write bumps the generation, and the next index is read whole (SciFact's
9.6k chunks in about a second; see docs/retrieval.md).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from citadel.adapters.sqlite.lexical_fts5 import (
    Cancelled,
    connect,
    read_index,
    read_phrase,
    tokenizer_declaration,
)
from citadel.adapters.storage.lexical_memory import MemoryIndex, Postings
from citadel.adapters.storage.tokens import QueryTokens

MODES = ("background", "sync", "off")
DEFAULT_MODE = "background"
DEFAULT_WARM_AFTER = 2
GENERATION_SQL = "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'"
_log = logging.getLogger(__name__)


class LiveIndex:
    def __init__(
        self,
        path: Path,
        table: str,
        weights: Sequence[float],
        *,
        mode: str = DEFAULT_MODE,
        warm_after: int = DEFAULT_WARM_AFTER,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"lexical memory mode {mode!r} is not one of {MODES}")
        self._path = path
        self._table = table
        self._weights = tuple(weights)
        self._mode = mode
        self._warm_after = warm_after
        self._index: MemoryIndex | None = None
        self._misses = 0
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._builder: threading.Thread | None = None
        self._closed = threading.Event()
        self._phrase_conn: sqlite3.Connection | None = None
        self._tokens: QueryTokens | None = None
        self.last_build_s = 0.0

    def current(self, generation: int) -> MemoryIndex | None:
        """The index at ``generation``, or None (then FTS5 ranks)."""
        index = self._index
        if index is not None and index.generation == generation:
            return index
        if self._mode == "off" or self._closed.is_set():
            return None
        if self._mode == "sync":
            with self._build_lock:
                index = self._index
                if index is None or index.generation != generation:
                    self._build()
            index = self._index
            return index if index is not None and index.generation == generation else None
        with self._lock:
            self._misses += 1
            if self._misses >= self._warm_after and (
                self._builder is None or not self._builder.is_alive()
            ):
                self._misses = 0
                self._builder = threading.Thread(
                    target=self._build_quietly, name="citadel-lexical", daemon=True
                )
                self._builder.start()
        return None

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a background build in progress (benchmarks)."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    def tokens(self, term: str) -> tuple[str, ...] | None:
        """FTS5's tokens of ``term``, with the table's tokenizer (None: no table yet)."""
        tokens = self._tokens
        if tokens is None:
            with self._lock:
                if self._tokens is None:
                    conn = sqlite3.connect(self._path)
                    try:
                        declaration = tokenizer_declaration(conn, self._table)
                    finally:
                        conn.close()
                    if declaration is None:
                        return None
                    self._tokens = QueryTokens(declaration)
                tokens = self._tokens
        return tokens(term)

    def phrase(self, index: MemoryIndex, tokens: Sequence[str]) -> Postings | None:
        """A token's or phrase's postings in ``index`` (None: the store moved on)."""
        found = index.postings(tokens)
        if found is not None:
            return found
        with self._lock:
            if self._phrase_conn is None:
                self._phrase_conn = connect(self._path)
            found = read_phrase(self._phrase_conn, self._table, index, tokens, GENERATION_SQL)
        if found is not None:
            index.remember_phrase(tokens, found)
        return found

    def close(self) -> None:
        self._closed.set()
        builder = self._builder
        if builder is not None:
            builder.join()
        with self._lock:
            if self._phrase_conn is not None:
                self._phrase_conn.close()
                self._phrase_conn = None
            if self._tokens is not None:
                self._tokens.close()
                self._tokens = None
        self._index = None

    def _build_quietly(self) -> None:
        with self._build_lock:
            try:
                self._build()
            except Cancelled:
                pass
            except sqlite3.Error:
                # FTS5 keeps answering; the next searches try again.
                _log.exception("reading the lexical index into memory failed")

    def _build(self) -> None:
        began = time.perf_counter()
        conn = connect(self._path)
        try:
            index = read_index(
                conn, self._table, self._weights, GENERATION_SQL, self._closed.is_set
            )
        finally:
            conn.close()
        self._index = index
        self.last_build_s = time.perf_counter() - began
        _log.info(
            "lexical index %s in memory: %d chunks, %.1f MiB, read in %.2f s (generation %d)",
            self._table,
            index.rows,
            index.nbytes / 2**20,
            self.last_build_s,
            index.generation,
        )
