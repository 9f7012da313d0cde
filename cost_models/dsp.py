"""DSP cost model: vector lanes that excel at FFTs, filters and elementwise work and are weak
at large matrix products; operands stream through the local SRAM."""

from __future__ import annotations

from chips.schema import Chip, DspUnit, Dtype, Unit
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

__all__ = ["DEFAULT_EFFICIENCY", "DspModel"]

DEFAULT_EFFICIENCY = {
    "signal": 0.8, "elementwise": 0.7, "activation": 0.6, "pool": 0.5, "reduce": 0.6,
    "norm": 0.5, "softmax": 0.5, "conv": 0.2, "matmul": 0.15, "rnn": 0.15, "data": 1.0,
    "unknown": 1.0,
}  # fmt: skip


class DspModel(UnitModel):
    kind = "dsp"

    def cost(
        self, op: Op, unit: Unit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        assert isinstance(unit, DspUnit)
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY, 0.3)
        peak = unit.flops_per_cycle[dtype] * unit.clock_mhz * 1e-3
        compute_ns = op.flops / (peak * eff) if op.flops else 0.0
        extra, tiles = spill_plan(in_b, w_b, out_b, unit.sram_kib * 1024, STREAM_CHUNK_BYTES)
        note = f"{dtype}" + (f", {tiles} SRAM tiles" if tiles > 1 else "")
        return finish(op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)


register_model(DspModel())
