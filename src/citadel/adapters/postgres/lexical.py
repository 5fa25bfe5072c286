"""The ``LexicalIndex`` port on PostgreSQL: BM25 from memory over the store's FTS5 tokens.

Each tenant's lexical rows (``chunks.py``: FTS5's tokens of title, headings, body
and access) are read into a ``MemoryIndex`` at one generation, in one snapshot;
a search asks for the tenant's index at the database's current generation (one
row read), and reads it again when any server's write has moved it on. Ranking
is ``adapters/storage/lexical_rank.py``, the code the SQLite library ranks with
from memory, so both backends return the same chunks in the same order with the
same scores. A query term is tokenised by FTS5 (``QueryTokens``); a term of
several tokens is a phrase, whose postings come from the token positions of the
chunks holding all its tokens, read in a snapshot at the index's generation.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import numpy as np

from citadel.adapters.postgres.database import Database
from citadel.adapters.postgres.lexical_build import read_index, read_phrase
from citadel.adapters.storage.lexical_memory import MemoryIndex, Postings
from citadel.adapters.storage.lexical_rank import memory_mask, rank_terms
from citadel.adapters.storage.search_defaults import DEFAULT_MAX_TERM_SHARE, DEFAULT_WEIGHTS
from citadel.adapters.storage.tokens import QueryTokens
from citadel.app.errors import ServiceUnavailable
from citadel.app.ports import LexicalHit
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope

_RETRIES = 3
_EMPTY = Postings(np.zeros(0, np.int32), np.zeros(0))
_log = logging.getLogger(__name__)


class PostgresLexical:
    def __init__(
        self,
        db: Database,
        *,
        weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
        max_term_share: float = DEFAULT_MAX_TERM_SHARE,
    ) -> None:
        self._db = db
        self._weights = (*weights, 0.0)
        self._max_term_share = max_term_share
        self._indexes: dict[str, MemoryIndex] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._tokens = QueryTokens()
        self.last_build_s = 0.0

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        if not terms or limit <= 0:
            return []
        for _ in range(_RETRIES):
            index = self.index(scope.tenant)
            if index.rows == 0:
                return []
            found = self._rank(index, terms, scope, filters, limit)
            if found is not None:
                return found
        # Another server kept writing (each write moves the generation): a busy store,
        # which every edge answers as retryable (HTTP 503), never an internal error.
        raise ServiceUnavailable("the library kept changing during a lexical search; try again")

    def index(self, tenant: str) -> MemoryIndex:
        """``tenant``'s index at the database's current generation (read if behind)."""
        generation = self._db.generation()
        index = self._indexes.get(tenant)
        if index is not None and index.generation == generation:
            return index
        with self._lock:
            lock = self._locks.setdefault(tenant, threading.Lock())
        with lock:
            index = self._indexes.get(tenant)
            if index is None or index.generation < generation:
                began = time.perf_counter()
                with self._db.read(snapshot=True) as conn:
                    index = read_index(conn, tenant, self._weights)
                self.last_build_s = time.perf_counter() - began
                _log.info(
                    "lexical index of a tenant in memory: %d chunks, %.1f MiB, read in %.2f s"
                    " (generation %d)",
                    index.rows,
                    index.nbytes / 2**20,
                    self.last_build_s,
                    index.generation,
                )
                with self._lock:
                    self._indexes[tenant] = index
        return index

    def _rank(
        self,
        index: MemoryIndex,
        terms: Sequence[str],
        scope: AccessScope,
        filters: SearchFilters,
        limit: int,
    ) -> list[LexicalHit] | None:
        """The ranking, or None when the store moved on while a phrase was read."""
        postings: dict[str, Postings] = {}
        for term in dict.fromkeys(terms):
            tokens = self._tokens(term)
            if not tokens:
                postings[term] = _EMPTY  # FTS5: a phrase of no token matches nothing
                continue
            found = index.postings(tokens)
            if found is None:
                with self._db.read(snapshot=True) as conn:
                    found = read_phrase(conn, index, tokens)
                if found is None:
                    return None
                index.remember_phrase(tokens, found)
            postings[term] = found
        admitted, mask = memory_mask(index, scope, filters, self._tokens)
        if not admitted:
            # An access token FTS5 splits is a bug, never a reason to show more.
            raise RuntimeError("an access token is not one FTS5 token")
        return rank_terms(
            index, terms, postings, mask, filters, limit, max_term_share=self._max_term_share
        )

    def close(self) -> None:
        with self._lock:
            self._indexes.clear()
        self._tokens.close()
