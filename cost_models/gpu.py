"""GPU cost model: one op uses the whole GPU; waves of threads over the compute units.

Each output element is one thread; the last partial wave leaves compute units idle (tail
effect), and small ops cannot fill the GPU at all. Every op pays the launch overhead.
Working sets beyond the L2 re-read through DRAM.
"""

from __future__ import annotations

import math

from chips.schema import Chip, Dtype, GpuUnit, Unit
from cost_models.base import (
    STREAM_CHUNK_BYTES,
    OpCost,
    UnitModel,
    efficiency,
    finish,
    register_model,
    spill_plan,
)
from graph_ir.ir import Op

__all__ = ["DEFAULT_EFFICIENCY", "GpuModel", "wave_utilization"]

DEFAULT_EFFICIENCY = {
    "conv": 0.6, "matmul": 0.7, "rnn": 0.25, "elementwise": 0.5, "activation": 0.5,
    "pool": 0.4, "reduce": 0.3, "norm": 0.3, "softmax": 0.3, "signal": 0.35, "data": 1.0,
    "unknown": 1.0,
}  # fmt: skip


def wave_utilization(threads: int, compute_units: int, threads_per_cu: int) -> float:
    """Fraction of thread slots busy over all waves, in (0, 1].

    >>> wave_utilization(4096, 4, 1024)
    1.0
    >>> wave_utilization(5000, 4, 1024)
    0.6103515625
    """
    slots = compute_units * threads_per_cu
    waves = max(1, math.ceil(threads / slots))
    return max(threads, 1) / (waves * slots)


class GpuModel(UnitModel):
    kind = "gpu"

    def cost(
        self, op: Op, unit: Unit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        assert isinstance(unit, GpuUnit)
        threads = sum(t.elements for t in op.outputs)
        util = wave_utilization(threads, unit.compute_units, unit.threads_per_cu)
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY, 0.3) * util
        peak = unit.compute_units * unit.flops_per_cycle[dtype] * unit.clock_mhz * 1e-3  # FLOP/ns
        compute_ns = op.flops / (peak * eff) if op.flops else 0.0
        extra, tiles = spill_plan(in_b, w_b, out_b, unit.l2_kib * 1024, STREAM_CHUNK_BYTES)
        note = f"{dtype}, waves {util:.0%} full" + (f", {tiles} L2 tiles" if tiles > 1 else "")
        return finish(op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)


register_model(GpuModel())
