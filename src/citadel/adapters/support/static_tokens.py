"""MiniLM's own word-piece table as static word vectors, for word alignment.

The packaged all-MiniLM-L6-v2 graph stores its input embeddings (30,522 word
pieces x 384) as int8 codes with one scale per row. Those rows are a static word
embedding: no transformer pass, so aligning every word piece of a segment to its
best match in a sentence costs a table lookup and one small matrix product —
microseconds, where one contextual embedding costs milliseconds. The bytes are the
pinned, sha256-checked model file the embedder loads; nothing is downloaded.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt
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
MEMO_SIZE = 1 << 16
"""Words whose pieces are memoised (per table, emptied when full)."""

_BLANKS = re.compile(r"[ \t\n\r]+")
"""Characters the BERT normaliser and pre-tokeniser both take for word breaks."""
_Pieces = tuple[tuple[int, ...], tuple[int, ...]]
"""A blank-separated chunk's word-piece ids, all and content ones."""

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
        self._memo: dict[str, _Pieces] = {}
        """Blank-free chunk -> its piece ids, and those of them that are content."""
        self._specials: tuple[str, ...] = ()
        self._units: npt.NDArray[np.float32] | None = None
        """Each piece's unit row, filled on the piece's first use (the zero pages of the
        rest never touched: memory grows with the vocabulary met, 1.5 KiB a piece)."""
        self._filled: npt.NDArray[np.bool_] | None = None

    def _ensure(self) -> tuple[Tokenizer, npt.NDArray[np.int8], npt.NDArray[np.float32]]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
        return self._loaded

    def _load(self) -> tuple[Tokenizer, npt.NDArray[np.int8], npt.NDArray[np.float32]]:
        # Here, not at the top: importing onnx costs about 1.2 s (its ml_dtypes
        # extension), which every command would pay, ``citadel --version`` included.
        import onnx
        from onnx import numpy_helper

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
        self._specials = tuple(t.content for t in tokenizer.get_added_tokens_decoder().values())
        self._units = np.zeros(codes.shape, dtype=np.float32)
        self._filled = np.zeros(codes.shape[0], dtype=np.bool_)
        return tokenizer, codes, scales

    def _chunk(self, chunk: str) -> _Pieces:
        found = self._memo.get(chunk)
        if found is None:
            tokenizer, _, _ = self._ensure()
            assert self._skip is not None
            ids = tokenizer.encode(chunk, add_special_tokens=False).ids
            # Tuples of ints: the garbage collector stops tracking them.
            found = (tuple(ids), tuple(i for i in ids if not self._skip[i]))
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[chunk] = found
        return found

    def _special(self, text: str) -> bool:
        return "[" in text and any(special in text for special in self._specials)

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, as ``tokenizer.encode_batch_fast`` gives them.

        The BERT normaliser works character by character and its pre-tokeniser breaks
        words at spaces, tabs and line breaks, so a text's pieces are its blank-separated
        chunks' pieces, one after another: each chunk is tokenised once per process and
        remembered. A text that writes out a special token (``[SEP]``) goes to the
        tokenizer whole."""
        tokenizer, _, _ = self._ensure()
        found: list[list[int]] = []
        for text in texts:
            if self._special(text):
                found.append(tokenizer.encode(text, add_special_tokens=False).ids)
                continue
            ids: list[int] = []
            for chunk in _BLANKS.split(text):
                ids.extend(self._chunk(chunk)[0])
            found.append(ids)
        return found

    def _content_ids(self, text: str) -> list[int]:
        """The ids of the content pieces among the text's first ``MAX_PIECES``."""
        assert self._skip is not None
        if not self._special(text):
            split = _BLANKS.split(text)
            known = list(map(self._memo.get, split))  # no method call per known chunk
            chunks = (
                cast(list[_Pieces], known) if None not in known else list(map(self._chunk, split))
            )
            if sum(len(ids) for ids, _ in chunks) <= MAX_PIECES:
                return [i for _, kept in chunks for i in kept]
        ids = self.ids([text])[0][:MAX_PIECES]
        return [i for i in ids if not self._skip[i]]

    def pieces(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """Each text's content word pieces as unit rows (stop words, punctuation dropped)."""
        _, codes, scales = self._ensure()
        assert self._units is not None and self._filled is not None
        kept = [self._content_ids(text) for text in texts]
        flat = np.fromiter(
            (i for k in kept for i in k), dtype=np.int64, count=sum(len(k) for k in kept)
        )
        new = np.unique(flat[~self._filled[flat]])
        if new.size:
            # Row by row the same arithmetic as on the rows of one text: the same bits.
            # In float64: a float32 reduction's rounding follows the CPU's SIMD width
            # (AVX2 and AVX-512 sum in other orders); float64's differences vanish in
            # the rounding to float32, so every CPU stores the same rows.
            exact = codes[new].astype(np.float64) * scales[new].astype(np.float64)
            exact /= np.maximum(np.linalg.norm(exact, axis=1, keepdims=True), 1e-9)
            self._units[new] = exact.astype(np.float32)
            self._filled[new] = True
        rows = self._units[flat]
        return np.split(rows, np.cumsum([len(k) for k in kept])[:-1]) if kept else []


def alignment(segment: npt.NDArray[np.float32], sentence: npt.NDArray[np.float32]) -> list[float]:
    """How well each segment piece finds a partner in the sentence (and back): the values
    named by :data:`ALIGNMENT_NAMES`."""
    if segment.shape[0] == 0 or sentence.shape[0] == 0:
        return [0.0] * len(ALIGNMENT_NAMES)
    # float64 for the same reason as the rows: the products sum in a CPU-dependent
    # order, and float32 would carry that into the features at the 1e-7 level.
    similarity = segment.astype(np.float64) @ sentence.astype(np.float64).T
    recall = similarity.max(axis=1)
    ordered = np.sort(recall)
    return [
        float(recall.mean()),
        float(ordered[0]),
        float(ordered[(recall.size - 1) // 4]),
        float(similarity.max(axis=0).mean()),
        # The mean of a boolean array is its count over its size, in float64.
        int(np.count_nonzero(recall > 0.6)) / recall.size,
    ]
