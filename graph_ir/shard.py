"""Shards of an op: one of ``k`` identical slices of its output rows (the height of a 4-D
(NCHW) output, the rows ``M`` of a matrix product, the outermost non-trivial axis otherwise),
with the inputs each slice reads. The engine splits ops over cores with it
(:mod:`hwsim.sim.splitting`); a mapping's ``cores`` knob is legal only where it applies
(:mod:`cost_models.mapping`).

>>> from graph_ir.ir import Op, Tensor
>>> x = Tensor("x", (1, 8, 30, 30), "float32")
>>> w = Tensor("w", (16, 8, 3, 3), "float32", is_weight=True)
>>> y = Tensor("y", (1, 16, 28, 28), "float32")
>>> conv = Op("c", "Conv", "conv", (x, w), (y,), {}, 16 * 8 * 9 * 28 * 28, 2 * 16 * 8 * 9 * 28 * 28)
>>> s = shard_op(conv, 3)
>>> s.outputs[0].shape, s.inputs[0].shape, s.macs * 3 >= conv.macs
((1, 16, 10, 28), (1, 8, 12, 30), True)
"""

from __future__ import annotations

import math
from dataclasses import replace

from graph_ir.ir import Op, Tensor
from graph_ir.op_metrics import metrics

__all__ = ["reads_own_rows", "shard_op", "split_axis"]

#: Op types that compute each output row from the same row of their inputs alone (elementwise,
#: activations, per-channel affines, a copy along another axis), when the shapes line up.
_ROW_WISE_TYPES = frozenset({"BatchNormalization", "Concat", "Identity"})


def split_axis(op: Op) -> int | None:
    """The output axis an op's shards divide (None: nothing to divide)."""
    if not op.outputs or not op.outputs[0].shape:
        return None
    shape = op.outputs[0].shape
    if op.category == "conv" or (len(shape) == 4 and op.category != "matmul"):
        return 2 if len(shape) >= 3 and shape[2] > 1 else None
    if op.category == "matmul":
        if op.op_type == "Gemm":
            return 0 if shape[0] > 1 else None
        return len(shape) - 2 if len(shape) >= 2 and shape[-2] > 1 else None
    for axis, d in enumerate(shape):
        if d > 1:
            return axis
    return None


def _slice(t: Tensor, axis: int, size: int) -> Tensor:
    shape = list(t.shape)
    shape[axis] = size
    return replace(t, shape=tuple(shape))


def shard_op(op: Op, k: int) -> Op | None:
    """The largest of the ``k`` shards of ``op`` (None when it cannot be split ``k`` ways).

    The output slice along :func:`split_axis` is ``ceil(n / k)`` rows. Activation inputs that
    share the output's extent along that axis are sliced the same way; a convolution's input
    gets ``ceil(H_in / k)`` rows plus the kernel's halo (``kh - 1``); weights stay whole.
    """
    if k <= 1:
        return op
    axis = split_axis(op)
    if axis is None:
        return None
    full = op.outputs[0].shape[axis]
    if full < k:
        return None
    rows = math.ceil(full / k)
    outs = tuple(
        _slice(t, axis, rows) if len(t.shape) > axis and t.shape[axis] == full else t
        for t in op.outputs
    )
    ins = []
    for t in op.inputs:
        if t.is_weight or len(t.shape) <= axis:
            ins.append(t)
        elif op.category == "conv" and t is op.inputs[0]:
            kh = op.weights[0].shape[2] if op.weights and len(op.weights[0].shape) > 2 else 1
            ins.append(_slice(t, axis, min(t.shape[axis], math.ceil(t.shape[axis] / k) + kh - 1)))
        elif op.category == "matmul" and t is not op.inputs[0]:
            ins.append(t)  # B of A.B: every shard needs all of it
        elif t.shape[axis] == full:
            ins.append(_slice(t, axis, rows))
        else:
            ins.append(t)
    m = metrics(op.op_type, ins, outs, op.attrs)
    return replace(op, inputs=tuple(ins), outputs=outs, macs=m.macs, flops=m.flops)


def reads_own_rows(op: Op) -> bool:
    """Whether each of ``op``'s shards reads, of every activation input, only the rows of its own
    output slice: so an input split the same ``k`` ways by the op before it is ready on the
    shard's own core, and nothing crosses cores between the two.

    True for an elementwise op or an activation, a BatchNormalization, a Concat along another
    axis (each input as tall as the output along :func:`split_axis`), and a 1x1 convolution of
    stride 1 without padding in height. False where a shard needs rows another shard produced:
    a kernel taller than one row (its halo), a stride or padding in height, a Concat along the
    split axis, an input broadcast along it, the ``B`` of a matrix product, any other op type
    (a pool, a reshape, a transpose, ...), and an op that does not split at all.

    >>> from graph_ir.ir import Op, Tensor
    >>> x, y = Tensor("x", (1, 8, 20, 20), "int8"), Tensor("y", (1, 16, 20, 20), "int8")
    >>> def conv(k):
    ...     w = Tensor("w", (16, 8, k, k), "int8", is_weight=True)
    ...     return Op("c", "Conv", "conv", (x, w), (y,), {"pads": [k // 2] * 4})
    >>> reads_own_rows(conv(1)), reads_own_rows(conv(3))
    (True, False)
    """
    axis = split_axis(op)
    if axis is None:
        return False
    shape = op.outputs[0].shape
    if op.op_type == "Conv":
        kh = op.weights[0].shape[2] if op.weights and len(op.weights[0].shape) > 2 else 1
        strides = op.attrs.get("strides") or (1,)
        if kh != 1 or not isinstance(strides, (list, tuple)) or strides[0] != 1:
            return False
        x = op.inputs[0]
        return not x.is_weight and len(x.shape) == len(shape) and x.shape[axis] == shape[axis]
    if op.category not in ("elementwise", "activation") and op.op_type not in _ROW_WISE_TYPES:
        return False
    return all(len(t.shape) == len(shape) and t.shape[axis] == shape[axis] for t in op.activations)
