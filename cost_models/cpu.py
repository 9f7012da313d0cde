"""CPU cluster cost model: one op on one core, SIMD peak per dtype, cache-level bandwidth.

The working set (inputs + weights + outputs) picks the cache level that feeds the op; weights
always stream from DRAM once; a working set beyond the last-level cache re-reads through DRAM
with the tiling of :func:`~cost_models.base.tiling_extra_bytes`.

Efficiency: without a per-op-type entry in the unit's ``efficiency`` the compute roof is scaled
by a default per op category (times a small-kernel factor, and a depthwise factor for
depthwise convolutions) and memory moves at the full level bandwidth. A unit ``efficiency``
entry (what ``hwsim validate --calibrate`` writes) is the measured fraction of the *whole*
roofline reached by that op type: it scales the compute roof (with the same small-kernel and
depthwise factors) and the memory roof alike, so that memory-bound ops calibrate too.
"""

from __future__ import annotations

from dataclasses import replace

from chips.schema import Chip, CpuUnit, Dtype, Unit
from cost_models.base import (
    OpCost,
    UnitModel,
    efficiency,
    finish,
    register_model,
    tiling_extra_bytes,
)
from graph_ir.ir import Op

__all__ = ["DEFAULT_EFFICIENCY", "DEPTHWISE_FACTOR", "HALF_EFFICIENCY_FLOPS", "CpuModel", "shape_factor"]

#: Fraction of SIMD peak reached per op category (hand-written NEON/AVX kernels, one thread).
DEFAULT_EFFICIENCY = {
    "conv": 0.55, "matmul": 0.65, "rnn": 0.45, "elementwise": 0.5, "activation": 0.35,
    "pool": 0.4, "reduce": 0.4, "norm": 0.3, "softmax": 0.3, "signal": 0.3, "data": 1.0,
    "unknown": 1.0,
}  # fmt: skip
#: Work (FLOPs) at which a kernel reaches half its efficiency: small kernels pay set-up.
HALF_EFFICIENCY_FLOPS = 20_000.0
#: Depthwise convolutions reuse little data per load: this factor scales conv efficiency.
DEPTHWISE_FACTOR = 0.35


class CpuModel(UnitModel):
    kind = "cpu"

    def cost(
        self, op: Op, unit: Unit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        assert isinstance(unit, CpuUnit)
        if op.op_type == "Gather":  # an embedding lookup reads the rows it gathers, not the table
            w_b = min(w_b, out_b)
        flops = op.flops
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY, 0.3) * shape_factor(op)
        peak = unit.flops_per_cycle[dtype] * unit.clock_mhz * 1e-3  # FLOP/ns, one core
        compute_ns = flops / (peak * eff) if flops else 0.0

        act = in_b + out_b
        working = act + w_b
        levels = [(unit.l1_kib, unit.l1_bandwidth_gbps), (unit.l2_kib, unit.l2_bandwidth_gbps)]
        if unit.l3_kib:
            levels.append((unit.l3_kib, unit.l3_bandwidth_gbps))
        for kib, gbps in levels:
            if working <= kib * 1024:
                cost = finish(op, unit, chip, dtype, compute_ns, act, gbps, w_b, 0, f"{dtype}, fits {kib:g} KiB")
                break
        else:
            llc = levels[-1][0] * 1024
            extra, tiles = tiling_extra_bytes(in_b, w_b, out_b, llc)
            note = f"{dtype}, spills LLC" + (f", {tiles} tiles" if tiles > 1 else "")
            cost = finish(op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)
        calibrated = unit.efficiency.get(op.op_type)
        if calibrated is None or calibrated >= 1.0:
            return cost
        memory_ns = cost.memory_ns / calibrated
        extra_pj = unit.active_w * (max(compute_ns, memory_ns) - max(compute_ns, cost.memory_ns)) * 1e3
        return replace(cost, memory_ns=memory_ns, energy_pj=cost.energy_pj + extra_pj,
                       note=f"{cost.note}, calibrated {calibrated:.3g}")  # fmt: skip


def shape_factor(op: Op) -> float:
    """Efficiency lost to the op's shape: small kernels pay set-up (half efficiency at
    :data:`HALF_EFFICIENCY_FLOPS`), depthwise convolutions reuse little data per load.

    >>> from graph_ir.ir import Op
    >>> shape_factor(Op("n", "Relu", "activation", (), (), flops=20_000))
    0.5
    """
    factor = op.flops / (op.flops + HALF_EFFICIENCY_FLOPS) if op.flops else 1.0
    if op.category == "conv" and _is_depthwise(op):
        factor *= DEPTHWISE_FACTOR
    return factor


def _is_depthwise(op: Op) -> bool:
    group = op.attrs.get("group", 1)
    return isinstance(group, int) and group > 1 and len(op.weights) > 0 and op.weights[0].shape[1:2] == (1,)


register_model(CpuModel())
