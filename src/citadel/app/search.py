"""Search use case: plain-text query in, ranked evidence with normalised scores out."""

from __future__ import annotations

from citadel.app.errors import InvalidRequest
from citadel.app.ports import ChunkStore, LexicalIndex
from citadel.domain.model import Actor, Evidence, Limits, SearchRequest, SearchResult
from citadel.domain.source import AccessScope
from citadel.domain.text import STOPWORDS, utf8_size, words


class SearchService:
    def __init__(self, lexical: LexicalIndex, chunks: ChunkStore, limits: Limits) -> None:
        self._lexical = lexical
        self._chunks = chunks
        self._limits = limits

    def search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        """Rank the chunks ``actor`` may read; the query is always plain text."""
        query = request.query
        if utf8_size(query) > self._limits.max_query_bytes:
            raise InvalidRequest(f"the query is over {self._limits.max_query_bytes} bytes")
        if not query.strip():
            raise InvalidRequest("the query is empty")
        tokens = words(query)
        meaningful = [t for t in tokens if t not in STOPWORDS] or tokens
        limit = min(request.limit, self._limits.max_results)
        hits = self._lexical.search(
            tuple(dict.fromkeys(meaningful)), AccessScope.of(actor), request.filters, limit
        )
        if not hits:
            return SearchResult(query=query)
        stored = self._chunks.passages([hit.chunk_id for hit in hits])
        best = max(hit.score for hit in hits) or 1.0
        results: list[Evidence] = []
        for hit in hits:
            found = stored.get(hit.chunk_id)
            if found is None:
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
                    # Per-query max normalisation until fusion calibrates scores.
                    score=min(1.0, max(0.0, hit.score / best)),
                    passage=chunk.text,
                    content_sha256=chunk.sha256,
                )
            )
        return SearchResult(query=query, results=tuple(results))
