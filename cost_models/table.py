"""The cost of every op on every unit that can run it: the scheduler's input."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chips.schema import Chip, CpuUnit, Unit
from cost_models.base import OpCost, model_for
from cost_models.cpu import last_level_cache_bytes
from graph_ir.ir import ModelGraph, Op

__all__ = ["PRECISIONS", "CostTable", "UnplaceableError", "cost_table", "estimate", "steady_state_unit"]

PRECISIONS = ("int4", "int8", "fp16", "bf16", "fp32", "model")


class UnplaceableError(ValueError):
    """No unit of the chip can run some op (bad input: the chip and model do not fit)."""


@dataclass(frozen=True, slots=True)
class CostTable:
    """``costs[op][unit]`` for every unit able to run ``op`` (at least one per op)."""

    precision: str
    costs: Mapping[str, Mapping[str, OpCost]]

    def eligible(self, op: str) -> tuple[str, ...]:
        return tuple(self.costs[op])

    def best(self, op: str) -> OpCost:
        """The fastest unit's cost for ``op`` (ties: the unit listed first in the chip)."""
        return min(self.costs[op].values(), key=lambda c: c.latency_ns)


def estimate(op: Op, chip: Chip, unit_name: str, precision: str = "int8") -> OpCost | None:
    """Cost of ``op`` on one core of the named unit, or None if it cannot run it."""
    unit = chip.unit(unit_name)
    return model_for(unit.kind).estimate(op, unit, chip, precision)


def steady_state_unit(unit: Unit, graph: ModelGraph, precision: str) -> Unit:
    """``unit`` as it runs ``graph`` in a loop: a CPU whose last-level cache holds all the
    model's weights keeps them there between inferences, so its GEMMs do not stall on weights
    from DRAM (``weight_stream_gbps`` dropped; :func:`cost_models.cpu.weight_stream_ns`)."""
    if not isinstance(unit, CpuUnit) or unit.weight_stream_gbps is None:
        return unit
    weights = sum(op.weight_bytes(None if precision == "model" else precision) for op in graph.ops())
    if weights > last_level_cache_bytes(unit):
        return unit
    return unit.model_copy(update={"weight_stream_gbps": None})


def _signature(op: Op) -> tuple[object, ...]:
    return (
        op.op_type,
        op.category,
        tuple((t.shape, t.dtype, t.is_weight) for t in op.inputs),
        tuple((t.shape, t.dtype) for t in op.outputs),
        tuple(sorted((k, v) for k, v in op.attrs.items() if isinstance(v, (int, float, str, tuple)))),
        op.macs,
        op.flops,
    )


def cost_table(graph: ModelGraph, chip: Chip, precision: str = "int8") -> CostTable:
    """Estimate every op of ``graph`` on every unit of ``chip``.

    Identical ops (same type, shapes and attributes) are estimated once per unit.

    Raises
    ------
    UnplaceableError
        When no unit can run an op, naming the node, its op type and the precision.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {PRECISIONS}")
    memo: dict[tuple[object, ...], dict[str, OpCost]] = {}
    models = [(steady_state_unit(u, graph, precision), model_for(u.kind)) for u in chip.units]
    costs: dict[str, dict[str, OpCost]] = {}
    for op in graph.ops():
        key = _signature(op)
        row = memo.get(key)
        if row is None:
            row = {}
            for unit, model in models:
                c = model.estimate(op, unit, chip, precision)
                if c is not None:
                    row[unit.name] = c
            memo[key] = row
        if not row:
            raise UnplaceableError(
                f"node {op.name!r} ({op.op_type}): no unit of chip {chip.name!r} can run it at "
                f"precision {precision}"
            )
        costs[op.name] = row
    return CostTable(precision, costs)
