"""Synthetic model graphs (no ONNX file) for tests and scale benchmarks.

- :func:`random_dag`: a chain with random skip connections (CNN-like);
- :func:`layered_dag`: layers of parallel ops, each reading one to three outputs of the
  previous two layers (wide fan-in and fan-out, like a detector neck or an Inception net);
- :func:`transformer_dag`: repeated pre-norm transformer blocks with per-head attention
  branches (fan-out to the heads, fan-in at the concat), sized to a number of ops.

>>> g = random_dag(50, seed=1)
>>> len(g), g.g.number_of_edges() >= 49
(50, True)
"""

from __future__ import annotations

import random

import networkx as nx

from graph_ir.ir import ModelGraph, Op, Tensor, add_data_edge
from graph_ir.op_metrics import metrics

__all__ = ["layered_dag", "random_dag", "transformer_dag"]

_TYPES = ("Conv", "Conv", "MatMul", "Relu", "Add", "Sigmoid", "Concat", "Softmax", "MaxPool", "Reshape")


def random_dag(
    n: int,
    seed: int = 0,
    width: int = 4,
    max_fan_in: int = 3,
    op_types: tuple[str, ...] = _TYPES,
) -> ModelGraph:
    """A connected random DAG of ``n`` ops, CNN/transformer-like.

    Each op reads the previous op's output and, with some probability, up to
    ``max_fan_in - 1`` outputs of the ``width * 4`` ops before it (skip connections).
    Shapes are small 4-D activations so MACs and bytes vary by op type and size.
    """
    rng = random.Random(seed)
    g = nx.DiGraph()
    producer: dict[str, str] = {}
    order: list[str] = []
    x = Tensor("input", (1, 16, 32, 32), "float32")
    outs: list[Tensor] = []
    for i in range(n):
        op_type = op_types[rng.randrange(len(op_types))]
        first = outs[-1] if outs else x
        extra: list[Tensor] = []
        if outs and max_fan_in > 1 and rng.random() < 0.3:
            lo = max(0, len(outs) - width * 4)
            for _ in range(rng.randint(1, max_fan_in - 1)):
                cand = outs[rng.randrange(lo, len(outs))]
                if cand is not first and cand not in extra:
                    extra.append(cand)
        c, h = first.shape[1], first.shape[2]
        attrs: dict[str, object] = {}
        out_shape: tuple[int, ...]
        if op_type == "Conv":
            cout = rng.choice((16, 32, 64, 128))
            k = rng.choice((1, 3))
            w = Tensor(f"w{i}", (cout, c, k, k), "float32", True)
            ins = [first, w]
            out_shape = (1, cout, h, h)
            attrs["kernel_shape"] = (k, k)
        elif op_type == "MatMul":
            n_out = rng.choice((16, 32, 64))
            w = Tensor(f"w{i}", (h, n_out), "float32", True)
            ins = [first, w]
            out_shape = (1, c, h, n_out)
        elif op_type in ("Add", "Concat"):
            ins = [first] + extra[:1]
            out_shape = first.shape if op_type == "Add" or len(ins) == 1 else (1, c + ins[1].shape[1], h, h)
            extra = extra[1:]
        elif op_type == "MaxPool":
            ins = [first]
            out_shape = (1, c, max(1, h // 2), max(1, h // 2))
            attrs["kernel_shape"] = (2, 2)
        else:
            ins = [first]
            out_shape = first.shape
        if len(out_shape) == 4 and out_shape[2] != out_shape[3]:
            out_shape = (1, out_shape[1], out_shape[2], out_shape[2])  # keep square maps
        # extra skip inputs ride along as additional activations (e.g. a fused residual)
        ins = ins + extra
        y = Tensor(f"t{i}", out_shape, "float32")
        m = metrics(op_type, ins, [y], attrs)
        name = f"n{i}_{op_type}"
        g.add_node(name, op=Op(name, op_type, m.category, tuple(ins), (y,), attrs, m.macs, m.flops))
        order.append(name)
        for t in ins:
            src = producer.get(t.name)
            if src is not None:
                add_data_edge(g, src, name, t.name)
        producer[y.name] = name
        outs.append(y)
    consumed = {t for _, _, d in g.edges(data=True) for t in d["tensors"]}
    outputs = tuple(t for t in outs if t.name not in consumed) or (outs[-1],) if outs else ()
    return ModelGraph(f"random{n}_s{seed}", g, (x,), outputs, producer, tuple(order))


class _Builder:
    """Appends ops to a graph under construction, computing MACs and FLOPs per op."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.g = nx.DiGraph()
        self.producer: dict[str, str] = {}
        self.order: list[str] = []
        self.consumed: set[str] = set()
        self.outs: list[Tensor] = []

    def add(
        self,
        op_type: str,
        inputs: list[Tensor],
        out_shape: tuple[int, ...],
        attrs: dict[str, object] | None = None,
    ) -> Tensor:
        i = len(self.order)
        attrs = attrs or {}
        y = Tensor(f"t{i}", out_shape, "float32")
        m = metrics(op_type, inputs, [y], attrs)
        name = f"n{i}_{op_type}"
        self.g.add_node(name, op=Op(name, op_type, m.category, tuple(inputs), (y,), attrs, m.macs, m.flops))
        self.order.append(name)
        for t in inputs:
            src = self.producer.get(t.name)
            if src is not None:
                add_data_edge(self.g, src, name, t.name)
                self.consumed.add(t.name)
        self.producer[y.name] = name
        self.outs.append(y)
        return y

    def weight(self, shape: tuple[int, ...]) -> Tensor:
        return Tensor(f"w{len(self.order)}", shape, "float32", True)

    def graph(self, inputs: tuple[Tensor, ...], n: int) -> ModelGraph:
        """The graph of the first ``n`` ops (a block built in one go may overshoot)."""
        while len(self.order) > n:
            self.g.remove_node(self.order.pop())
            del self.producer[self.outs.pop().name]
        self.consumed = {t for _, _, d in self.g.edges(data=True) for t in d["tensors"]}
        outputs = tuple(t for t in self.outs if t.name not in self.consumed)
        return ModelGraph(self.name, self.g, inputs, outputs, self.producer, tuple(self.order))


def layered_dag(n: int, seed: int = 0, width: int = 8, channels: int = 32, size: int = 28) -> ModelGraph:
    """``n`` ops in layers of ``width``; each op reads 1-3 outputs of the two layers before.

    Ops are convolutions (1x1 and 3x3), elementwise Add/Mul, activations, pooling-free
    so every tensor keeps the shape ``1 x channels x size x size``; fan-out follows from
    the random choice of inputs (some outputs feed several ops, some none).

    >>> g = layered_dag(100, seed=3)
    >>> len(g), all(g.g.in_degree(n) <= 3 for n in g.g)
    (100, True)
    """
    rng = random.Random(seed)
    b = _Builder(f"layered{n}_s{seed}")
    x = Tensor("input", (1, channels, size, size), "float32")
    shape = x.shape
    prev: list[Tensor] = [x]
    older: list[Tensor] = []
    layer: list[Tensor] = []
    for _ in range(n):
        pool = prev + older
        fresh = [t for t in prev if t.name not in b.consumed]
        first = fresh[0] if fresh else rng.choice(pool)
        op_type = rng.choice(("Conv", "Conv", "Conv", "Add", "Mul", "Relu", "Sigmoid", "Concat"))
        if op_type == "Conv":
            k = rng.choice((1, 3))
            ins = [first, b.weight((channels, channels, k, k))]
            y = b.add("Conv", ins, shape, {"kernel_shape": (k, k), "pads": (k // 2,) * 4})
        elif op_type in ("Add", "Mul"):
            other = [t for t in pool if t is not first]
            ins = [first, rng.choice(other) if other else first]
            y = b.add(op_type, ins, shape)
        elif op_type == "Concat":  # concat of 2-3 maps, then a 1x1 conv back to `channels`
            other = [t for t in pool if t is not first]
            ins = [first, *rng.sample(other, min(len(other), rng.randint(1, 2)))]
            cat = b.add("Concat", ins, (1, channels * len(ins), size, size), {"axis": 1})
            y = b.add("Conv", [cat, b.weight((channels, channels * len(ins), 1, 1))], shape, {"kernel_shape": (1, 1)})
        else:
            y = b.add(op_type, [first], shape)
        layer.append(y)
        if len(layer) >= width:
            older, prev, layer = prev, layer, []
        if len(b.order) >= n:
            break
    return b.graph((x,), n)


def transformer_dag(n: int, seq: int = 128, hidden: int = 256, heads: int = 8, ffn: int = 1024) -> ModelGraph:
    """Pre-norm transformer blocks with one branch per attention head, about ``n`` ops.

    A block is LayerNorm, Q/K/V projections, per head (Slice q, k, v; MatMul QK^T; Softmax;
    MatMul with V), Concat of the heads, output projection, residual Add, LayerNorm, FFN
    (MatMul, Gelu, MatMul) and a residual Add: ``11 + 6 * heads`` ops. Blocks are appended
    until ``n`` ops; the last block is cut short (its partial branches become outputs).

    >>> g = transformer_dag(200)
    >>> len(g)
    200
    """
    b = _Builder(f"transformer{n}_h{heads}")
    dh = hidden // heads
    x = Tensor("tokens", (1, seq, hidden), "float32")
    h = x

    def full() -> bool:
        return len(b.order) >= n

    while not full():
        ln = b.add("LayerNormalization", [h, b.weight((hidden,)), b.weight((hidden,))], h.shape, {"axis": -1})
        qkv = [b.add("MatMul", [ln, b.weight((hidden, hidden))], (1, seq, hidden)) for _ in range(3) if not full()]
        if len(qkv) < 3:
            break
        ctx: list[Tensor] = []
        for i in range(heads):
            if full():
                break
            qi, ki, vi = (
                b.add("Slice", [t], (1, seq, dh), {"starts": (i * dh,), "ends": ((i + 1) * dh,), "axes": (2,)})
                for t in qkv
            )
            kt = b.add("Transpose", [ki], (1, dh, seq), {"perm": (0, 2, 1)})
            s = b.add("MatMul", [qi, kt], (1, seq, seq))
            p = b.add("Softmax", [s], (1, seq, seq), {"axis": -1})
            ctx.append(b.add("MatMul", [p, vi], (1, seq, dh)))
        if full():
            break
        c = b.add("Concat", ctx, (1, seq, hidden), {"axis": 2})
        steps = (
            ("MatMul", (hidden, hidden), (1, seq, hidden)),
            ("Add", None, (1, seq, hidden)),
            ("LayerNormalization", (hidden,), (1, seq, hidden)),
            ("MatMul", (hidden, ffn), (1, seq, ffn)),
            ("Gelu", None, (1, seq, ffn)),
            ("MatMul", (ffn, hidden), (1, seq, hidden)),
            ("Add", None, (1, seq, hidden)),
        )
        y = c
        resid = h
        for op_type, wshape, out_shape in steps:
            if full():
                break
            if op_type == "Add":
                y = b.add("Add", [y, resid], out_shape)
                resid = y
            elif wshape is None:
                y = b.add(op_type, [y], out_shape)
            else:
                ins = [y, b.weight(wshape)] + ([b.weight(wshape)] if op_type == "LayerNormalization" else [])
                y = b.add(op_type, ins, out_shape, {"axis": -1} if op_type == "LayerNormalization" else {})
        h = y
    return b.graph((x,), n)
