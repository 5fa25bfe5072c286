"""Which activation codes can saturate the 16-bit pairs of CPUs without VNNI.

onnxruntime's uint8 x int8 kernel on x86 without VNNI (``vpmaddubsw``) adds
the products of neighbouring codes, k = 2j and 2j + 1, into 16 bits with
saturation before summing into 32 (``cpu_kernels``). These tests replay that
pairing in numpy on the codes the graph really computes for several texts,
for every one of the 36 weight products: the opt-in 7-bit codes (``w8a7``)
never reach the limit (by the bound, and on the data), while the default 8-bit
codes do, on the same texts (which is why the default asks for uint8 x uint8
kernels there).
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
from onnx import helper, numpy_helper

from citadel.adapters.embedding.cpu_kernels import PAIR_LIMIT, pair_bound
from citadel.adapters.embedding.minilm import WEIGHT_MATRICES, MiniLmEmbedder

I32 = npt.NDArray[np.int32]

TEXTS = [
    "x",
    "How do I read a CSV file into a data frame?",
    "Vitamin D deficiency is associated with an increased risk of tuberculosis in adults. " * 2,
    "BRCA1 mutations increase the lifetime risk of breast and ovarian cancer; "
    "carriers are offered screening from the age of 25 and risk-reducing surgery.",
    "Ελληνικά και 中文 ∑ x² ≤ 1 " * 3,
]


def activation_codes(precision: str) -> list[tuple[I32, I32]]:
    """(codes, weights) for each integer product and text: the uint8 codes the graph ran."""
    embedder = MiniLmEmbedder(precision=precision, threads=1)
    loaded = embedder._ensure_loaded()
    model = onnx.load_from_string(loaded.graph)
    products = [n for n in model.graph.node if n.op_type == "MatMulIntegerToFloat"]
    assert len(products) == WEIGHT_MATRICES
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    inputs = sorted({n.input[0] for n in products})
    model.graph.output.extend(
        helper.make_tensor_value_info(name, onnx.TensorProto.UINT8, None) for name in inputs
    )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(),
        sess_options=options,
        providers=["CPUExecutionProvider"],
    )
    found = []
    for encoding in loaded.tokenizer.encode_batch(TEXTS):
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if loaded.feeds_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        codes = dict(zip(inputs, session.run(inputs, feeds), strict=True))
        for node in products:
            a = np.asarray(codes[node.input[0]]).reshape(-1, weights[node.input[1]].shape[0])
            found.append((a.astype(np.int32), weights[node.input[1]].astype(np.int32)))
    return found


def largest_pair(codes: I32, weights: I32) -> tuple[int, int]:
    """The largest |a[2j] w[2j] + a[2j+1] w[2j+1]| over rows, j and columns, and how many clip."""
    rows, depth = codes.shape
    assert depth % 2 == 0
    w = weights.reshape(depth // 2, 2, -1)
    largest, clipped = 0, 0
    for start in range(0, rows, 8):
        a = codes[start : start + 8].reshape(-1, depth // 2, 2)
        pairs = a[:, :, 0, None] * w[None, :, 0, :] + a[:, :, 1, None] * w[None, :, 1, :]
        magnitude = np.abs(pairs)
        largest = max(largest, int(magnitude.max()))
        clipped += int((magnitude > PAIR_LIMIT).sum())
    return largest, clipped


def test_the_bound_leaves_room_for_any_int8_weights() -> None:
    assert pair_bound(127) == 32512 <= PAIR_LIMIT
    assert pair_bound(255) > PAIR_LIMIT


@pytest.fixture(scope="module")
def seven_bit() -> list[tuple[I32, I32]]:
    return activation_codes("w8a7")


def test_the_w8a7_codes_are_seven_bits(seven_bit: list[tuple[I32, I32]]) -> None:
    assert len(seven_bit) == WEIGHT_MATRICES * len(TEXTS)
    highest = max(int(codes.max()) for codes, _ in seven_bit)
    assert highest <= 127
    assert highest >= 120, "the codes use their range"
    assert all(int(w.min()) >= -128 and int(w.max()) <= 127 for _, w in seven_bit)


def test_no_pair_of_seven_bit_products_saturates(
    seven_bit: list[tuple[I32, I32]],
) -> None:
    largest = 0
    for codes, weights in seven_bit:
        found, clipped = largest_pair(codes, weights)
        assert clipped == 0
        largest = max(largest, found)
    assert largest <= pair_bound(127)
    assert largest > PAIR_LIMIT // 4, "the replay sees large pairs, not only zeros"


def test_the_eight_bit_codes_do_saturate_on_the_same_texts() -> None:
    """The replay can fail: on the default codes it finds clipped pairs."""
    clipped = sum(largest_pair(codes, weights)[1] for codes, weights in activation_codes("int8"))
    assert clipped > 0


# --- the real kernel of a CPU without VNNI, under emulation ---------------------

QEMU = shutil.which("qemu-x86_64")
EMULATED_CPU = "Haswell-v4"
"""AVX2 and FMA, no AVX-512, no VNNI: onnxruntime picks its vpmaddubsw kernels."""

RUN_PRODUCTS = """
import sys, numpy as np, onnxruntime as ort
data = np.load(sys.argv[1], allow_pickle=False)
out = {}
for key in sorted(k for k in data.files if k.startswith("model_")):
    n = key.removeprefix("model_")
    session = ort.InferenceSession(data[key].tobytes(), providers=["CPUExecutionProvider"])
    feeds = {"a": data["a_" + n], "a_scale": data["s_" + n], "a_zero": data["z_" + n]}
    out["f_" + n], out["i_" + n] = session.run(["f", "i"], feeds)
np.savez(sys.argv[2], **out)
"""


def product_models(precision: str, tmp_path: Path) -> Path:
    """Each product's real inputs and a two-output model of it: float (as run) and int32 sums."""
    embedder = MiniLmEmbedder(precision=precision, threads=1)
    loaded = embedder._ensure_loaded()
    model = onnx.load_from_string(loaded.graph)
    nodes = [n for n in model.graph.node if n.op_type == "MatMulIntegerToFloat"]
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    kinds = {
        name: onnx.TensorProto.UINT8 if k in (0, 4) else onnx.TensorProto.FLOAT
        for n in nodes
        for k, name in enumerate(n.input)
        if k in (0, 2, 4, 6) and name not in constants
    }
    wanted = sorted(kinds)
    model.graph.output.extend(
        helper.make_tensor_value_info(name, kinds[name], None) for name in wanted
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ids = np.asarray([loaded.tokenizer.encode(TEXTS[2] * 3).ids[:256]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if loaded.feeds_token_types:
        feeds["token_type_ids"] = np.zeros_like(ids)
    values = dict(zip(wanted, session.run(wanted, feeds), strict=True))
    values |= constants
    arrays: dict[str, Any] = {}
    for n, node in enumerate(nodes):
        a, weights, scale, columns, zero, _, bias = node.input
        inputs = [
            helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, None),
            helper.make_tensor_value_info("a_scale", onnx.TensorProto.FLOAT, None),
            helper.make_tensor_value_info("a_zero", onnx.TensorProto.UINT8, None),
        ]
        graph = helper.make_graph(
            [
                helper.make_node(
                    "MatMulIntegerToFloat",
                    ["a", "w", "a_scale", "columns", "a_zero", "", "bias"],
                    ["f"],
                    domain="com.microsoft",
                ),
                helper.make_node("MatMulInteger", ["a", "w"], ["i"]),
            ],
            f"product_{n}",
            inputs,
            [
                helper.make_tensor_value_info("f", onnx.TensorProto.FLOAT, None),
                helper.make_tensor_value_info("i", onnx.TensorProto.INT32, None),
            ],
            initializer=[
                numpy_helper.from_array(values[weights], "w"),
                numpy_helper.from_array(values[columns], "columns"),
                numpy_helper.from_array(np.asarray(values[bias], np.float32), "bias"),
            ],
        )
        product = helper.make_model(
            graph,
            opset_imports=[
                helper.make_opsetid("", 17),
                helper.make_opsetid("com.microsoft", 1),
            ],
        )
        arrays[f"model_{n:02d}"] = np.frombuffer(product.SerializeToString(), dtype=np.uint8)
        arrays[f"a_{n:02d}"] = np.asarray(values[a]).reshape(-1, values[weights].shape[0])
        arrays[f"s_{n:02d}"] = np.asarray(values[scale], np.float32)
        arrays[f"z_{n:02d}"] = np.asarray(values[zero], np.uint8)
    path = tmp_path / f"{precision}.npz"
    np.savez(path, **arrays)
    return path


def run_products(inputs: Path, out: Path, emulated: bool) -> dict[str, npt.NDArray[np.generic]]:
    script = out.with_suffix(".py")
    script.write_text(RUN_PRODUCTS)
    command = [sys.executable, str(script), str(inputs), str(out)]
    if emulated:
        assert QEMU is not None
        command = [QEMU, "-cpu", EMULATED_CPU, *command]
    subprocess.run(command, check=True, capture_output=True, timeout=1800)
    with np.load(out) as found:
        return dict(found)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.skipif(QEMU is None or platform.machine() != "x86_64", reason="needs qemu-x86_64")
def test_a_cpu_without_vnni_computes_the_same_products(tmp_path: Path) -> None:
    """onnxruntime's own AVX2 kernels (under qemu, as a Haswell) against this CPU's.

    With 7-bit codes every integer sum and every float output of the 36 products
    is the same to the last bit; with 8-bit codes the emulated CPU's sums differ
    (the pairs saturate), which shows the emulation really runs the other kernel.
    """
    for precision, same in (("w8a7", True), ("int8", False)):
        inputs = product_models(precision, tmp_path)
        native = run_products(inputs, tmp_path / f"{precision}-native.npz", emulated=False)
        haswell = run_products(inputs, tmp_path / f"{precision}-haswell.npz", emulated=True)
        with np.load(inputs) as data:
            for key in sorted(k for k in native if k.startswith("i_")):
                n = key.removeprefix("i_")
                exact = data["a_" + n].astype(np.int64) @ onnx_weights(data["model_" + n])
                np.testing.assert_array_equal(native[key], exact)
        differ = [k for k in native if not np.array_equal(native[k], haswell[k])]
        if same:
            assert differ == []
        else:
            assert any(k.startswith("i_") for k in differ)


def onnx_weights(model_bytes: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    model = onnx.load_from_string(model_bytes.tobytes())
    (w,) = [t for t in model.graph.initializer if t.name == "w"]
    return numpy_helper.to_array(w).astype(np.int64)
