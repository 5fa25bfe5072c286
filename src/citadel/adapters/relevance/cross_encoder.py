"""A fine-tuned MiniLM cross-encoder (int8 ONNX) behind the RelevanceScorer port.

The graph is ``scripts/train_relevance.py``'s export (``train_support_cross_model.py``:
``export_onnx`` then ``quantise``): the first layers of all-MiniLM-L6-v2 read one
(question, text) pair as a BERT pair, mean-pooled, and one linear unit gives the
logit that the text answers the question. One pair per run: inputs ``input_ids``
and ``token_type_ids`` (int64, shape [n], no batch axis and so no padding and no
attention mask), output ``logit`` (float32, shape [1]).

The pair is cut as in training: the embedder's tokenizer (the same pinned
``tokenizer.json``), truncated longest-first to the metadata's ``max_pieces``.
The probability is ``sigmoid(a * logit + b)``, ``a`` and ``b`` the calibration of
``relevance.json`` (``model_info.py``), so the metadata's one threshold reads the
same for a passage and a sentence.

Like the embedder: the graph's bytes are checked against the pin before
onnxruntime sees them and the session is built from those bytes; the session is
built on the first score (or ``load()``), under a lock; on x86 without VNNI or AMX
onnxruntime is asked for its exact uint8 x uint8 kernels (``cpu_kernels``), so the
same pair gets the same score on every CPU. Scores are kept in a bounded LRU cache
keyed by a digest of (question, text): the answer path asks about the same
passages for answerability, order and sentence choice, from worker threads.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
from tokenizers import Tokenizer

from citadel.adapters.embedding.cpu_kernels import exact_int8_products
from citadel.adapters.embedding.minilm import TOKENIZER_PACKAGE, TOKENIZER_SHA256
from citadel.adapters.pinned_files import read_pinned
from citadel.adapters.relevance import model_info
from citadel.adapters.relevance.model_info import ModelInfo, RelevanceUnavailable, read_metadata

CACHE_SIZE = 4096
"""Pairs whose score is kept: a few hundred answers' passages and sentences."""
_INPUTS = frozenset({"input_ids", "token_type_ids"})
_REMEDY = "reinstall citadel: the model ships inside it"


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: ort.InferenceSession
    tokenizer: Tokenizer


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
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        if self._threads < 1:
            raise ValueError("threads must be at least 1")
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
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def __repr__(self) -> str:
        return f"CrossEncoderRelevance(name={self.name!r}, threads={self._threads})"

    def load(self) -> None:
        """Check and load the model now (bootstrap, readiness); ``score`` does it on first use."""
        self._ensure_loaded()

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
        loaded = self._ensure_loaded()
        encodings = loaded.tokenizer.encode_batch([(question, text) for text in texts])
        found: dict[str, float] = {}
        for text, encoding in zip(texts, encodings, strict=True):
            feeds = {
                "input_ids": np.asarray(encoding.ids, dtype=np.int64),
                "token_type_ids": np.asarray(encoding.type_ids, dtype=np.int64),
            }
            try:
                (logit,) = loaded.session.run(["logit"], feeds)
            except Exception as exc:  # onnxruntime's errors are untyped; translate them here
                raise RelevanceUnavailable(f"relevance inference failed: {exc}") from exc
            found[text] = self._probability(float(np.asarray(logit).reshape(-1)[0]))
        return found

    def _probability(self, logit: float) -> float:
        if not math.isfinite(logit):
            raise RelevanceUnavailable(f"the relevance model returned a logit of {logit}")
        z = self.info.a * logit + self.info.b
        # The stable form of the logistic on either side of zero.
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        graph = read_pinned(
            self._model_path,
            model_info.MODEL_PACKAGE,
            model_info.MODEL_PARTS,
            model_info.MODEL_SHA256,
            error=RelevanceUnavailable,
            remedy=_REMEDY,
        )
        vocab = read_pinned(
            self._tokenizer_path,
            TOKENIZER_PACKAGE,
            ("model", "tokenizer.json"),
            TOKENIZER_SHA256,
            error=RelevanceUnavailable,
            remedy=_REMEDY,
        )
        try:
            tokenizer = Tokenizer.from_str(vocab.decode("utf-8"))
        except Exception as exc:
            raise RelevanceUnavailable(f"the tokenizer cannot be read: {exc}") from exc
        # As scripts/train_support_cross.py's encode: one pair, longest-first, no padding.
        tokenizer.enable_truncation(self.info.max_pieces, strategy="longest_first")
        tokenizer.no_padding()
        try:
            session = ort.InferenceSession(
                graph, sess_options=self._options(), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's errors are untyped
            raise RelevanceUnavailable(
                f"onnxruntime cannot load the relevance model: {exc}"
            ) from exc
        inputs = {i.name for i in session.get_inputs()}
        outputs = {o.name for o in session.get_outputs()}
        if inputs != _INPUTS or "logit" not in outputs:
            raise RelevanceUnavailable(
                f"unexpected relevance model signature: inputs {sorted(inputs)}, "
                f"outputs {sorted(outputs)}"
            )
        return _Loaded(session, tokenizer)

    def _options(self) -> ort.SessionOptions:
        """The embedder's session options (``adapters/embedding/minilm.py``)."""
        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not exact_int8_products():
            # uint8 x uint8 kernels: the same integers as VNNI's, summed without a 16-bit step.
            options.add_session_config_entry("session.x64quantprecision", "1")
        return options
