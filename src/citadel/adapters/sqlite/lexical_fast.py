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

from citadel.adapters.sqlite.access import access_clauses
from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.lexical import (
    _SKIP_SHARE,
    DEFAULT_MAX_TERM_SHARE,
    DEFAULT_WEIGHTS,
    LexicalSearch,
)
from citadel.adapters.sqlite.lexical_live import DEFAULT_MODE, DEFAULT_WARM_AFTER, LiveIndex
from citadel.adapters.sqlite.lexical_memory import Mask, MemoryIndex, Postings
from citadel.adapters.sqlite.schema import fts_table
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
        frequency = {term: found.rows.size for term, found in postings.items()}
        rows = index.rows
        if self._max_term_share < 1.0 and len(terms) >= 2 and rows:
            # lexical.py's _selective: common terms dropped while a rarer one is left.
            terms = [t for t in terms if frequency[t] / rows <= self._max_term_share] or terms
        by_year = filters.year_min is not None or filters.year_max is not None
        order = list(terms)
        if not by_year and len(terms) >= 2:
            # lexical.py's _skip_plan lists the common terms last, most common last.
            common = sorted(
                (t for t in terms if frequency[t] > _SKIP_SHARE * rows),
                key=frequency.__getitem__,
            )
            order = [t for t in terms if t not in common] + common
        admitted, mask = self._mask(live, index, scope, filters)
        if not admitted:
            return None
        hits = index.rank([postings[t] for t in order], mask, limit, ties_by_chunk_id=by_year)
        return [LexicalHit(chunk_id=chunk_id, score=score) for chunk_id, score in hits]

    @staticmethod
    def _mask(
        live: LiveIndex, index: MemoryIndex, scope: AccessScope, filters: SearchFilters
    ) -> tuple[bool, Mask | None]:
        """(True, the admitted chunks as a mask, None for all), or (False, None) when a
        clause token is not one FTS5 token (then FTS5 answers)."""
        # Every clause, even those FTS5 may leave out because they exclude nothing.
        clauses = []
        for clause in access_clauses(scope, filters, only_tenant=None, any_acl=True):
            tokens = []
            for value in clause:
                found = live.tokens(value)
                if found is None or len(found) != 1:
                    return False, None
                tokens.append(found[0])
            clauses.append(tokens)
        return True, index.mask(clauses, filters.year_min, filters.year_max)

    def close(self) -> None:
        with self._lock:
            live, self._live = list(self._live.values()), {}
        for each in live:
            each.close()
