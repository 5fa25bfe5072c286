"""A pinned int8 MiniLM cross-encoder graph, run by onnxruntime one text pair per run.

The relevance scorer (``adapters/relevance``) and the entailment scorer of the support
check (``adapters/support/entailment.py``) are both the export of
``scripts/train_support_cross_model.py``: the first layers of all-MiniLM-L6-v2 read
one pair as a BERT pair, mean-pooled, and a linear head gives ``outputs`` logits
(one for relevance, three for entailment). One pair per run: inputs ``input_ids``
and ``token_type_ids`` (int64, shape [n], no batch axis and so no padding and no
attention mask), output ``logit`` (float32, shape [outputs]).

What both share lives here: the pair is cut as in training (the embedder's pinned
``tokenizer.json``, truncated longest-first to ``max_pieces``); the graph's bytes are
checked against their pin before onnxruntime sees them and the session is built
from those bytes; the session is built on first use (or ``load()``) under a lock;
the pairs of one call run side by side, one core each, on ``threads`` workers (a
run of this size gains little from a second intra-op thread: docs/support.md);
on x86 without VNNI or AMX onnxruntime is asked for its exact uint8 x uint8 kernels
(``cpu_kernels``), so the same pair gets the same logits on every CPU. Each caller
passes its own error type, so a missing or altered file reads as that scorer's.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
from tokenizers import Tokenizer

from citadel.adapters.embedding.cpu_kernels import exact_int8_products
from citadel.adapters.embedding.minilm import TOKENIZER_PACKAGE, TOKENIZER_SHA256
from citadel.adapters.pinned_files import read_pinned
from citadel.app.errors import AppError

_INPUTS = frozenset({"input_ids", "token_type_ids"})
_CHARS_PER_PIECE = 16
"""The characters a side keeps per word piece of the cut before the tokenizer sees it.
A piece of prose or code spans 3-5 characters with its space, so the cut keeps three
times what the tokenizer would; only pieces averaging more than 16 characters (a run
of words longer than the vocabulary's, each one ``[UNK]``) could lose some."""
_REMEDY = "reinstall citadel: the model ships inside it"


@dataclass(frozen=True, slots=True)
class PinnedGraph:
    """Where a packaged graph lives and what its bytes must hash to."""

    package: str
    parts: tuple[str, ...]
    sha256: str


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: ort.InferenceSession
    tokenizer: Tokenizer
    pool: ThreadPoolExecutor | None
    """Runs a call's pairs side by side (``threads`` > 1); ``None``: one after another."""


class PairEncoder:
    """``logits(pairs)``: each (first, second) pair's ``outputs`` logits, CPU only.

    ``model_path`` and ``tokenizer_path`` replace the packaged files; both are still
    checked against their pins.
    """

    def __init__(
        self,
        graph: PinnedGraph,
        *,
        outputs: int,
        max_pieces: int,
        error: type[AppError],
        what: str,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
    ) -> None:
        if outputs < 1:
            raise ValueError("a graph gives at least one logit")
        self._graph = graph
        self._outputs = outputs
        self._max_pieces = max_pieces
        self._error = error
        self._what = what
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self.threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        if self.threads < 1:
            raise ValueError("threads must be at least 1")
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def load(self) -> None:
        """Check and load the graph now (bootstrap, readiness); ``logits`` does it on first use."""
        self._ensure_loaded()

    def logits(self, pairs: Sequence[tuple[str, str]]) -> list[np.ndarray]:
        """One float64 vector of ``outputs`` finite logits per pair, in order."""
        if not pairs:
            return []
        loaded = self._ensure_loaded()
        # The tokenizer's longest-first cut of a long pair grows with the square of its
        # length (a 100 KB passage: seconds). Each side is cut first to far more
        # characters than the pieces kept could span, on a word boundary, so what the
        # tokenizer keeps is unchanged for any text of chunk size.
        limit = self._max_pieces * _CHARS_PER_PIECE
        pairs = [(_cut(first, limit), _cut(second, limit)) for first, second in pairs]
        feeds = [
            {
                "input_ids": np.asarray(encoding.ids, dtype=np.int64),
                "token_type_ids": np.asarray(encoding.type_ids, dtype=np.int64),
            }
            for encoding in loaded.tokenizer.encode_batch(list(pairs))
        ]

        def run(feed: dict[str, np.ndarray]) -> np.ndarray:
            try:
                (out,) = loaded.session.run(["logit"], feed)
            except Exception as exc:  # onnxruntime's errors are untyped; translate them here
                raise self._error(f"{self._what} inference failed: {exc}") from exc
            vector = np.asarray(out, dtype=np.float64).reshape(-1)
            if vector.shape != (self._outputs,) or not all(math.isfinite(v) for v in vector):
                raise self._error(f"the {self._what} model returned {vector.tolist()}")
            return vector

        if loaded.pool is None or len(feeds) == 1:
            return [run(feed) for feed in feeds]
        return list(loaded.pool.map(run, feeds))

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
            self._graph.package,
            self._graph.parts,
            self._graph.sha256,
            error=self._error,
            remedy=_REMEDY,
        )
        vocab = read_pinned(
            self._tokenizer_path,
            TOKENIZER_PACKAGE,
            ("model", "tokenizer.json"),
            TOKENIZER_SHA256,
            error=self._error,
            remedy=_REMEDY,
        )
        try:
            tokenizer = Tokenizer.from_str(vocab.decode("utf-8"))
        except Exception as exc:
            raise self._error(f"the tokenizer cannot be read: {exc}") from exc
        # As scripts/train_support_cross.py's encode: one pair, longest-first, no padding.
        tokenizer.enable_truncation(self._max_pieces, strategy="longest_first")
        tokenizer.no_padding()
        try:
            session = ort.InferenceSession(
                graph, sess_options=self._options(), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's errors are untyped
            raise self._error(f"onnxruntime cannot load the {self._what} model: {exc}") from exc
        inputs = {i.name for i in session.get_inputs()}
        outputs = {o.name for o in session.get_outputs()}
        if inputs != _INPUTS or "logit" not in outputs:
            raise self._error(
                f"unexpected {self._what} model signature: inputs {sorted(inputs)}, "
                f"outputs {sorted(outputs)}"
            )
        pool = None
        if self.threads > 1:
            pool = ThreadPoolExecutor(self.threads, thread_name_prefix=f"citadel-{self._what}")
        return _Loaded(session, tokenizer, pool)

    def _options(self) -> ort.SessionOptions:
        """The embedder's session options (``adapters/embedding/minilm.py``)."""
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # the pairs of a call run side by side instead
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not exact_int8_products():
            # uint8 x uint8 kernels: the same integers as VNNI's, summed without a 16-bit step.
            options.add_session_config_entry("session.x64quantprecision", "1")
        return options


def _cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters ending at a whitespace."""
    if len(text) <= limit:
        return text
    end = text.rfind(" ", 0, limit)
    return text[: end if end > 0 else limit]
