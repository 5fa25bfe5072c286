"""A deterministic, model-free embedder for tests: hashed words and character trigrams.

It needs nothing but numpy and gives the same vector for the same text in every
process (blake2b, not Python's salted ``hash``). Texts that share words or word
fragments get a higher cosine similarity than unrelated texts, which is all a
test of the dense path needs. It passes the same contract suite as the real model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from citadel.app.ports import Vectors

_WORD = re.compile(r"\w+", re.UNICODE)
_TRIGRAM_WEIGHT = 0.5  # fragments help with morphology but should not outvote words
_EMPTY = "\x00"  # stands in for a text without words, so its vector still has unit length


class HashingEmbedder:
    """Signed feature hashing of lower-cased words and their ``#wo`` ``wor`` ``rd#`` trigrams."""

    def __init__(self, dimension: int = 384) -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self.dimension = dimension
        self.name = f"hashing-words-trigrams-v1-{dimension}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self.dimension})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            vector = out[row]
            for feature, weight in _features(text):
                bucket, sign = _slot(feature, self.dimension)
                vector[bucket] += sign * weight
            norm = float(np.linalg.norm(vector))
            if norm == 0.0:  # features cancelled out exactly: fall back to the empty text's
                bucket, sign = _slot(_EMPTY, self.dimension)
                vector[bucket] = sign
                norm = 1.0
            vector /= norm
        return out


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        return [(_EMPTY, 1.0)]
    features: list[tuple[str, float]] = []
    for word in words:
        features.append(("w:" + word, 1.0))
        marked = f"#{word}#"
        features.extend(("c:" + marked[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(marked) - 2))
    return features


@lru_cache(maxsize=65536)
def _slot(feature: str, dimension: int) -> tuple[int, float]:
    """The feature's bucket and sign; the sign keeps collisions from adding up on average."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dimension, 1.0 if value & 1 else -1.0
