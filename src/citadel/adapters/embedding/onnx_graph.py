"""Look-ups over one parsed ONNX graph, for the graph rewriters.

The rewriters match patterns by following tensors from producer to consumer,
never by node names. :class:`OnnxGraph` indexes one model for that (producers,
consumers, constants, inferred shapes, symbolic where a dimension varies) and
evaluates shape tensors; a look-up that finds something other than what the
pattern expects raises :class:`NoMatch`, saying where. ``fusion_graph`` matches
over it; ``int8_graph`` shares the constant look-up, dead-code elimination and
the contrib-operator domain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

DOMAIN = "com.microsoft"
"""onnxruntime's contrib operators (the fused kernels the rewriters emit)."""

Dim: TypeAlias = int | str
"""A dimension: its size, or its symbol (``batch``, ``sequence``) when it varies."""


class NoMatch(Exception):
    """The graph is not the pattern being rewritten; the message says where."""


class OnnxGraph:
    """Look-ups over one parsed model: producers, consumers, constants and inferred shapes."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graph = model.graph
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in graph.node:
            if any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                for a in node.attribute
            ):
                raise NoMatch(f"{node.op_type} node {node.name!r} has subgraphs")
            for name in node.output:
                self.producer[name] = node
            for name in node.input:
                if name:
                    self.consumers[name].append(node)
        self.initializers = {t.name: t for t in graph.initializer}
        self.inputs = {i.name: i for i in graph.input}
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        self.shapes: dict[str, list[Dim]] = {
            t.name: [int(d) for d in t.dims] for t in graph.initializer
        }
        for info in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
            if info.type.tensor_type.HasField("shape"):
                self.shapes[info.name] = [
                    d.dim_value if d.HasField("dim_value") else d.dim_param or f"?{info.name}:{i}"
                    for i, d in enumerate(info.type.tensor_type.shape.dim)
                ]

    def made_by(self, name: str, op_type: str) -> onnx.NodeProto:
        node = self.producer.get(name)
        if node is None or node.op_type != op_type:
            found = "a graph input or constant" if node is None else node.op_type
            raise NoMatch(f"{name} comes from {found}, expected {op_type}")
        return node

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto:
        users = self.consumers[name]
        if len(users) != 1 or users[0].op_type != op_type:
            raise NoMatch(f"{name} is read by {[n.op_type for n in users]}, expected [{op_type!r}]")
        return users[0]

    def shape(self, name: str) -> list[Dim]:
        shape = self.shapes.get(name)
        if shape is None:
            raise NoMatch(f"the shape of {name} is unknown")
        return shape

    def constant(self, name: str) -> npt.NDArray[np.generic] | None:
        return constant_value(name, self.initializers, self.producer)

    def scalar(self, name: str) -> float | None:
        value = self.constant(name)
        return float(value.reshape(())) if value is not None and value.size == 1 else None

    def unscaled(self, name: str) -> tuple[str, float]:
        """``name`` without a Mul or Div by a scalar constant, and the factor it applied."""
        node = self.producer.get(name)
        if node is not None and node.op_type in ("Mul", "Div"):
            left, right = node.input
            factor = self.scalar(right)
            if factor is not None and factor != 0.0:
                return left, factor if node.op_type == "Mul" else 1.0 / factor
            factor = self.scalar(left)
            if factor is not None and node.op_type == "Mul":
                return right, factor
        return name, 1.0

    def shape_value(self, name: str) -> list[Dim]:
        """The value of a 1-D int64 shape tensor, symbolic dimensions included."""
        constant = self.constant(name)
        if constant is not None:
            if constant.ndim != 1 or constant.dtype != np.int64:
                raise NoMatch(f"{name} is not a 1-D int64 shape")
            return [int(v) for v in constant]
        node = self.producer.get(name)
        if node is None:
            raise NoMatch(f"{name} is not computed from shapes")
        if node.op_type == "Shape":
            return self.shape(node.input[0])[
                int_attribute(node, "start", 0) : int_attribute(node, "end", None)
            ]
        if node.op_type == "Concat" and int_attribute(node, "axis", None) == 0:
            return [d for part in node.input for d in self.shape_value(part)]
        if node.op_type == "Slice" and len(node.input) in (3, 4, 5):
            data = self.shape_value(node.input[0])
            bounds = [self.constant(part) for part in node.input[1:]]
            if any(b is None or b.shape != (1,) for b in bounds):
                raise NoMatch(f"{name} is sliced with non-constant bounds")
            start, end, *rest = (int(b[0]) for b in bounds if b is not None)
            if rest not in ([], [0], [0, 1]):  # axes [0], steps [1]
                raise NoMatch(f"{name} is sliced with axes or steps {rest}")
            return data[start:end]
        raise NoMatch(f"{name} comes from {node.op_type}, not from shapes")

    def ancestors(self, name: str) -> tuple[list[onnx.NodeProto], set[str]]:
        """The nodes ``name`` is computed from (in graph order) and the graph inputs they read."""
        seen: set[str] = set()
        inputs: set[str] = set()
        pending = [name]
        while pending:
            tensor = pending.pop()
            if tensor in seen or not tensor:
                continue
            seen.add(tensor)
            node = self.producer.get(tensor)
            if node is not None:
                pending.extend(node.input)
            elif tensor in self.inputs:
                inputs.add(tensor)
        nodes = [n for n in self.model.graph.node if any(o in seen for o in n.output)]
        return nodes, inputs


def int_attribute(node: onnx.NodeProto, name: str, default: int | None) -> int | None:
    for attribute in node.attribute:
        if attribute.name == name:
            if attribute.type != onnx.AttributeProto.INT:
                raise NoMatch(f"attribute {name} of {node.op_type} is not an int")
            return int(attribute.i)
    return default


def ints_attribute(node: onnx.NodeProto, name: str) -> list[int] | None:
    for attribute in node.attribute:
        if attribute.name == name and attribute.type == onnx.AttributeProto.INTS:
            return [int(i) for i in attribute.ints]
    return None


def constant_value(
    name: str,
    initializers: Mapping[str, onnx.TensorProto],
    producer: Mapping[str, onnx.NodeProto],
) -> npt.NDArray[np.generic] | None:
    """The value of ``name`` when it is an initializer or a Constant node's output."""
    if name in initializers:
        return numpy_helper.to_array(initializers[name])
    node = producer.get(name)
    if node is not None and node.op_type == "Constant" and node.attribute[0].name == "value":
        return numpy_helper.to_array(node.attribute[0].t)
    return None


def live_nodes(nodes: list[onnx.NodeProto], outputs: list[str]) -> list[onnx.NodeProto]:
    """The nodes the graph outputs depend on, in their order (dead-code elimination)."""
    needed = set(outputs)
    kept: list[onnx.NodeProto] = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    kept.reverse()
    return kept


def fresh_name(stem: str, taken: set[str]) -> str:
    """A name no tensor or node in the graph has yet; reserved from then on."""
    name, n = stem, 0
    while name in taken:
        n += 1
        name = f"{stem}_{n}"
    taken.add(name)
    return name
