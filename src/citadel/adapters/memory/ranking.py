"""The in-memory library's lexical ranking: BM25 over the chunks it holds.

Exact collection statistics over the live, current chunks offered (title, section
path and text, stemmed as ``domain.text`` stems).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from citadel.app.ports import LexicalHit
from citadel.domain.document import Chunk
from citadel.domain.source import Source
from citadel.domain.text import stem, words


def bm25(terms: Sequence[str], chunks: Iterable[tuple[Chunk, Source]]) -> list[LexicalHit]:
    """BM25 over these chunks (the live, current ones among them), with their collection
    statistics, best first; callers then keep what the actor may read."""
    wanted = {stem(t.casefold()) for t in terms}
    if not wanted:
        return []
    docs: list[tuple[Chunk, Counter[str]]] = []
    for chunk, source in chunks:
        if chunk.version != source.current_version or source.deleted:
            continue
        text = " ".join((source.title, *chunk.section_path, chunk.text))
        docs.append((chunk, Counter(stem(w) for w in words(text))))
    if not docs:
        return []
    avg = sum(sum(c.values()) for _, c in docs) / len(docs)
    df = {t: sum(1 for _, c in docs if c[t]) for t in wanted}
    hits: list[LexicalHit] = []
    for chunk, counts in docs:
        length = sum(counts.values())
        score = 0.0
        for term in wanted:
            tf = counts[term]
            if not tf:
                continue
            idf = math.log(1 + (len(docs) - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
        if score > 0:
            hits.append(LexicalHit(chunk.chunk_id, score))
    hits.sort(key=lambda h: (-h.score, h.chunk_id))
    return hits
