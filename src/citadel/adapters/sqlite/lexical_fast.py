"""The ``LexicalIndex`` port: BM25 ranked from memory when the index is current, by FTS5 otherwise.

FTS5 stays the stored index and the reference. Each tenant's FTS5 table is read
into a ``MemoryIndex`` (``lexical_live.py``: the store's own tokens, kept in
step with its generation), and a search ranks there with FTS5's bm25()
arithmetic (``lexical_memory.py``), so both paths return the same chunks in the
same order with the same scores (tests/unit/test_lexical_memory.py). The scope
and filters are the same access clauses FTS5 would AND into the query
(``access.py``), applied as a mask on each posting list before scoring, and
the year bounds compare as SQL does; terms are summed in the order FTS5's
expression lists them (``lexical.py``: common terms last). The FTS5 path
answers whenever the index is missing or behind the store, or a query needs
something the index cannot give exactly (a term FTS5 reads as no token).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.lexical import LexicalSearch
from citadel.adapters.sqlite.lexical_live import DEFAULT_MODE, DEFAULT_WARM_AFTER, LiveIndex
from citadel.adapters.sqlite.schema import fts_table
from citadel.adapters.storage.lexical_memory import Postings
from citadel.adapters.storage.lexical_rank import memory_mask, rank_terms
from citadel.adapters.storage.search_defaults import DEFAULT_MAX_TERM_SHARE, DEFAULT_WEIGHTS
from citadel.app.ports import LexicalHit
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope


class FastLexicalSearch:
    def __init__(
        self,
        db: Database,
        fts: LexicalSearch,
        *,
        weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
        max_term_share: float = DEFAULT_MAX_TERM_SHARE,
        memory: str = DEFAULT_MODE,
        warm_after: int = DEFAULT_WARM_AFTER,
    ) -> None:
        """``fts`` ranks whenever memory cannot; ``weights`` and ``max_term_share``
        must be the ones it was made with."""
        self._db = db
        self._fts = fts
        self._weights = weights
        self._max_term_share = max_term_share
        self._memory = memory
        self._warm_after = warm_after
        self._live: dict[str, LiveIndex] = {}
        self._lock = threading.Lock()

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        if self._memory != "off" and terms:
            found = self.from_memory(terms, scope, filters, limit)
            if found is not None:
                return found
        return self._fts.search(terms, scope, filters, limit)

    def from_fts5(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        """The FTS5 ranking alone (the reference; benchmarks and tests)."""
        return self._fts.search(terms, scope, filters, limit)

    def live(self, tenant: str) -> LiveIndex:
        """The in-memory index of ``tenant``'s table (made on first use)."""
        table = fts_table(tenant)
        with self._lock:
            live = self._live.get(table)
            if live is None:
                live = LiveIndex(
                    self._db.path,
                    table,
                    (*self._weights, 0.0),
                    mode=self._memory,
                    warm_after=self._warm_after,
                )
                self._live[table] = live
        return live

    def from_memory(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> list[LexicalHit] | None:
        """The ranking from memory, or None when FTS5 must answer."""
        live = self.live(scope.tenant)
        index = live.current(self._db.generation())
        if index is None:
            return None
        if index.rows == 0:
            return []  # no table for this tenant yet, or an empty one
        postings: dict[str, Postings] = {}
        for term in dict.fromkeys(terms):
            tokens = live.tokens(term)
            if not tokens:
                return None
            found = live.phrase(index, tokens)
            if found is None:
                return None
            postings[term] = found
        admitted, mask = memory_mask(index, scope, filters, live.tokens)
        if not admitted:
            return None
        return rank_terms(
            index, terms, postings, mask, filters, limit, max_term_share=self._max_term_share
        )

    def close(self) -> None:
        with self._lock:
            live, self._live = list(self._live.values()), {}
        for each in live:
            each.close()
