"""Baselines to compare the default policy with.

- ``eft``: greedy earliest finish time, no affinity (a HEFT-like list scheduler without
  insertion into idle gaps).
- ``single-unit``: the whole graph on the one unit that gives the shortest schedule; ops that
  unit cannot run go to the fastest unit that can.
"""

from __future__ import annotations

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.list_scheduler import Candidate, list_schedule
from scheduler.schedule import Schedule

__all__ = ["eft", "single_unit"]


def _earliest(op_type: str, cands: list[Candidate]) -> tuple[Candidate, str]:
    best = min(cands, key=lambda c: (c.finish_ns, c.unit))
    return best, f"earliest finish on {best.unit}"


def eft(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
    return list_schedule(graph, chip, table, _earliest, "eft")


def single_unit(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
    best: Schedule | None = None
    for unit in chip.units:
        allowed = {
            op: (unit.name,) if unit.name in row else (min(row, key=lambda u: row[u].latency_ns),)
            for op, row in table.costs.items()
        }
        s = list_schedule(graph, chip, table, _earliest, f"single-unit ({unit.name})", allowed)
        if best is None or s.est_makespan_ns < best.est_makespan_ns:
            best = s
    assert best is not None  # a chip has at least one unit
    return best
