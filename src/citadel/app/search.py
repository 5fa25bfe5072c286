"""Search use case: plain-text query in, ranked evidence with scores in [0, 1] out.

Hybrid by default: BM25 over FTS5 and exact dense search each return their
best candidates (both with the actor's scope and the filters applied inside),
and the two rankings are fused into one score (``citadel.domain.fusion``).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from citadel.app.errors import InvalidRequest
from citadel.app.ports import (
    ChunkStore,
    Embedder,
    LexicalIndex,
    OperationMetrics,
    StoredPassage,
    VectorIndex,
    Vectors,
)
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.domain.fusion import (
    FusionPolicy,
    calibrate,
    dense_evidence,
    diversify,
    fuse,
    term_coverage,
)
from citadel.domain.limits import Limits
from citadel.domain.search import Evidence, SearchFilters, SearchMode, SearchRequest, SearchResult
from citadel.domain.source import AccessScope
from citadel.domain.text import STOPWORDS, utf8_size, words
from citadel.domain.users import Actor

# How many of the best hits may lend the query its confidence (see fusion.calibrate).
_CONFIDENCE_DEPTH = 10
# Diversity re-ranks twice ``limit`` fused hits, and at least this many (reading 20
# more passages costs about 0.5 ms on the QA library).
_DIVERSITY_POOL = 20
_LEXICAL_ONLY = FusionPolicy(method="weighted", lexical_weight=1.0, dense_weight=0.0)
_DENSE_ONLY = FusionPolicy(method="weighted", lexical_weight=0.0, dense_weight=1.0)


DEFAULT_CANDIDATES = 100
"""Hits each method contributes before fusion (``CITADEL_SEARCH_CANDIDATES``)."""


def _best_first(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


class QueryVectorCache:
    """A small LRU of query embeddings: repeated questions skip the model."""

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Vectors | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], vector: Vectors) -> None:
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)


class SearchService:
    def __init__(
        self,
        lexical: LexicalIndex,
        chunks: ChunkStore,
        limits: Limits,
        *,
        vectors: VectorIndex | None = None,
        embedder: Embedder | None = None,
        fusion: FusionPolicy | None = None,
        candidates: int = DEFAULT_CANDIDATES,
        metrics: OperationMetrics | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        if (vectors is None) != (embedder is None):
            raise ValueError("dense search needs both a vector index and an embedder")
        self._lexical = lexical
        self._chunks = chunks
        self._limits = limits
        self._vectors = vectors
        self._embedder = embedder
        self._fusion = fusion or FusionPolicy()
        self._candidates = candidates
        self._query_vectors = QueryVectorCache()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="citadel-dense")
        self._metrics = metrics
        self._tracer = tracer or NullTracer()

    @property
    def dense_enabled(self) -> bool:
        return self._embedder is not None

    def search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        """``_search``, timed by the mode asked in ``metrics`` when it answers."""
        started = time.perf_counter()
        with self._tracer.span("search", mode=request.mode.value, limit=request.limit) as span:
            result = self._search(request, actor)
            span.set(results=len(result.results))
        if self._metrics is not None:
            self._metrics.search(request.mode.value, time.perf_counter() - started)
        return result

    def _search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        """Rank the chunks ``actor`` may read; the query is always plain text."""
        query = request.query
        if utf8_size(query) > self._limits.max_query_bytes:
            raise InvalidRequest(f"the query is over {self._limits.max_query_bytes} bytes")
        if not query.strip():
            raise InvalidRequest("the query is empty")
        limit = min(request.limit, self._limits.max_results)
        depth = max(self._candidates, limit)
        scope = AccessScope.of(actor)
        lexical: dict[str, float] = {}
        dense: dict[str, float] = {}
        tokens = words(query)
        terms = tuple(dict.fromkeys([t for t in tokens if t not in STOPWORDS] or tokens))
        vector: Vectors | None = None
        want_dense = request.mode in {SearchMode.HYBRID, SearchMode.DENSE}
        if want_dense and (self._vectors is None or self._embedder is None):
            if request.mode is SearchMode.DENSE:
                raise InvalidRequest("dense search is not configured")
            want_dense = False
        # The dense side (query embedding, then the matrix product) runs on another
        # thread while FTS5 ranks here: both release the GIL, so on two cores a
        # hybrid search costs about the slower of the two, not their sum. (In a copy of
        # this context: its span is a child of this search's.)
        run_here = contextvars.copy_context().run
        pending = (
            self._pool.submit(run_here, self._dense_search, query, scope, request.filters, depth)
            if want_dense
            else None
        )
        try:
            if request.mode in {SearchMode.HYBRID, SearchMode.LEXICAL}:
                with self._tracer.span("lexical", terms=len(terms), depth=depth) as span:
                    hits = self._lexical.search(terms, scope, request.filters, depth)
                    span.set(hits=len(hits))
                lexical = {hit.chunk_id: hit.score for hit in hits}
        finally:
            if pending is not None:
                vector, dense = pending.result()
        with self._tracer.span("fusion", lexical=len(lexical), dense=len(dense)) as span:
            result = self._fuse(request, terms, limit, lexical, dense, vector)
            span.set(results=len(result.results))
        return result

    def _fuse(
        self,
        request: SearchRequest,
        terms: tuple[str, ...],
        limit: int,
        lexical: dict[str, float],
        dense: dict[str, float],
        vector: Vectors | None,
    ) -> SearchResult:
        """The two rankings fused, calibrated, and read back as evidence."""
        query = request.query
        if request.mode is SearchMode.HYBRID and vector is not None and self._vectors is not None:
            # Lexical hits outside the dense top list get their exact cosine, so a
            # passage is not penalised for missing the other method's list. Exact
            # cosines cost a few dot products; re-scoring dense-only hits with BM25
            # would cost another FTS5 pass and gained 0.0004 nDCG@10 (SciFact train).
            assert self._embedder is not None
            only_lexical = [c for c in lexical if c not in dense]
            dense.update(self._vectors.score_vectors(vector, self._embedder.name, only_lexical))
        policy = {
            SearchMode.HYBRID: self._fusion if self._embedder is not None else _LEXICAL_ONLY,
            SearchMode.LEXICAL: _LEXICAL_ONLY,
            SearchMode.DENSE: _DENSE_ONLY,
        }[request.mode]
        # Repeats of one section yield to other sections (fusion.diversify), among
        # twice as many fused hits as asked for (at least 20), so other sections can move up.
        fused = fuse(_best_first(lexical), _best_first(dense), policy)
        pool = fused[: max(2 * limit, _DIVERSITY_POOL)]
        stored = self._chunks.passages([chunk_id for chunk_id, _ in pool]) if pool else {}
        sections = {
            chunk_id: (found.chunk.source_id, found.chunk.section_path)
            for chunk_id, found in stored.items()
        }
        ranked = diversify(pool, sections, self._fusion.section_decay)[:limit]
        # The confidence comes from the fused order's best hits, as it did before
        # diversity: which passages diversity moves in or out must not change it.
        confidence = 0.0
        for chunk_id, _ in pool[: min(limit, _CONFIDENCE_DEPTH)]:
            passage = stored.get(chunk_id)
            if passage is None:
                continue
            text = " ".join((passage.source.title, *passage.chunk.section_path, passage.chunk.text))
            evidence = term_coverage(terms, text)
            if chunk_id in dense:
                evidence = max(evidence, dense_evidence(dense[chunk_id], self._fusion))
            confidence = max(confidence, evidence)
        # A zero score is no evidence at all: nearest neighbours of a query about
        # something the library does not hold are not results.
        scored = [(chunk_id, s) for chunk_id, s in calibrate(ranked, confidence) if s > 0.0]
        return SearchResult(query=query, results=self._evidence(scored, stored))

    def _dense_search(
        self, query: str, scope: AccessScope, filters: SearchFilters, depth: int
    ) -> tuple[Vectors, dict[str, float]]:
        assert self._vectors is not None and self._embedder is not None
        with self._tracer.span("dense", embedder=self._embedder.name, depth=depth) as span:
            vector = self._query_vector(query)
            found = self._vectors.search_vectors(vector, self._embedder.name, scope, filters, depth)
            span.set(hits=len(found))
        return vector, {hit.chunk_id: hit.score for hit in found}

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def _query_vector(self, query: str) -> Vectors:
        assert self._embedder is not None
        key = (self._embedder.name, " ".join(query.split()))
        cached = self._query_vectors.get(key)
        if cached is None:
            cached = self._embedder.embed([query])[0]
            self._query_vectors.put(key, cached)
        return cached

    def _evidence(
        self, ranked: Sequence[tuple[str, float]], stored: Mapping[str, StoredPassage]
    ) -> tuple[Evidence, ...]:
        results: list[Evidence] = []
        for chunk_id, score in ranked:
            found = stored.get(chunk_id)
            if found is None:  # deleted between ranking and reading
                continue
            chunk, source = found.chunk, found.source
            results.append(
                Evidence(
                    evidence_id=chunk.chunk_id,
                    source_id=chunk.source_id,
                    version=chunk.version,
                    chunk_id=chunk.chunk_id,
                    title=source.title,
                    author=source.author,
                    chapter=chunk.chapter,
                    section=chunk.section,
                    section_path=chunk.section_path,
                    page_start=chunk.page_start,
                    page_end=chunk.page_end,
                    page_label_start=chunk.page_label_start,
                    page_label_end=chunk.page_label_end,
                    score=min(1.0, max(0.0, score)),
                    passage=chunk.text,
                    content_sha256=chunk.sha256,
                    units=chunk.units,
                )
            )
        return tuple(results)
