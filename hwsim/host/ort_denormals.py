"""Softmaxes whose constant mask makes onnxruntime's exp compute denormals.

A causal mask adds a large negative constant (-1e4, -1e9, -inf) above the diagonal before a
Softmax. After the row's maximum is subtracted those scores lie far below ``ln(FLT_MIN)`` (about
-87.3), and x86 without flush-to-zero computes the exp of each one slowly (onnxruntime leaves
denormals on unless ``session.set_denormal_as_zero``): on the CI Xeon, onnxruntime 1.32, one
thread, Add + Softmax over 4 x 128 x 128 took 32.6 us with a mask of 0, -30 or -80 and 180-185 us
with -1e4, -1e9 or -inf (352 us with -100, whose results are denormals themselves; not priced
apart). :func:`denormal_softmaxes` counts, from the model's constants, the elements each Softmax's
mask puts there and marks the Softmax with :data:`~cost_models.cpu.SOFTMAX_DENORMAL_ATTR`; the
CPU model prices them at the unit's ``softmax_denormal_ns``
(:func:`~cost_models.cpu.denormal_softmax_ns`). A mask fed as a graph input is data: not priced.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import onnx
from onnx import numpy_helper

from cost_models.cpu import SOFTMAX_DENORMAL_ATTR
from graph_ir.ir import ModelGraph, Op

__all__ = ["DENORMAL_BELOW", "constant_values", "denormal_softmaxes", "masked_elements"]

#: A mask constant below this (``ln(FLT_MIN)``) puts the score it is added to where exp gives a
#: denormal (or the zero below them, which the kernel reaches through denormals alike).
DENORMAL_BELOW = math.log(float(np.finfo(np.float32).tiny))
#: How many producers a walk from a Softmax's input back to its mask goes through at most.
_MAX_HOPS = 4


def constant_values(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The values of ``model``'s initializers and Constant nodes whose data is in the file (external
    data left out), by tensor name."""
    out: dict[str, np.ndarray] = {}
    g = model.graph
    for init in g.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            out[init.name] = numpy_helper.to_array(init)
    for node in g.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value":
                    out[node.output[0]] = numpy_helper.to_array(a.t)
    return out


def masked_elements(mask: np.ndarray, shape: tuple[int, ...]) -> int:
    """How many elements of a tensor of ``shape`` a ``mask`` that broadcasts to it puts below
    :data:`DENORMAL_BELOW` (0 when it does not broadcast).

    >>> masked_elements(np.triu(np.full((4, 4), -1e4, np.float32), 1), (2, 4, 4))  # 6 of 16, twice
    12
    >>> masked_elements(np.array(-30.0), (2, 4, 4))
    0
    """
    try:
        np.broadcast_shapes(mask.shape, shape)
    except ValueError:
        return 0
    below = int(np.count_nonzero(np.asarray(mask, np.float64) < DENORMAL_BELOW))
    total = math.prod(shape)
    return below * total // max(1, mask.size) if mask.size <= total else 0


def _scale_of(op: Op, consts: dict[str, np.ndarray]) -> tuple[float, str] | None:
    """``(factor, other input)`` of a Div/Mul by a constant scalar, else None."""
    if op.op_type not in ("Div", "Mul") or len(op.inputs) != 2:
        return None
    for i, t in enumerate(op.inputs):
        v = consts.get(t.name)
        if v is not None and v.size == 1 and (op.op_type == "Mul" or i == 1):
            s = float(v.reshape(-1)[0])
            if s == 0.0:
                return None
            return (s if op.op_type == "Mul" else 1.0 / s), op.inputs[1 - i].name
    return None


def _mask_of(op: Op, consts: dict[str, np.ndarray]) -> np.ndarray | None:
    """The additive mask an Add with a constant input, or a Where with a constant condition and a
    constant fill, applies to the scores (the fill where the condition does not pick the scores)."""
    if op.op_type == "Add" and len(op.inputs) == 2:
        for t in op.inputs:
            if t.name in consts:
                return consts[t.name].astype(np.float64)
    if op.op_type == "Where" and len(op.inputs) == 3 and op.inputs[0].name in consts:
        cond = consts[op.inputs[0].name].astype(bool)
        a, b = (consts.get(t.name) for t in op.inputs[1:])
        if b is not None and a is None:  # Where(cond, scores, fill): the fill where cond is false
            return np.where(cond, 0.0, b.astype(np.float64))
        if a is not None and b is None:
            return np.where(cond, a.astype(np.float64), 0.0)
    return None


def denormal_softmaxes(graph: ModelGraph, model: onnx.ModelProto) -> dict[str, Op]:
    """The Softmaxes of ``graph`` whose input a constant mask puts partly below
    :data:`DENORMAL_BELOW`, marked with :data:`~cost_models.cpu.SOFTMAX_DENORMAL_ATTR` (the count).

    The mask is found by walking back from the Softmax's input through at most four producers:
    Div/Mul by a constant scalar (scaling the mask added before them), then an Add of a constant or
    a Where with a constant condition and fill. ``model`` is the ONNX file ``graph`` was read from
    (for the constants' values).
    """
    if not any(op.op_type == "Softmax" for op in graph.ops()):
        return {}
    consts = constant_values(model)
    out: dict[str, Op] = {}
    for op in graph.ops():
        if op.op_type != "Softmax" or not op.inputs:
            continue
        scale, name = 1.0, op.inputs[0].name
        for _ in range(_MAX_HOPS):
            src = graph.producer.get(name)
            if src is None:
                break
            p = graph.op(src)
            if (mask := _mask_of(p, consts)) is not None:
                with np.errstate(invalid="ignore", over="ignore"):
                    count = masked_elements(mask * scale, op.inputs[0].shape)
                if count:
                    out[op.name] = replace(op, attrs={**op.attrs, SOFTMAX_DENORMAL_ATTR: count})
                break
            if (hop := _scale_of(p, consts)) is None:
                break
            scale *= hop[0]
            name = hop[1]
    return out
