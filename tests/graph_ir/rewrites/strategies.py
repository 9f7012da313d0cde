"""Hypothesis strategies for rewrite tests: small random ONNX graphs with weights.

:func:`models` draws a DAG of Conv / BatchNormalization / Concat / Split / MatMul / Add / Mul /
Relu / Identity / Dropout / Reshape (and no-op Transpose / Cast) over NCHW tensors of random but
valid shapes; every weight has values (a seed drawn by hypothesis feeds numpy), in the ranges
:mod:`graph_ir.materialize` uses. Every op keeps the spatial size, so any two tensors can meet
in a Concat along channels; each tensor that nobody reads is a graph output, and now and then a
tensor that is read is an output too (rewrites must keep graph outputs).

Use::

    @given(model=models(ops=("Conv", "BatchNormalization", "Relu")))
    def test_pass(model): ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

__all__ = ["ALL_OPS", "OPSET", "models"]

#: Every op type :func:`models` can draw.
ALL_OPS: tuple[str, ...] = (
    "Conv", "BatchNormalization", "Concat", "Split", "MatMul", "Add", "Mul", "Relu",
    "Identity", "Dropout", "Reshape", "Transpose", "Cast",
)  # fmt: skip
OPSET = 17


@dataclass
class _Builder:
    """The graph being drawn: tensors and their shapes, nodes, initializers, a numpy generator."""

    rng: np.random.Generator
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    read: set[str] = field(default_factory=set)

    def name(self, base: str) -> str:
        return f"{base}{len(self.nodes)}_{len(self.inits)}"

    def const(self, base: str, arr: np.ndarray) -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(arr, n))
        return n

    def node(self, op: str, inputs: Sequence[str], shapes: Sequence[tuple[int, ...]], **attrs: Any) -> list[str]:
        name = self.name(op)
        outs = [f"{name}_out{k}" for k in range(len(shapes))]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        self.read.update(inputs)
        self.shapes.update(zip(outs, shapes, strict=True))
        return outs


def _weights(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(np.float32)


def _add_op(draw: st.DrawFn, b: _Builder, op: str) -> None:
    """Add one ``op`` reading tensors already drawn."""
    tensors = [t for t, s in b.shapes.items() if len(s) == 4]
    chain: bool = draw(st.booleans())  # half the time read the newest tensor: chains like conv -> bn
    x = tensors[-1] if chain else draw(st.sampled_from(tensors))
    n, c, h, w = b.shapes[x]
    if op == "Conv":
        co, k = draw(st.integers(1, 8)), draw(st.sampled_from([1, 3]))
        groups = draw(st.sampled_from([g for g in (1, 2) if c % g == 0 and co % g == 0]))
        wt = b.const("W", _weights(b.rng, (co, c // groups, k, k), c // groups * k * k))
        ins = [x, wt] + ([b.const("B", (b.rng.standard_normal(co) * 0.1).astype(np.float32))] if draw(st.booleans()) else [])
        b.node("Conv", ins, [(n, co, h, w)], kernel_shape=[k, k], pads=[k // 2] * 4, group=groups)
    elif op == "BatchNormalization":
        params = [b.rng.uniform(0.5, 1.5, c), b.rng.standard_normal(c) * 0.1, b.rng.standard_normal(c) * 0.1, b.rng.uniform(0.5, 1.5, c)]
        ins = [x] + [b.const(p, v.astype(np.float32)) for p, v in zip(("scale", "bias", "mean", "var"), params, strict=True)]
        b.node("BatchNormalization", ins, [(n, c, h, w)], epsilon=draw(st.sampled_from([1e-5, 1e-3])))
    elif op == "Concat":
        others = draw(st.lists(st.sampled_from(tensors), min_size=1, max_size=3))
        b.node("Concat", [x, *others], [(n, c + sum(b.shapes[o][1] for o in others), h, w)], axis=1)
    elif op == "Split" and c >= 2:
        parts = draw(st.integers(2, min(c, 3)))
        cuts = sorted(draw(st.lists(st.integers(1, c - 1), min_size=parts - 1, max_size=parts - 1, unique=True)))
        sizes = [e - s for s, e in zip([0, *cuts], [*cuts, c], strict=True)]
        sz = b.const("split", np.asarray(sizes, dtype=np.int64))
        b.node("Split", [x, sz], [(n, s, h, w) for s in sizes], axis=1)
    elif op == "MatMul":
        b.node("MatMul", [x, b.const("M", _weights(b.rng, (w, w), w))], [(n, c, h, w)])
    elif op in ("Add", "Mul"):
        same = [t for t in tensors if b.shapes[t] == (n, c, h, w)]
        y = draw(st.sampled_from(same)) if draw(st.booleans()) else b.const("k", b.rng.uniform(0.5, 1.5, (c, 1, 1)).astype(np.float32))
        b.node(op, [x, y], [(n, c, h, w)])
    elif op in ("Relu", "Identity"):
        b.node(op, [x], [(n, c, h, w)])
    elif op == "Dropout":
        b.node("Dropout", [x], [(n, c, h, w)])
    elif op == "Reshape":
        target = draw(st.sampled_from([[n, c, h, w], [0, -1, h, w], [n, c, h * w]]))
        out = b.node("Reshape", [x, b.const("shape", np.asarray(target, dtype=np.int64))], [(n, c, h * w) if len(target) == 3 else (n, c, h, w)])
        if len(target) == 3:  # back to 4-D (3-D tensors are never drawn as operands)
            b.node("Reshape", [out[0], b.const("shape", np.asarray([n, c, h, w], dtype=np.int64))], [(n, c, h, w)])
    elif op == "Transpose":
        b.node("Transpose", [x], [(n, c, h, w)], perm=[0, 1, 2, 3])
    elif op == "Cast":
        b.node("Cast", [x], [(n, c, h, w)], to=TensorProto.FLOAT)


@st.composite
def models(draw: st.DrawFn, ops: Sequence[str] = ALL_OPS, max_nodes: int = 8, min_nodes: int = 1) -> onnx.ModelProto:
    """A random valid model of ``min_nodes`` to ``max_nodes`` drawn ops among ``ops``, with
    weights, one float input ``x`` of shape ``[1, C, H, W]`` (C 1-6, H and W 2-5)."""
    seed = draw(st.integers(0, 2**32 - 1))
    b = _Builder(np.random.default_rng(seed))
    b.shapes["x"] = (1, draw(st.integers(1, 6)), draw(st.integers(2, 5)), draw(st.integers(2, 5)))
    drawn: list[str] = draw(st.lists(st.sampled_from(list(ops)), min_size=min_nodes, max_size=max_nodes))
    for op in drawn:
        _add_op(draw, b, op)
    if not b.nodes:
        b.node("Relu", ["x"], [b.shapes["x"]])
    made = [o for nd in b.nodes for o in nd.output]
    outputs = [o for o in made if o not in b.read]
    extra = [o for o in made if o in b.read and len(b.shapes[o]) == 4]
    also_read: bool = draw(st.booleans())
    if extra and also_read:
        outputs.append(draw(st.sampled_from(extra)))
    graph = helper.make_graph(
        b.nodes, "random", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(b.shapes["x"]))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(b.shapes[o])) for o in outputs], b.inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model
