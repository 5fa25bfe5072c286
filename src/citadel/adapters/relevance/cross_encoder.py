"""A fine-tuned MiniLM cross-encoder (int8 ONNX) behind the RelevanceScorer port.

The graph is ``scripts/train_relevance.py``'s export, run by the shared
``adapters/pair_encoder.py`` (the pinned graph and tokenizer, the session, the
exact-kernel choice): one (question, text) pair per run, one logit out, cut to the
metadata's ``max_pieces`` as in training. The probability is
``sigmoid(a * logit + b)``, ``a`` and ``b`` the calibration of ``relevance.json``
(``model_info.py``), so the metadata's one threshold reads the same for a passage
and a sentence.

Scores are kept in a bounded LRU cache keyed by a digest of (question, text): the
answer path asks about the same passages for answerability, order and sentence
choice, from worker threads."""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from citadel.adapters.pair_encoder import PairEncoder, PinnedGraph
from citadel.adapters.relevance import model_info
from citadel.adapters.relevance.model_info import ModelInfo, RelevanceUnavailable, read_metadata

CACHE_SIZE = 4096
"""Pairs whose score is kept: a few hundred answers' passages and sentences."""


class ScoreCache:
    """A thread-safe LRU map from a (question, text) digest to its score."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("the cache size cannot be negative")
        self._size = size
        self._lock = threading.Lock()
        self._scores: OrderedDict[bytes, float] = OrderedDict()

    @staticmethod
    def key(question: str, text: str) -> bytes:
        # Length-prefixed: ("ab", "c") and ("a", "bc") are different pairs.
        q, t = question.encode("utf-8", "surrogatepass"), text.encode("utf-8", "surrogatepass")
        return hashlib.blake2b(len(q).to_bytes(8, "big") + q + t, digest_size=20).digest()

    def get(self, key: bytes) -> float | None:
        with self._lock:
            score = self._scores.get(key)
            if score is not None:
                self._scores.move_to_end(key)
            return score

    def put(self, key: bytes, score: float) -> None:
        if self._size == 0:
            return
        with self._lock:
            self._scores[key] = score
            self._scores.move_to_end(key)
            while len(self._scores) > self._size:
                self._scores.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._scores)


class CrossEncoderRelevance:
    """The RelevanceScorer port on the packaged cross-encoder, CPU only.

    The metadata is read at construction (it gives ``name`` and ``threshold``); the
    graph when first needed. ``model_path`` and ``metadata_path`` replace the
    packaged files (the graph is still checked against ``MODEL_SHA256``).
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        metadata_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.info: ModelInfo = read_metadata(metadata_path)
        if self.info.sha256 != model_info.MODEL_SHA256:
            raise RelevanceUnavailable(
                f"the relevance metadata describes the graph of sha256 {self.info.sha256}, "
                f"but the pinned graph is {model_info.MODEL_SHA256}: the two files and the pin "
                "must be replaced together"
            )
        self.name = self.info.name
        self.threshold = self.info.threshold
        """The shipped answerability threshold on this scorer's probabilities."""
        self.cache = ScoreCache(cache_size)
        self._encoder = PairEncoder(
            PinnedGraph(model_info.MODEL_PACKAGE, model_info.MODEL_PARTS, model_info.MODEL_SHA256),
            outputs=1,
            max_pieces=self.info.max_pieces,
            error=RelevanceUnavailable,
            what="relevance",
            model_path=model_path,
            tokenizer_path=tokenizer_path,
            threads=threads,
        )

    def __repr__(self) -> str:
        return f"CrossEncoderRelevance(name={self.name!r}, threads={self._encoder.threads})"

    def load(self) -> None:
        """Check and load the model now (bootstrap, readiness); ``score`` does it on first use."""
        self._encoder.load()

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        scores = [0.0] * len(texts)
        if not question.strip():
            return scores  # nothing asked, nothing answers
        missing: dict[str, bytes] = {}
        for i, text in enumerate(texts):
            if not text.strip() or text in missing:
                continue
            key = self.cache.key(question, text)
            cached = self.cache.get(key)
            if cached is None:
                missing[text] = key
            else:
                scores[i] = cached
        if missing:
            found = self._score_pairs(question, list(missing))
            for text, score in found.items():
                self.cache.put(missing[text], score)
            for i, text in enumerate(texts):
                if text in found:
                    scores[i] = found[text]
        return scores

    def _score_pairs(self, question: str, texts: list[str]) -> dict[str, float]:
        logits = self._encoder.logits([(question, text) for text in texts])
        return {
            text: self._probability(float(logit[0]))
            for text, logit in zip(texts, logits, strict=True)
        }

    def _probability(self, logit: float) -> float:
        if not math.isfinite(logit):
            raise RelevanceUnavailable(f"the relevance model returned a logit of {logit}")
        z = self.info.a * logit + self.info.b
        # The stable form of the logistic on either side of zero.
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)
