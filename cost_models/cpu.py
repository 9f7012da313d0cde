"""CPU cluster cost model: one op on one core, SIMD peak per dtype, cache-level bandwidth.

The working set (inputs + weights + outputs) picks the cache level that feeds the op; weights
always stream from DRAM once; a working set beyond the last-level cache re-reads through DRAM
with the tiling of :func:`~cost_models.base.tiling_extra_bytes`.
"""

from __future__ import annotations

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

__all__ = ["DEFAULT_EFFICIENCY", "CpuModel"]

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
        flops = op.flops
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY, 0.3)
        if op.category == "conv" and _is_depthwise(op):
            eff *= DEPTHWISE_FACTOR
        eff *= flops / (flops + HALF_EFFICIENCY_FLOPS) if flops else 1.0
        peak = unit.flops_per_cycle[dtype] * unit.clock_mhz * 1e-3  # FLOP/ns, one core
        compute_ns = flops / (peak * eff) if flops else 0.0

        act = in_b + out_b
        working = act + w_b
        levels = [(unit.l1_kib, unit.l1_bandwidth_gbps), (unit.l2_kib, unit.l2_bandwidth_gbps)]
        if unit.l3_kib:
            levels.append((unit.l3_kib, unit.l3_bandwidth_gbps))
        for kib, gbps in levels:
            if working <= kib * 1024:
                return finish(op, unit, chip, dtype, compute_ns, act, gbps, w_b, 0, f"{dtype}, fits {kib:g} KiB")
        llc = levels[-1][0] * 1024
        extra, tiles = tiling_extra_bytes(in_b, w_b, out_b, llc)
        note = f"{dtype}, spills LLC" + (f", {tiles} tiles" if tiles > 1 else "")
        return finish(op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)


def _is_depthwise(op: Op) -> bool:
    group = op.attrs.get("group", 1)
    return isinstance(group, int) and group > 1 and len(op.weights) > 0 and op.weights[0].shape[1:2] == (1,)


register_model(CpuModel())
