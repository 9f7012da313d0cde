"""DSP cost model: vector lanes that excel at FFTs, filters and elementwise work and are weak
at large matrix products; operands stream through the local SRAM."""

from __future__ import annotations

from collections.abc import Mapping

from chips.schema import Chip, DspUnit, Dtype
from cost_models.base import (
    STREAM_CHUNK_BYTES,
    OpCost,
    UnitModel,
    efficiency,
    finish,
    register_model,
    spill_plan,
)
from graph_ir.categories import Category
from graph_ir.ir import Op

__all__ = ["DEFAULT_EFFICIENCY", "DspModel"]

#: Fraction of the lanes' peak reached per op category.
DEFAULT_EFFICIENCY: Mapping[Category, float] = {
    "signal": 0.8, "elementwise": 0.7, "activation": 0.6, "pool": 0.5, "reduce": 0.6,
    "norm": 0.5, "softmax": 0.5, "conv": 0.2, "matmul": 0.15, "rnn": 0.15, "data": 1.0,
    "unknown": 1.0,
}  # fmt: skip


class DspModel(UnitModel[DspUnit]):
    """One roofline for every op: work on the vector lanes, operands streamed through SRAM."""

    unit_class = DspUnit
    #: None: a DSP runs each op as a kernel of its own.
    default_fuses = frozenset()
    default_efficiency = DEFAULT_EFFICIENCY

    def roofline(
        self, op: Op, unit: DspUnit, chip: Chip, dtype: Dtype, in_b: int, w_b: int, out_b: int
    ) -> OpCost:
        eff = efficiency(unit, op, DEFAULT_EFFICIENCY)
        peak = unit.peak_flops_per_ns(dtype)
        compute_ns = op.flops / (peak * eff) if op.flops else 0.0
        extra, tiles = spill_plan(in_b, w_b, out_b, unit.sram_kib * 1024, STREAM_CHUNK_BYTES)
        note = f"{dtype}" + (f", {tiles} SRAM tiles" if tiles > 1 else "")
        return finish(op, unit, chip, dtype, compute_ns, 0, 0.0, in_b + w_b + extra, out_b, note, tiles)


register_model(DspModel())
