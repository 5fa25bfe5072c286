"""Vectors for ingested chunks: reuse what the index holds, embed only the rest.

Vectors are keyed by the hash of the text embedded (title, section path and
chunk text) and the model's name, so a re-ingested or moved book costs no
embedding; missing texts go to the embedder in batches, across a whole bulk
ingest at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citadel.app.ingest.versions import PreparedVersion
from citadel.app.ports import ChunkVectors, Embedder, ProgressCallback, VectorIndex, Vectors
from citadel.app.reindex import ReindexService
from citadel.domain.chunking import embedding_key, embedding_text

_BATCH = 256
"""Texts per call of the embedder (progress is reported after each)."""


class ChunkEmbedding:
    """The ingest's embedding step; without an embedder, versions commit no vectors."""

    def __init__(self, embedder: Embedder | None, vectors: VectorIndex | None) -> None:
        if (embedder is None) != (vectors is None):
            raise ValueError("an embedder needs a vector index, and the reverse")
        self._embedder = embedder
        self._vectors = vectors
        self._reindex = ReindexService(vectors, embedder) if vectors is not None else None

    def vectors_for(
        self, prepared: Sequence[PreparedVersion], progress: ProgressCallback | None
    ) -> list[ChunkVectors | None]:
        """One vector per chunk of each version (cached or embedded now), or ``None``s."""
        if self._embedder is None or self._vectors is None:
            return [None] * len(prepared)
        model = self._embedder.name
        texts = [
            [embedding_text(p.source.title, c.section_path, c.text) for c in p.chunks]
            for p in prepared
        ]
        keys = [[embedding_key(text) for text in group] for group in texts]
        known = self._vectors.cached_vectors([k for group in keys for k in group], model)
        missing: dict[str, str] = {}
        for group_keys, group_texts in zip(keys, texts, strict=True):
            for key, text in zip(group_keys, group_texts, strict=True):
                if key not in known:
                    missing.setdefault(key, text)
        if missing:
            fresh = self._embed_texts(self._embedder, list(missing.values()), progress)
            known.update(zip(missing, fresh, strict=True))
        dimension = self._embedder.dimension
        out: list[ChunkVectors | None] = []
        for group_keys in keys:
            matrix = np.zeros((len(group_keys), dimension), dtype=np.float32)
            for row, key in enumerate(group_keys):
                matrix[row] = known[key]
            out.append(ChunkVectors(model=model, keys=tuple(group_keys), matrix=matrix))
        return out

    def fill_sources(
        self, source_ids: Sequence[str], progress: ProgressCallback | None, tenant: str
    ) -> None:
        """Embed what these unchanged sources of ``tenant`` lack under the configured model
        (source ids are scoped to their tenant: another tenant's same id is not touched)."""
        if self._reindex is not None and source_ids:
            self._reindex.fill_sources(source_ids, progress, tenant=tenant)

    @staticmethod
    def _embed_texts(
        embedder: Embedder, texts: list[str], progress: ProgressCallback | None
    ) -> Vectors:
        parts: list[Vectors] = []
        for start in range(0, len(texts), _BATCH):
            parts.append(embedder.embed(texts[start : start + _BATCH]))
            if progress:
                progress(min(start + _BATCH, len(texts)), len(texts))
        return np.concatenate(parts) if parts else np.zeros((0, embedder.dimension), np.float32)
