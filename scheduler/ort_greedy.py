"""The onnxruntime-style partition: units in priority order (accelerators before CPUs, then as
listed), each takes every task it can run; tasks then run in upward-rank order, each on the
earliest free core of its unit. No cost model decides the placement."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.list_scheduling import list_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import upward_rank

__all__ = ["ort_greedy"]


def ort_greedy(problem: Problem, unit_priority: Sequence[int] | None = None) -> Solution:
    """Schedule ``problem`` the onnxruntime way; ``unit_priority`` defaults to the listed order."""
    prio = list(unit_priority) if unit_priority is not None else list(range(problem.n_units))
    fixed: list[int | None] = []
    for caps in problem.capable:
        fixed.append(next(u for u in prio if u in caps))
    return list_schedule(problem, priority_order(problem, upward_rank(problem)), fixed=fixed)
