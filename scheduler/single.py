"""The best single unit: everything on one unit (tasks it cannot run go to their fastest unit),
the unit giving the shortest schedule wins."""

from __future__ import annotations

from scheduler.list_eft import list_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import upward_rank

__all__ = ["single_unit"]


def single_unit(problem: Problem) -> Solution:
    """Schedule ``problem`` on its best single unit."""
    order = priority_order(problem, upward_rank(problem))
    best: Solution | None = None
    for u in range(problem.n_units):
        fixed: list[int | None] = []
        for i, caps in enumerate(problem.capable):
            row = problem.exec_list[i]
            fixed.append(u if u in caps else min(caps, key=lambda v: (row[v], v)))
        s = list_schedule(problem, order, fixed=fixed)
        if best is None or s.makespan_ns < best.makespan_ns:
            best = s
    assert best is not None or problem.n_units == 0
    return best if best is not None else list_schedule(problem, order)
