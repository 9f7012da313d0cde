"""A QDQ model as an accelerator toolchain deploys it: a float graph and the dtype of each op.

A QDQ model (``onnxruntime.quantization.quantize_static``, ``hwsim quantize``, a QAT export)
marks what runs in integers with ``QuantizeLinear`` / ``DequantizeLinear`` nodes around float ops.
TensorRT's explicit quantization, RKNN's toolkit and onnxruntime's QDQ selectors all compile them
away: the weights' ``DequantizeLinear`` is folded into the int8 weights the kernel reads, and a
``QuantizeLinear`` -> ``DequantizeLinear`` pair between two ops becomes an int8 tensor that one
writes and the other reads. No kernel runs for them. :func:`fold_qdq` does the same to a
:class:`~graph_ir.ir.ModelGraph`: the folded nodes leave the graph, their readers read the float
tensor (or the weight) before them, and each op whose float inputs all came through a
``DequantizeLinear`` is bound to that integer dtype (the weights' where it has quantized weights),
per-channel where its weights' scale has more than one value. What cannot be folded stays as
an op: a ``QuantizeLinear`` at a graph output, a ``DequantizeLinear`` of an integer graph input.

The result is a quantization binding as :mod:`graph_ir.quant_binding` resolves one: the
simulator inserts the conversions where a bound op meets a float one.

>>> from graph_ir.ir import ModelGraph, Op, Tensor
>>> import networkx as nx
>>> x = Tensor("x", (1, 8), "float32"); q = Tensor("q", (1, 8), "int8"); d = Tensor("d", (1, 8), "float32")
>>> wq = Tensor("wq", (8, 8), "int8", is_weight=True); s = Tensor("s", (8,), "float32", is_weight=True)
>>> w = Tensor("w", (8, 8), "float32"); y = Tensor("y", (1, 8), "float32")
>>> ops = [Op("Q", "QuantizeLinear", "elementwise", (x, s), (q,)), Op("D", "DequantizeLinear", "elementwise", (q, s), (d,)),
...        Op("DW", "DequantizeLinear", "elementwise", (wq, s), (w,)), Op("mm", "MatMul", "matmul", (d, w), (y,), {}, 64, 128)]
>>> g = nx.DiGraph(); _ = [g.add_node(o.name, op=o) for o in ops]
>>> g.add_edges_from([("Q", "D"), ("D", "mm"), ("DW", "mm")])
>>> m = ModelGraph("m", g, (x,), (y,), {"q": "Q", "d": "D", "w": "DW", "y": "mm"}, ("Q", "D", "DW", "mm"))
>>> f = fold_qdq(m)
>>> f.graph.order, dict(f.dtypes), dict(f.granularity), f.removed
(('mm',), {'mm': 'int8'}, {'mm': 'per-channel'}, ('D', 'DW', 'Q'))
>>> [(t.name, t.is_weight) for t in f.graph.op("mm").inputs]
[('x', False), ('w', True)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from graph_ir.ir import FLOAT_DTYPES, ModelGraph, Op, Tensor, add_data_edge

__all__ = ["QdqFold", "fold_qdq", "has_qdq"]

_Q, _DQ = "QuantizeLinear", "DequantizeLinear"
#: The integer element types of a ``QuantizeLinear`` output -> the deployment dtype it stands for;
#: ``int32`` is a bias's (scaled by the input's and the weights' scales): folded, no dtype of its own.
_INTEGER_DTYPES: Mapping[str, str] = {"int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4", "int32": ""}


@dataclass(frozen=True, slots=True)
class QdqFold:
    """A QDQ model folded: the float ``graph`` without the folded nodes, the integer dtype of each
    quantized op (``dtypes``, by op name) and its weights' granularity (``granularity``:
    ``per-channel`` or ``per-tensor``), and the names of the nodes folded away (``removed``)."""

    graph: ModelGraph
    dtypes: Mapping[str, str]
    granularity: Mapping[str, str]
    removed: tuple[str, ...]


def has_qdq(graph: ModelGraph) -> bool:
    """Whether ``graph`` has a ``QuantizeLinear`` or ``DequantizeLinear`` node."""
    return any(op.op_type in (_Q, _DQ) for op in graph.ops())


def _integer(t: Tensor) -> str | None:
    """The deployment dtype an integer tensor stands for ("" for an int32 bias), else None."""
    return _INTEGER_DTYPES.get(t.dtype)


def _folded_sources(graph: ModelGraph) -> tuple[dict[str, tuple[Tensor, str, bool]], set[str]]:
    """What a folded node's output stands for: output tensor name -> (the tensor its readers read
    instead, the integer dtype it carried, whether that is a weight with a per-channel scale); and
    the folded nodes."""
    readers: dict[str, list[Op]] = {}
    for op in graph.ops():
        for t in op.inputs:
            readers.setdefault(t.name, []).append(op)
    outputs = {t.name for t in graph.outputs}
    stands: dict[str, tuple[Tensor, str, bool]] = {}
    removed: set[str] = set()
    for op in graph.ops():
        if op.op_type == _DQ and op.inputs and op.inputs[0].is_weight and _integer(op.inputs[0]) is not None and op.outputs:
            out = op.outputs[0]
            if out.name in outputs:
                continue
            per_channel = len(op.inputs) > 1 and math.prod(op.inputs[1].shape) > 1
            stands[out.name] = (Tensor(out.name, out.shape, out.dtype, True), _integer(op.inputs[0]) or "", per_channel)
            removed.add(op.name)
        elif op.op_type == _Q and op.outputs and _integer(op.outputs[0]) and op.inputs[0].dtype in FLOAT_DTYPES:
            q = op.outputs[0]
            after = readers.get(q.name, [])
            if q.name in outputs or not after or any(r.op_type != _DQ for r in after):
                continue
            removed.add(op.name)
            # a DequantizeLinear kept (it makes a graph output) reads the float tensor, bound to the integer dtype
            stands[q.name] = (op.inputs[0], _integer(q) or "", False)
            for dq in after:
                if dq.outputs[0].name not in outputs:
                    stands[dq.outputs[0].name] = (op.inputs[0], _integer(q) or "", False)
                    removed.add(dq.name)
    return stands, removed


def _bound(op: Op, stands: Mapping[str, tuple[Tensor, str, bool]]) -> tuple[str, str] | None:
    """(dtype, granularity) of an op whose float inputs all came through a folded node; None
    for an op that reads a float tensor no ``DequantizeLinear`` made (its float weights, a bias
    aside, count: a layer the quantizer kept wide reads quantized activations in float), or none
    that one made."""
    weight_dtypes: list[str] = []
    act_dtypes: list[str] = []
    per_channel = False
    for t in op.inputs:
        src = stands.get(t.name)
        if src is None:
            # a float activation no DequantizeLinear made, or float weights (a matrix, not a bias)
            if t.dtype in FLOAT_DTYPES and (not t.is_weight or len(t.shape) >= 2):
                return None
            continue
        tensor, dtype, channel = src
        if dtype:
            (weight_dtypes if tensor.is_weight else act_dtypes).append(dtype)
        per_channel = per_channel or channel
    if not weight_dtypes and not act_dtypes:
        return None
    dtype = "int4" if "int4" in weight_dtypes else (weight_dtypes or act_dtypes)[0]
    return dtype, "per-channel" if per_channel else "per-tensor"


def fold_qdq(graph: ModelGraph) -> QdqFold | None:
    """``graph`` as a toolchain deploys it (see the module docstring); None when it has nothing
    to fold (no ``DequantizeLinear`` of integer weights, no ``QuantizeLinear`` ->
    ``DequantizeLinear`` pair)."""
    if not has_qdq(graph):  # every run asks: a plain model costs one pass over the op types
        return None
    stands, removed = _folded_sources(graph)
    if not removed:
        return None
    g = nx.DiGraph()
    producer: dict[str, str] = {}
    order: list[str] = []
    dtypes: dict[str, str] = {}
    granularity: dict[str, str] = {}
    for name in graph.order:
        if name in removed:
            continue
        op = graph.op(name)
        bound = _bound(op, stands)
        if bound is not None:
            dtypes[name], granularity[name] = bound
        inputs = tuple(stands[t.name][0] if t.name in stands else t for t in op.inputs)
        new = Op(op.name, op.op_type, op.category, inputs, op.outputs, op.attrs, op.macs, op.flops, op.repeat)
        g.add_node(name, op=new)
        order.append(name)
        for t in new.activations:
            if t.name in producer:
                add_data_edge(g, producer[t.name], name, t.name)
        for t in new.outputs:
            producer[t.name] = name
    return QdqFold(
        ModelGraph(graph.name, g, graph.inputs, graph.outputs, producer, tuple(order), graph.assumed, graph.warnings),
        dtypes, granularity, tuple(sorted(removed)),
    )
