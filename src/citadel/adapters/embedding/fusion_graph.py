"""Fuse each layer's attention in the exported MiniLM graph into one onnxruntime operator.

torch's exporter spells a BERT layer's attention out as ~30 small operators:
reshapes and transposes into heads, the scores scaled on both sides, an additive
padding mask, Softmax, a NaN guard, the weighted sum and a reshape back.
onnxruntime's optimiser does not recognise that spelling, so every layer
materialises its (batch, heads, len, len) tensors several times.
``com.microsoft.MultiHeadAttention`` computes the same function in one kernel.

``fuse_attention`` finds each layer's subgraph by following the tensors from the
Q/K/V projections to the output projection, never by node names, and checks
every step: operators and permutations, reshape targets (evaluated symbolically
against the graph's batch and sequence dimensions), the scale, the mask constant,
and what the mask means (its subgraph is run on a probe). It then replaces the
node that feeds the output projection with the fused operator, lets dead-code
elimination drop the unfused nodes, and serialises the result. It works in
memory, on bytes whose sha256 the caller has already checked.

The exporter's NaN guard (a row whose keys are all masked gets zeros, not NaN)
has no counterpart in the fused operator; it never fires for the embedder,
whose every text keeps at least [CLS] and [SEP].

Anything unexpected stops the rewrite: the caller gets its bytes back unchanged,
with the reason. Nothing here raises.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
from onnx import helper

from citadel.adapters.embedding.onnx_graph import (
    DOMAIN,
    Dim,
    NoMatch,
    OnnxGraph,
    fresh_name,
    int_attribute,
    ints_attribute,
    live_nodes,
)

OPERATOR = "MultiHeadAttention"

_PROBE_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=np.int64)
"""The padding mask the mask subgraph is run on: rows of 5, 3 and 1 real tokens."""
_HEAVY = frozenset({"MatMul", "Gemm", "Softmax", "LayerNormalization", "Conv"})
"""Operators that have no business in a padding mask's computation."""
_MASK_BELOW = -1e4
"""The additive mask must push masked scores at least this low (softmax weight 0)."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """The model to load, and whether (or why not) its attention was fused."""

    model: bytes
    fused: bool
    reason: str


def fuse_attention(model: bytes, *, layers: int, mask_input: str = "attention_mask") -> Fusion:
    """``model`` with each of its ``layers`` attention subgraphs fused, or unchanged and why.

    ``mask_input`` is the graph input holding the (batch, sequence) padding mask.
    """
    try:
        graph = _AttentionGraph(onnx.load_from_string(model))
        found = graph.match(layers, mask_input)
        rewritten = graph.rewrite(found, mask_input)
    except NoMatch as exc:
        return Fusion(model, False, f"attention not fused: {exc}")
    except Exception as exc:  # onnx and onnxruntime raise many untyped errors
        return Fusion(model, False, f"attention not fused: {type(exc).__name__}: {exc}")
    heads = found[0].heads
    return Fusion(
        rewritten,
        True,
        f"{len(found)} attention layers fused into {DOMAIN}.{OPERATOR} ({heads} heads)",
    )


@dataclass(frozen=True, slots=True)
class _Layer:
    """One layer's attention, as the fused operator needs it."""

    query: str
    key: str
    value: str
    """The three projections, (batch, sequence, hidden) each."""
    output: str
    """The (batch, sequence, hidden) tensor the output projection reads."""
    heads: int
    scale: float
    mask: str
    """The boolean mask the scores are masked with (True: attend)."""
    mask_value: float
    """What the unfused graph adds to a masked score."""


class _AttentionGraph(OnnxGraph):
    """The attention layers of one parsed model: matched, then rewritten."""

    # --- matching ------------------------------------------------------------

    def match(self, layers: int, mask_input: str) -> list[_Layer]:
        if layers < 1:
            raise NoMatch(f"asked for {layers} layers")
        softmaxes = [n for n in self.model.graph.node if n.op_type == "Softmax"]
        if len(softmaxes) != layers:
            raise NoMatch(f"{len(softmaxes)} Softmax nodes, expected one per layer ({layers})")
        batch_sequence = self.shape(mask_input)
        if len(batch_sequence) != 2:
            raise NoMatch(f"{mask_input} has shape {batch_sequence}, expected (batch, sequence)")
        probed: set[str] = set()
        found = []
        for softmax in softmaxes:
            layer = self.match_layer(softmax, batch_sequence)
            if layer.mask not in probed:
                self.check_padding_mask(layer.mask, mask_input, layer.heads)
                probed.add(layer.mask)
            found.append(layer)
        if len({layer.output for layer in found}) != layers:
            raise NoMatch("two Softmax nodes lead to the same attention output")
        return found

    def match_layer(self, softmax: onnx.NodeProto, batch_sequence: list[Dim]) -> _Layer:
        """Follow one Softmax back to the projections and on to the output projection."""
        where = f"Softmax {softmax.name!r}"
        if int_attribute(softmax, "axis", -1) not in (-1, 3):
            raise NoMatch(f"{where} is not over the last axis")
        # Backwards: scores + mask -> Softmax.
        added = self.made_by(softmax.input[0], "Add")
        scores, bias = added.input
        if self.producer.get(scores) is not None and self.producer[scores].op_type == "Where":
            scores, bias = bias, scores
        select = self.made_by(bias, "Where")
        mask, keep, drop = select.input
        if self.scalar(keep) != 0.0 or (self.scalar(drop) or 0.0) > _MASK_BELOW:
            raise NoMatch(f"{where}: the mask does not add 0 or a large negative number")
        mask_value = float(self.scalar(drop) or 0.0)
        product, post_scale = self.unscaled(scores)
        qk = self.made_by(product, "MatMul")
        query_heads, query_scale = self.unscaled(qk.input[0])
        key_t, key_scale = self.unscaled(qk.input[1])
        key_heads = self.key_transposed(key_t)
        query, heads, head_size = self.heads_split(query_heads, batch_sequence)
        key, *key_split = self.heads_split(key_heads, batch_sequence)
        # Forwards: Softmax [-> NaN guard] -> @ value -> merge heads -> output projection.
        probabilities = self.nan_guarded(softmax.output[0])
        context = self.only_consumer(probabilities, "MatMul")
        if list(context.input).index(probabilities) != 0:
            raise NoMatch(f"{where}: the probabilities are not the left operand")
        value, *value_split = self.heads_split(context.input[1], batch_sequence)
        if not [heads, head_size] == key_split == value_split:
            raise NoMatch(f"{where}: Q, K and V are split into different heads")
        merged = self.only_consumer(context.output[0], "Transpose")
        if ints_attribute(merged, "perm") != [0, 2, 1, 3]:
            raise NoMatch(f"{where}: the heads are not merged back by perm [0, 2, 1, 3]")
        reshape = self.only_consumer(merged.output[0], "Reshape")
        hidden = heads * head_size
        target = self.shape_value(reshape.input[1])
        if target[:2] != batch_sequence or target[2:] not in ([-1], [hidden]):
            raise NoMatch(f"{where}: the heads are merged into {target}")
        output = reshape.output[0]
        if not any(n.op_type == "MatMul" and n.input[0] == output for n in self.consumers[output]):
            raise NoMatch(f"{where}: the attention output feeds no output projection")
        sources = {self.projection_input(t, hidden) for t in (query, key, value)}
        if len(sources) != 1:
            raise NoMatch(f"{where}: Q, K and V are projections of different tensors")
        return _Layer(
            query=query,
            key=key,
            value=value,
            output=output,
            heads=heads,
            scale=query_scale * key_scale * post_scale,
            mask=mask,
            mask_value=mask_value,
        )

    def heads_split(self, name: str, batch_sequence: list[Dim]) -> tuple[str, int, int]:
        """The (batch, sequence, hidden) tensor that ``name`` splits into heads, heads, head size.

        Expects Reshape(x, [batch, sequence, -1 or heads, head_size]) then
        Transpose(perm [0, 2, 1, 3]).
        """
        transpose = self.made_by(name, "Transpose")
        if ints_attribute(transpose, "perm") != [0, 2, 1, 3]:
            raise NoMatch(f"{name} is not split into heads by perm [0, 2, 1, 3]")
        reshape = self.made_by(transpose.input[0], "Reshape")
        source = reshape.input[0]
        shape = self.shape(source)
        target = self.shape_value(reshape.input[1])
        if len(shape) != 3 or shape[:2] != batch_sequence or not isinstance(shape[2], int):
            raise NoMatch(f"{source} has shape {shape}, expected (batch, sequence, hidden)")
        hidden = shape[2]
        if len(target) != 4 or target[:2] != batch_sequence:
            raise NoMatch(f"{source} is reshaped to {target}")
        head_size = target[3]
        if not isinstance(head_size, int) or head_size < 1 or hidden % head_size:
            raise NoMatch(f"{source} is split into heads of {head_size}")
        heads = hidden // head_size
        if target[2] not in (-1, heads):
            raise NoMatch(f"{source} is reshaped to {target}")
        if self.shape(name) != [batch_sequence[0], heads, batch_sequence[1], head_size]:
            raise NoMatch(f"{name} has shape {self.shape(name)}")
        return source, heads, head_size

    def key_transposed(self, name: str) -> str:
        """The (batch, heads, sequence, head_size) keys whose last two axes ``name`` swaps.

        Either Transpose(perm [0, 1, 3, 2]) or the exporter's spelling: Reshape to
        (-1, sequence, head_size), Transpose(perm [0, 2, 1]), Reshape to
        (batch, heads, head_size, sequence).
        """
        node = self.producer.get(name)
        if node is not None and node.op_type == "Transpose":
            if ints_attribute(node, "perm") != [0, 1, 3, 2]:
                raise NoMatch(f"{name} is not the keys transposed")
            return str(node.input[0])
        last = self.made_by(name, "Reshape")
        swap = self.made_by(last.input[0], "Transpose")
        first = self.made_by(swap.input[0], "Reshape")
        keys = first.input[0]
        dims = self.shape(keys)
        if (
            len(dims) != 4
            or ints_attribute(swap, "perm") != [0, 2, 1]
            or self.shape_value(first.input[1]) != [-1, dims[2], dims[3]]
            or self.shape_value(last.input[1]) != [dims[0], dims[1], dims[3], dims[2]]
        ):
            raise NoMatch(f"{name} is not the keys with the last two axes swapped")
        return str(keys)

    def nan_guarded(self, name: str) -> str:
        """``name``, or Where(IsNaN(name), 0, name) when the exporter guards fully masked rows."""
        users = self.consumers[name]
        if sorted(n.op_type for n in users) != ["IsNaN", "Where"]:
            return name
        isnan = next(n for n in users if n.op_type == "IsNaN")
        guard = next(n for n in users if n.op_type == "Where")
        if (
            list(guard.input) != [isnan.output[0], guard.input[1], name]
            or list(isnan.input) != [name]
            or self.scalar(guard.input[1]) != 0.0
        ):
            raise NoMatch(f"{name} has an unexpected NaN guard")
        return str(guard.output[0])

    def projection_input(self, name: str, hidden: int) -> str:
        """The tensor that ``name`` = x @ W + b projects: checks W and b have the right shapes."""
        add = self.made_by(name, "Add")
        left, right = add.input
        for matmul_out, bias in ((left, right), (right, left)):
            node = self.producer.get(matmul_out)
            if node is not None and node.op_type == "MatMul" and self.shape(bias) == [hidden]:
                weights = self.shape(node.input[1])
                if len(weights) == 2 and weights[1] == hidden:
                    return str(node.input[0])
        raise NoMatch(f"{name} is not a linear projection")

    def check_padding_mask(self, mask: str, mask_input: str, heads: int) -> None:
        """Run the mask's own subgraph on a probe: it must mask exactly the padded keys."""
        nodes, inputs = self.ancestors(mask)
        if mask_input not in inputs:
            raise NoMatch(f"the mask {mask} does not depend on {mask_input}")
        if any(n.op_type in _HEAVY for n in nodes):
            raise NoMatch(f"the mask {mask} depends on the hidden states")
        used = {i for n in nodes for i in n.input}
        probe = helper.make_model(
            helper.make_graph(
                nodes,
                "mask_probe",
                [self.inputs[name] for name in sorted(inputs)],
                [helper.make_tensor_value_info(mask, onnx.TensorProto.BOOL, None)],
                initializer=[t for name, t in self.initializers.items() if name in used],
            ),
            opset_imports=list(self.model.opset_import),
            ir_version=self.model.ir_version,
        )
        feeds: dict[str, npt.NDArray[np.int64]] = {}
        for name in inputs:
            tensor_type = self.inputs[name].type.tensor_type
            if tensor_type.elem_type != onnx.TensorProto.INT64 or len(self.shape(name)) != 2:
                raise NoMatch(f"the mask depends on {name}, not a (batch, sequence) int64 input")
            # Token ids of 1 everywhere: a mask computed from the ids would not match.
            feeds[name] = _PROBE_MASK if name == mask_input else np.ones_like(_PROBE_MASK)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(
            probe.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
        )
        (result,) = session.run([mask], feeds)
        batch, length = _PROBE_MASK.shape
        scores = (batch, heads, length, length)
        expected = np.broadcast_to(_PROBE_MASK.astype(bool)[:, None, None, :], scores)
        result = np.asarray(result)
        try:
            matches = result.dtype == np.bool_ and np.array_equal(
                np.broadcast_to(result, scores), expected
            )
        except ValueError:  # does not broadcast to the scores' shape
            matches = False
        if not matches:
            raise NoMatch(f"the mask {mask} is not a key padding mask from {mask_input}")

    # --- rewriting -------------------------------------------------------------

    def rewrite(self, layers: list[_Layer], mask_input: str) -> bytes:
        """The model with each layer's attention replaced, dead code removed, serialised."""
        graph = self.model.graph
        taken = set(self.producer) | set(self.consumers) | {n.name for n in graph.node}
        taken |= set(self.initializers) | set(self.inputs)
        mask32 = fresh_name(f"{mask_input}_int32", taken)
        nodes = [
            helper.make_node(
                "Cast",
                [mask_input],
                [mask32],
                to=onnx.TensorProto.INT32,
                name=fresh_name("fused_mask", taken),
            )
        ]
        by_output = {layer.output: layer for layer in layers}
        for node in graph.node:
            layer = by_output.get(node.output[0]) if len(node.output) == 1 else None
            if layer is None:
                nodes.append(node)
                continue
            nodes.append(
                helper.make_node(
                    OPERATOR,
                    [layer.query, layer.key, layer.value, "", mask32],
                    [layer.output],
                    domain=DOMAIN,
                    name=fresh_name(f"fused_attention_{len(nodes)}", taken),
                    num_heads=layer.heads,
                    scale=layer.scale,
                    mask_filter_value=layer.mask_value,
                )
            )
        kept = live_nodes(nodes, [o.name for o in graph.output])
        if any(n.op_type == "Softmax" for n in kept):
            raise NoMatch("other nodes still need the unfused attention")
        used = {name for n in kept for name in n.input} | {o.name for o in graph.output}
        fused = onnx.ModelProto()
        fused.CopyFrom(self.model)
        del fused.graph.node[:]
        fused.graph.node.extend(kept)
        del fused.graph.initializer[:]
        fused.graph.initializer.extend(t for t in graph.initializer if t.name in used)
        del fused.graph.value_info[:]
        fused.graph.value_info.extend(v for v in graph.value_info if v.name in used)
        if not any(o.domain == DOMAIN for o in fused.opset_import):
            fused.opset_import.append(helper.make_opsetid(DOMAIN, 1))
        onnx.checker.check_model(fused)
        return bytes(fused.SerializeToString())
