"""MiniLM's own word-piece table as static word vectors, for word alignment.

The packaged all-MiniLM-L6-v2 graph stores its input embeddings (30,522 word
pieces x 384) as int8 codes with one scale per row. Those rows are a static word
embedding: no transformer pass, so aligning every word piece of a segment to its
best match in a sentence costs a table lookup and one small matrix product —
microseconds, where one contextual embedding costs milliseconds. The bytes are the
pinned, sha256-checked model file the embedder loads; nothing is downloaded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper
from tokenizers import Tokenizer

from citadel.adapters.embedding.minilm import (
    MODEL_PACKAGE,
    MODEL_SHA256,
    TOKENIZER_PACKAGE,
    TOKENIZER_SHA256,
)
from citadel.adapters.embedding.model_files import EmbedderUnavailable, read_pinned
from citadel.domain.text import STOPWORDS

_CODES = "inner.embeddings.word_embeddings.weight_q"
_SCALES = "inner.embeddings.word_embeddings.weight_scale"
MAX_PIECES = 256

ALIGNMENT_NAMES: tuple[str, ...] = (
    "align_recall_mean",
    "align_recall_min",
    "align_recall_q1",
    "align_precision_mean",
    "align_recall_share_0_6",
)


class StaticTokens:
    """Word-piece alignment features from the model's input embedding table (lazy load)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, npt.NDArray[np.int8], npt.NDArray[np.float32]] | None = None
        self._skip: npt.NDArray[np.bool_] | None = None

    def _ensure(self) -> tuple[Tokenizer, npt.NDArray[np.int8], npt.NDArray[np.float32]]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
        return self._loaded

    def _load(self) -> tuple[Tokenizer, npt.NDArray[np.int8], npt.NDArray[np.float32]]:
        model = onnx.load_from_string(
            read_pinned(None, MODEL_PACKAGE, ("model.onnx",), MODEL_SHA256)
        )
        tables = {i.name: i for i in model.graph.initializer if i.name in (_CODES, _SCALES)}
        if set(tables) != {_CODES, _SCALES}:
            raise EmbedderUnavailable("the model has no int8 word-piece table where expected")
        codes = np.ascontiguousarray(numpy_helper.to_array(tables[_CODES]), dtype=np.int8)
        scales = np.asarray(numpy_helper.to_array(tables[_SCALES]), dtype=np.float32)
        vocab = read_pinned(
            None, TOKENIZER_PACKAGE, ("model", "tokenizer.json"), TOKENIZER_SHA256
        ).decode("utf-8")
        tokenizer = Tokenizer.from_str(vocab)
        tokenizer.no_truncation()
        tokenizer.no_padding()
        skip = np.zeros(codes.shape[0], dtype=np.bool_)
        for piece, index in tokenizer.get_vocab().items():
            if index < skip.size and (
                piece in STOPWORDS or not any(c.isalnum() for c in piece) or piece.startswith("[")
            ):
                skip[index] = True
        self._skip = skip
        return tokenizer, codes, scales

    def pieces(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """Each text's content word pieces as unit rows (stop words, punctuation dropped)."""
        tokenizer, codes, scales = self._ensure()
        assert self._skip is not None
        encodings = tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        ids = [np.asarray(e.ids[:MAX_PIECES], dtype=np.int64) for e in encodings]
        kept = [row[~self._skip[row]] for row in ids]
        flat = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
        rows = codes[flat].astype(np.float32) * scales[flat]
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
        return np.split(rows, np.cumsum([len(k) for k in kept])[:-1]) if kept else []


def alignment(segment: npt.NDArray[np.float32], sentence: npt.NDArray[np.float32]) -> list[float]:
    """How well each segment piece finds a partner in the sentence (and back): the values
    named by :data:`ALIGNMENT_NAMES`."""
    if segment.shape[0] == 0 or sentence.shape[0] == 0:
        return [0.0] * len(ALIGNMENT_NAMES)
    similarity = segment @ sentence.T
    recall = similarity.max(axis=1)
    precision = similarity.max(axis=0)
    return [
        float(recall.mean()),
        float(recall.min()),
        float(np.sort(recall)[(recall.size - 1) // 4]),
        float(precision.mean()),
        float((recall > 0.6).mean()),
    ]
