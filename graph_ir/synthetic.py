"""Synthetic model graphs (no ONNX file): random layered DAGs for tests and benchmarks.

>>> g = random_dag(50, seed=1)
>>> len(g), g.g.number_of_edges() >= 49
(50, True)
"""

from __future__ import annotations

import random

import networkx as nx

from graph_ir.ir import ModelGraph, Op, Tensor, add_data_edge
from graph_ir.op_metrics import metrics

__all__ = ["random_dag"]

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
