"""Run the packaged int8 weights as int8 arithmetic, and fuse the exported GELU.

The model package stores every weight matrix as int8 codes ``q`` (K, N) and one
float scale per output column ``s`` (1, N); the exported graph turns them back
into floats, ``MatMul(x, Cast(q) * s)``, so onnxruntime multiplies float32
matrices. ``quantise_matmuls`` rewrites each such product (and the bias ``Add``
after it, when there is one) into onnxruntime's integer kernels:

    DynamicQuantizeLinear(x) -> x8 (uint8), x_scale, x_zero      once per x
    com.microsoft.MatMulIntegerToFloat(x8, q, x_scale, s, x_zero, -, bias)

The weights stay the package's own codes and scales, bit for bit; what changes
is that each activation tensor is rounded to integer codes with one scale over
the whole tensor, computed as the graph runs. The function is therefore close
to, not equal to, the float graph's (the embedder gives it another name), and a
row's result depends on everything in the tensor: the embedder runs one text
per inference run, so a text's vector never depends on what it was batched with.

``activation_bits=8`` (the default) keeps DynamicQuantizeLinear's 0..255
codes. ``activation_bits=7`` (the embedder's opt-in ``w8a7``) halves the codes
and zero point with ``BitShift`` (0..127) and doubles the scale, the lost bit
folded into the bias as its mean (see ``_quantise``): integer operations on
integer outputs, so every CPU gets the same codes, and a pair of products stays
within 16 bits on every kernel (``cpu_kernels``). It costs too much precision
to be the default (docs/embedding.md).

The exporter's GELU, ``x * (0.5 * (1 + erf(x / sqrt 2)))`` in five operators,
becomes one ``com.microsoft.Gelu`` (the same function) when ``fuse_gelu`` is set.

Each rewrite checks what it replaces (operators, constants, shapes) and stops
at anything unexpected: the caller gets its bytes back with the reason, and
decides what to do (the embedder refuses to run a model under the int8 name
that does not compute the int8 function). Nothing here raises.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from citadel.adapters.embedding.onnx_graph import DOMAIN, constant_value, live_nodes

_SQRT2 = math.sqrt(2.0)
ACTIVATION_BITS = (7, 8)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The model to load, and whether (or why not) it was rewritten."""

    model: bytes
    rewritten: bool
    reason: str


class _NoMatch(Exception):
    """The graph is not the pattern this module rewrites; the message says where."""


def quantise_matmuls(
    model: bytes, *, expected: int, activation_bits: int = 8, fuse_gelu: bool = True
) -> Rewrite:
    """``model`` with its ``expected`` int8-weight products run as int8, or unchanged and why.

    ``activation_bits`` is 8 (codes 0..255, the default) or 7 (0..127: no pair of
    products can saturate on any CPU, but the vectors move further; see
    docs/embedding.md).
    """
    try:
        parsed = onnx.load_from_string(model)
        graph = _Graph(parsed)
        products = graph.int8_products()
        if len(products) != expected:
            raise _NoMatch(f"{len(products)} int8-weight MatMuls, expected {expected}")
        if activation_bits not in ACTIVATION_BITS:
            raise _NoMatch(f"activation_bits must be one of {ACTIVATION_BITS}")
        nodes = graph.quantised(products, activation_bits)
        gelus = 0
        if fuse_gelu:
            nodes, gelus = _fuse_gelu(nodes, graph)
        rewritten = graph.serialise(nodes)
    except _NoMatch as exc:
        return Rewrite(model, False, f"not run as int8: {exc}")
    except Exception as exc:  # onnx raises many untyped errors
        return Rewrite(model, False, f"not run as int8: {type(exc).__name__}: {exc}")
    return Rewrite(
        rewritten,
        True,
        f"{len(products)} MatMuls run as int8 ({activation_bits}-bit dynamic activations),"
        f" {gelus} GELUs fused",
    )


@dataclass(frozen=True, slots=True)
class _Product:
    """One ``MatMul(x, Cast(q) * s)`` and the bias added to it, if any."""

    matmul: onnx.NodeProto
    x: str
    codes: str
    """The int8 (K, N) initializer."""
    scales: np.ndarray
    """One float32 scale per output column, shape (N,)."""
    bias_add: onnx.NodeProto | None
    bias: str


@dataclass(frozen=True, slots=True)
class _Codes:
    """The tensors one activation is quantised into, as MatMulIntegerToFloat reads them."""

    values: str
    """uint8 codes, (..., K)."""
    scale: str
    zero: str
    """Scalars: x ~ (values - zero) * scale."""
    offset: str
    """For 7-bit codes: a scalar to add to each code (times the scale), else empty."""


class _Graph:
    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in model.graph.node:
            for name in node.output:
                self.producer[name] = node
            for name in node.input:
                if name:
                    self.consumers[name].append(node)
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.outputs = {o.name for o in model.graph.output}
        self.taken = set(self.producer) | set(self.consumers) | set(self.initializers)
        self.taken |= {n.name for n in model.graph.node} | {i.name for i in model.graph.input}
        self.added: list[onnx.TensorProto] = []

    def constant(self, name: str) -> np.ndarray | None:
        return constant_value(name, self.initializers, self.producer)

    def int8_products(self) -> list[_Product]:
        products = []
        for node in self.model.graph.node:
            if node.op_type != "MatMul":
                continue
            scaled = self.producer.get(node.input[1])
            if scaled is None or scaled.op_type != "Mul":
                continue
            product = self._product(node, scaled)
            if product is not None:
                products.append(product)
        return products

    def _product(self, matmul: onnx.NodeProto, scaled: onnx.NodeProto) -> _Product | None:
        for cast_out, scale_name in (scaled.input, reversed(scaled.input)):
            cast = self.producer.get(cast_out)
            if cast is None or cast.op_type != "Cast" or cast.input[0] not in self.initializers:
                continue
            codes = self.initializers[cast.input[0]]
            scales = self.constant(scale_name)
            if codes.data_type != onnx.TensorProto.INT8 or len(codes.dims) != 2 or scales is None:
                raise _NoMatch(f"{matmul.name}: the weights are not an int8 matrix and scales")
            columns = int(codes.dims[1])
            if scales.dtype != np.float32 or scales.size != columns or scales.shape[-1] != columns:
                raise _NoMatch(f"{matmul.name}: {scales.shape} scales for {columns} columns")
            if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
                raise _NoMatch(f"{matmul.name}: a column scale is not a positive number")
            if len(self.consumers[scaled.output[0]]) != 1:
                raise _NoMatch(f"{matmul.name}: the dequantised weights have other readers")
            bias_add, bias = self._bias(matmul, columns)
            return _Product(
                matmul, matmul.input[0], codes.name, scales.reshape(columns), bias_add, bias
            )
        return None

    def _bias(self, matmul: onnx.NodeProto, columns: int) -> tuple[onnx.NodeProto | None, str]:
        """The ``Add`` of a constant (N,) vector that is the product's only reader, if any."""
        out = matmul.output[0]
        readers = self.consumers[out]
        if len(readers) != 1 or readers[0].op_type != "Add" or out in self.outputs:
            return None, ""
        add = readers[0]
        other = add.input[1] if add.input[0] == out else add.input[0]
        value = self.constant(other)
        if value is None or value.dtype != np.float32 or value.shape != (columns,):
            return None, ""
        if other not in self.initializers:  # a Constant node: make it an initializer
            name = self.fresh(f"{other}_bias")
            self.added.append(numpy_helper.from_array(value, name))
            other = name
        return add, other

    def fresh(self, stem: str) -> str:
        name, n = stem, 0
        while name in self.taken:
            n += 1
            name = f"{stem}_{n}"
        self.taken.add(name)
        return name

    def quantised(self, products: list[_Product], bits: int) -> list[onnx.NodeProto]:
        """The node list with each product replaced; one quantisation per input."""
        by_matmul = {id(p.matmul): p for p in products}
        folded = {id(p.bias_add) for p in products if p.bias_add is not None}
        quantised_inputs: dict[str, _Codes] = {}
        nodes: list[onnx.NodeProto] = []
        for node in self.model.graph.node:
            if id(node) in folded:
                continue
            product = by_matmul.get(id(node))
            if product is None:
                nodes.append(node)
                continue
            if product.x not in quantised_inputs:
                quantised_inputs[product.x] = self._quantise(product.x, bits, nodes)
            codes = quantised_inputs[product.x]
            scales = self.fresh(f"{product.codes}_column_scales")
            self.added.append(numpy_helper.from_array(product.scales, scales))
            output = product.bias_add.output[0] if product.bias_add is not None else node.output[0]
            bias = product.bias
            if codes.offset:  # the halved codes' mean, times each column's weights and scale
                weights = numpy_helper.to_array(self.initializers[product.codes])
                columns = weights.astype(np.float64).sum(axis=0) * product.scales
                bias = self._node("Mul", [codes.offset, self._add(columns, product.codes)], nodes)
                if product.bias:
                    bias = self._node("Add", [product.bias, bias], nodes)
            nodes.append(
                helper.make_node(
                    "MatMulIntegerToFloat",
                    [codes.values, product.codes, codes.scale, scales, codes.zero, "", bias],
                    [output],
                    domain=DOMAIN,
                    name=self.fresh(f"{node.name}_int8"),
                )
            )
        return nodes

    def _quantise(self, x: str, bits: int, nodes: list[onnx.NodeProto]) -> _Codes:
        """Nodes (appended) that round ``x`` to ``bits``-bit codes, and the codes' tensors."""
        values, scale, zero = (self.fresh(f"{x}_{part}") for part in ("u8", "scale", "zero"))
        nodes.append(
            helper.make_node(
                "DynamicQuantizeLinear",
                [x],
                [values, scale, zero],
                name=self.fresh(f"{x}_quantise"),
            )
        )
        if bits == 8:
            return _Codes(values, scale, zero, "")
        # 7 bits: (c - z) s = 2 (c//2 - z//2) s + (c%2 - z%2) s. The kernel gets the
        # halved codes and zero point with twice the scale; the lost bit c%2 counts
        # as its mean, 1/2, so the rest, (1/2 - z%2) s, is the same for every code:
        # the products' sum of it is this scalar times each column's weights, folded
        # into the bias. All exact in float32 (small integers, halves), so every
        # CPU computes the same codes, scale and offset.
        one = self._add(np.array(1, np.uint8), "one")
        half_values = self._node("BitShift", [values, one], nodes, direction="RIGHT")
        half_zero = self._node("BitShift", [zero, one], nodes, direction="RIGHT")
        twice = self._node("Mul", [scale, self._add(np.array(2.0, np.float32), "two")], nodes)
        zero_f = self._node("Cast", [zero], nodes, to=onnx.TensorProto.FLOAT)
        half_zero_f = self._node("Cast", [half_zero], nodes, to=onnx.TensorProto.FLOAT)
        doubled = self._node("Add", [half_zero_f, half_zero_f], nodes)
        lost = self._node("Sub", [doubled, zero_f], nodes)  # 0 or -1: the zero point's lost bit
        mean = self._node("Add", [lost, self._add(np.array(0.5, np.float32), "half")], nodes)
        offset = self._node("Mul", [mean, scale], nodes)
        return _Codes(half_values, twice, half_zero, offset)

    def _node(
        self, op_type: str, inputs: list[str], nodes: list[onnx.NodeProto], **attributes: Any
    ) -> str:
        """Append one node with one fresh output; the output's name."""
        out = self.fresh(f"{inputs[0]}_{op_type.lower()}")
        nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attributes))
        return out

    def _add(self, value: np.ndarray, stem: str) -> str:
        """A new initializer (float64 values become float32); its name."""
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        name = self.fresh(f"{stem}_constant")
        self.added.append(numpy_helper.from_array(value, name))
        return name

    def serialise(self, nodes: list[onnx.NodeProto]) -> bytes:
        kept = live_nodes(nodes, [o.name for o in self.model.graph.output])
        if any(n.op_type == "MatMul" and self._dequantised(n) for n in kept):
            raise _NoMatch("a float MatMul still reads dequantised weights")
        used = {name for n in kept for name in n.input} | self.outputs
        out = onnx.ModelProto()
        out.CopyFrom(self.model)
        del out.graph.node[:]
        out.graph.node.extend(kept)
        initializers = [*self.model.graph.initializer, *self.added]
        del out.graph.initializer[:]
        out.graph.initializer.extend(t for t in initializers if t.name in used)
        del out.graph.value_info[:]
        out.graph.value_info.extend(v for v in self.model.graph.value_info if v.name in used)
        if not any(o.domain == DOMAIN for o in out.opset_import):
            out.opset_import.append(helper.make_opsetid(DOMAIN, 1))
        onnx.checker.check_model(out)
        return bytes(out.SerializeToString())

    def _dequantised(self, matmul: onnx.NodeProto) -> bool:
        """Whether ``matmul`` reads Cast(an initializer) * something, like the weights."""
        scaled = self.producer.get(matmul.input[1])
        if scaled is None or scaled.op_type != "Mul":
            return False
        casts = [self.producer.get(name) for name in scaled.input]
        return any(
            c is not None and c.op_type == "Cast" and c.input[0] in self.initializers for c in casts
        )


def _fuse_gelu(nodes: list[onnx.NodeProto], graph: _Graph) -> tuple[list[onnx.NodeProto], int]:
    """Each ``x * (0.5 * (1 + erf(x / sqrt 2)))`` replaced by ``Gelu(x)``."""
    producer = {o: n for n in nodes for o in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in nodes:
        for name in node.input:
            consumers[name].append(node)

    def only(name: str, op_type: str) -> onnx.NodeProto | None:
        readers = consumers[name]
        if len(readers) != 1 or readers[0].op_type != op_type or name in graph.outputs:
            return None
        return readers[0]

    def other(node: onnx.NodeProto, name: str) -> str:
        return str(node.input[1] if node.input[0] == name else node.input[0])

    def is_constant(name: str, value: float) -> bool:
        found = graph.constant(name)
        return (
            found is not None and found.size == 1 and abs(float(found.reshape(())) - value) < 1e-6
        )

    replaced: dict[int, onnx.NodeProto | None] = {}
    count = 0
    for erf in [n for n in nodes if n.op_type == "Erf"]:
        div = producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or not is_constant(div.input[1], _SQRT2):
            continue
        x = div.input[0]
        add = only(erf.output[0], "Add")
        half = only(add.output[0], "Mul") if add is not None else None
        if add is None or half is None or not is_constant(other(add, erf.output[0]), 1.0):
            continue
        if not is_constant(other(half, add.output[0]), 0.5):
            continue
        times_x = only(half.output[0], "Mul")
        if times_x is None or other(times_x, half.output[0]) != x:
            continue
        if only(div.output[0], "Erf") is None:
            continue
        gelu = helper.make_node(
            "Gelu", [x], [times_x.output[0]], domain=DOMAIN, name=graph.fresh(f"{x}_gelu")
        )
        for node in (div, erf, add, half):
            replaced[id(node)] = None
        replaced[id(times_x)] = gelu
        count += 1
    out: list[onnx.NodeProto] = []
    for node in nodes:
        if id(node) not in replaced:
            out.append(node)
        elif (new := replaced[id(node)]) is not None:
            out.append(new)
    return out, count
