"""Lower bounds on the makespan of any schedule (ns), for judging policies and for tests.

- critical path: the longest dependency chain with every op on its fastest unit and free
  communication;
- load: all the work, each op on its fastest unit, spread perfectly over every core.
"""

from __future__ import annotations

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph

__all__ = ["critical_path_bound_ns", "load_bound_ns", "lower_bound_ns"]


def critical_path_bound_ns(graph: ModelGraph, table: CostTable) -> float:
    """Longest path with each op at its minimum latency over units, no transfers."""
    best = {n: min(c.latency_ns for c in table.costs[n].values()) for n in graph.order}
    dist: dict[str, float] = {}
    g = graph.g
    for n in graph.order:
        dist[n] = best[n] + max((dist[p] for p in g.predecessors(n)), default=0.0)
    return max(dist.values(), default=0.0)


def load_bound_ns(graph: ModelGraph, table: CostTable, chip: Chip) -> float:
    """Total minimum work divided by the total number of cores."""
    cores = sum(u.cores for u in chip.units)
    work = sum(min(c.latency_ns for c in table.costs[n].values()) for n in graph.order)
    return work / cores


def lower_bound_ns(graph: ModelGraph, table: CostTable, chip: Chip) -> float:
    """The larger of the two bounds above."""
    return max(critical_path_bound_ns(graph, table), load_bound_ns(graph, table, chip))
