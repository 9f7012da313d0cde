"""NPU cost model: convolutions and matrix products on a MAC array of ``rows x cols``.

A conv or matmul is lowered to a GEMM ``(M x K) . (K x N)`` the way a weight-stationary
array sees it: K (reduction) folds onto the rows, N (output channels) onto the columns, and M
(output pixels / tokens) streams through. Every fold pays the array's fill and drain, and a
dimension that does not fill the array leaves PEs idle (tile quantization). Other ops run on
the per-core vector unit. Operands stream through the core's SRAM; a working set that does
not fit is tiled and re-read from DRAM.
"""

from __future__ import annotations

import math

from chips.schema import Chip, Dtype, NpuUnit, Unit
from cost_models.base import (
    OpCost,
    UnitModel,
    efficiency,
    finish,
    register_model,
    tiling_extra_bytes,
)
from graph_ir.ir import Op

__all__ = ["NpuModel", "array_cycles", "gemm_of"]

#: Fraction of the vector unit's peak per category (MAC-array ops are set by the geometry).
DEFAULT_EFFICIENCY = {
    "elementwise": 0.8, "activation": 0.8, "pool": 0.7, "reduce": 0.5, "norm": 0.4,
    "softmax": 0.4, "signal": 0.2, "data": 1.0, "unknown": 1.0, "rnn": 0.3,
}  # fmt: skip



def gemm_of(op: Op) -> tuple[int, int, int, int] | None:
    """The GEMM an op lowers to, or None for ops that are not conv/matmul.

    Depthwise convs map channels onto the columns (N = channels, K = kernel window).

    >>> from graph_ir.ir import Tensor
    >>> y = Tensor("y", (1, 128, 64), "float32")
    >>> a = Tensor("a", (1, 128, 768), "float32")
    >>> b = Tensor("b", (768, 64), "float32", is_weight=True)
    >>> gemm_of(Op("m", "MatMul", "matmul", (a, b), (y,)))
    (1, 128, 64, 768)
    """
    if op.category == "matmul" and op.outputs and len(op.inputs) >= 2:
        out = op.outputs[0].shape
        if not out:
            return None
        n = out[-1]
        m = out[-2] if len(out) >= 2 else 1
        batch = math.prod(out[:-2]) if len(out) > 2 else 1
        a = op.inputs[0].shape
        if op.op_type == "Gemm":
            k = a[0] if op.attrs.get("transA", 0) else a[-1]
        elif op.op_type in ("MatMul", "MatMulInteger", "QLinearMatMul"):
            k = a[-1] if a else 1
        else:  # Einsum and other contractions: K from the MAC count
            k = op.macs // max(1, batch * m * n)
        return batch, m, n, max(k, 1)
    if op.category == "conv" and op.weights:
        w = op.weights[0].shape
        out = op.outputs[0].shape
        group = op.attrs.get("group", 1)
        group = group if isinstance(group, int) and group > 0 else 1
        m = out[0] * math.prod(out[2:])
        kernel = math.prod(w[2:])
        if op.op_type == "ConvTranspose":
            m = op.inputs[0].shape[0] * math.prod(op.inputs[0].shape[2:])
            return group, m, w[1], w[0] // group * kernel
        if group > 1 and w[1] == 1:  # depthwise: channels across the columns
            return 1, m, w[0], kernel
        return group, m, w[0] // group, w[1] * kernel
    return None


def array_cycles(gemm: tuple[int, int, int, int], rows: int, cols: int) -> int:
    """Weight-stationary cycles: one fold per ``rows x cols`` weight tile, each streaming M
    rows of input plus ``rows + cols - 1`` cycles of fill and drain.

    >>> array_cycles((1, 100, 32, 32), 32, 32)
    163
    >>> array_cycles((1, 100, 33, 32), 32, 32)  # one extra column: a second fold
    326
    """
    batch, m, n, k = gemm
    folds = math.ceil(k / rows) * math.ceil(n / cols)
    return batch * folds * (m + rows + cols - 1)


class NpuModel(UnitModel):
    kind = "npu"

    def cost(
        self, op: Op, unit: Unit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        assert isinstance(unit, NpuUnit)
        clock_ghz = unit.clock_mhz * 1e-3
        gemm = gemm_of(op)
        if gemm is not None:
            cycles = array_cycles(gemm, unit.mac_rows, unit.mac_cols)
            rate = unit.macs_per_pe_per_cycle[dtype] * unit.efficiency.get(op.op_type, 1.0)
            compute_ns = cycles / rate / clock_ghz
            util = op.macs / (cycles * unit.mac_rows * unit.mac_cols) if cycles else 0.0
            note = f"{dtype}, array {util:.0%} busy (B,M,N,K={gemm})"
        else:
            eff = efficiency(unit, op, DEFAULT_EFFICIENCY, 0.5)
            work = op.flops if op.category != "rnn" else op.macs * 2
            lanes = unit.vector_ops_per_cycle if op.category != "rnn" else unit.mac_rows * unit.mac_cols
            compute_ns = work / (lanes * clock_ghz * eff) if work else 0.0
            note = f"{dtype}, vector unit"
        extra, tiles = tiling_extra_bytes(in_b, w_b, out_b, unit.sram_kib * 1024)
        if tiles > 1:
            note += f", {tiles} SRAM tiles (+{extra} B)"
        return finish(op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)


register_model(NpuModel())
