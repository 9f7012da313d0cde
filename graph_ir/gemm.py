"""GEMM lowering: the one place that says which ops are matrix products and what their
``M``, ``N`` and ``K`` are.

MAC arrays and tensor-core kernels run convolutions and matrix products as GEMMs;
:func:`gemm_of` lowers an op, :func:`matmul_k` gives a matrix product's reduction length
(also what :mod:`graph_ir.op_metrics` counts MACs with), :func:`conv_group` a conv's groups.

>>> from graph_ir.ir import Op, Tensor
>>> x = Tensor("x", (1, 16, 32, 32), "float32")
>>> w = Tensor("w", (64, 16, 3, 3), "float32", is_weight=True)
>>> gemm_of(Op("c", "Conv", "conv", (x, w), (Tensor("o", (1, 64, 32, 32), "float32"),)))
Gemm(batch=1, m=1024, n=64, k=144)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from graph_ir.ir import Op

__all__ = ["CONV_OP_TYPES", "GEMM_OP_TYPES", "MATMUL_OP_TYPES", "Gemm", "conv_group", "gemm_of", "matmul_k"]

#: ONNX op types of category ``conv`` (:mod:`graph_ir.op_metrics`).
CONV_OP_TYPES: tuple[str, ...] = ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose")
#: ONNX op types of category ``matmul`` (:mod:`graph_ir.op_metrics`).
MATMUL_OP_TYPES: tuple[str, ...] = ("Gemm", "MatMul", "MatMulInteger", "QLinearMatMul", "Einsum")
#: Every op type that may lower to a GEMM: the GEMM family of each cost model's handlers.
GEMM_OP_TYPES: tuple[str, ...] = CONV_OP_TYPES + MATMUL_OP_TYPES


class Gemm(NamedTuple):
    """``batch`` independent ``M x N x K`` GEMMs (batch: conv groups or the matmul's batch)."""

    batch: int
    m: int
    n: int
    k: int


def matmul_k(op_type: str, a_shape: Sequence[int], attrs: Mapping[str, object]) -> int | None:
    """The reduction length ``K`` of a matrix product with first operand of shape ``a_shape``:
    ``Gemm`` reads ``transA``, ``MatMul`` and its quantized forms reduce over A's last axis;
    None for other op types (an ``Einsum``'s K follows from its equation, not from A).

    >>> matmul_k("Gemm", (768, 128), {"transA": 1}), matmul_k("MatMul", (1, 128, 768), {})
    (768, 768)
    """
    if op_type == "Gemm":
        return a_shape[0] if attrs.get("transA", 0) else a_shape[-1]
    if op_type in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        return a_shape[-1] if a_shape else 1
    return None


def gemm_of(op: Op) -> Gemm | None:
    """The GEMM a conv or matmul lowers to (None for other ops), as MAC arrays and tensor-core
    kernels see it: a conv is im2col (M = output pixels, N = output channels per group,
    K = input channels per group x kernel window); a depthwise conv puts its channels across N
    and reduces over the kernel window; a transposed conv scatters (M = input pixels,
    N = output channels per group x kernel window, K = input channels per group, then col2im).

    >>> from graph_ir.ir import Tensor
    >>> y = Tensor("y", (1, 128, 64), "float32")
    >>> a = Tensor("a", (1, 128, 768), "float32")
    >>> b = Tensor("b", (768, 64), "float32", is_weight=True)
    >>> gemm_of(Op("m", "MatMul", "matmul", (a, b), (y,)))
    Gemm(batch=1, m=128, n=64, k=768)
    """
    if op.category == "matmul" and op.outputs and len(op.inputs) >= 2:
        return _matmul_gemm(op)
    if op.category == "conv" and op.weights and op.outputs:
        return _conv_gemm(op)
    return None


def _matmul_gemm(op: Op) -> Gemm | None:
    out = op.outputs[0].shape
    if not out:
        return None
    n = out[-1]
    m = out[-2] if len(out) >= 2 else 1
    batch = math.prod(out[:-2]) if len(out) > 2 else 1
    k = matmul_k(op.op_type, op.inputs[0].shape, op.attrs)
    if k is None:  # Einsum and other contractions: K from the MAC count
        k = op.macs // max(1, batch * m * n)
    return Gemm(max(batch, 1), max(m, 1), max(n, 1), max(k, 1))


def _conv_gemm(op: Op) -> Gemm | None:
    w, out = op.weights[0].shape, op.outputs[0].shape
    if len(w) < 2 or len(out) < 2:
        return None
    group = conv_group(op)
    kernel = math.prod(w[2:])
    if op.op_type == "ConvTranspose":
        x = op.inputs[0].shape
        return Gemm(group, x[0] * math.prod(x[2:]), w[1] * kernel, max(1, w[0] // group))
    m = out[0] * math.prod(out[2:])
    if group > 1 and w[1] == 1:  # depthwise: channels across the columns
        return Gemm(1, m, w[0], kernel)
    return Gemm(group, m, w[0] // group, w[1] * kernel)


def conv_group(op: Op) -> int:
    """A conv's ``group`` attribute (1 when absent or malformed)."""
    group = op.attrs.get("group", 1)
    return group if isinstance(group, int) and group > 0 else 1
