"""The best single unit: everything on one unit (tasks it cannot run go to their fastest unit),
the unit giving the shortest schedule wins.

Two policies hold this idea: ``single-unit`` (idle gaps filled) and ``single-unit-list``, the
one-pass form kept for comparison (no gap filling; on models it is the one-pass list scheduler
of :mod:`scheduler.one_pass`, as it was before the search existed).
"""

from __future__ import annotations

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.list_scheduling import list_schedule
from scheduler.one_pass import earliest_finish, one_pass_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import upward_rank
from scheduler.schedule import Schedule

__all__ = ["single_unit", "single_unit_each", "single_unit_list", "single_unit_list_model", "single_unit_reasons"]


def single_unit(problem: Problem, insertion: bool = True) -> Solution:
    """Schedule ``problem`` on its best single unit (``insertion``: tasks may fill idle gaps)."""
    best: Solution | None = None
    for s in single_unit_each(problem, insertion):
        if best is None or s.makespan_ns < best.makespan_ns:
            best = s
    return best if best is not None else list_schedule(problem, priority_order(problem, upward_rank(problem)), insertion=insertion)


def single_unit_each(problem: Problem, insertion: bool = True) -> list[Solution]:
    """Per unit, in the problem's order: everything on that unit, tasks it cannot run on their
    fastest unit (``insertion``: tasks may fill idle gaps)."""
    order = priority_order(problem, upward_rank(problem))
    out = []
    for u in range(problem.n_units):
        fixed: list[int | None] = []
        for i, caps in enumerate(problem.capable):
            row = problem.exec_list[i]
            fixed.append(u if u in caps else min(caps, key=lambda v: (row[v], v)))
        out.append(list_schedule(problem, order, fixed=fixed, insertion=insertion))
    return out


def single_unit_reasons(problem: Problem, sol: Solution) -> tuple[str, ...]:
    """Why each task of a single-unit schedule is where it is: on the one unit, or, where that
    unit cannot run it, on the task's fastest unit.

    The one unit is the one holding most tasks (the policy tries each unit and keeps the one
    whose schedule is shortest).
    """
    counts = [0] * problem.n_units
    for u in sol.unit:
        counts[u] += 1
    main = max(range(problem.n_units), key=lambda u: (counts[u], -u)) if problem.n_units else 0
    name = problem.units[main] if problem.n_units else ""
    out = []
    for i in range(problem.n):
        u = sol.unit[i]
        if u == main:
            out.append(f"single-unit: the whole model on {name}, the unit that finishes it first alone")
        else:
            out.append(f"single-unit: {name} cannot run it; {problem.units[u]} is its fastest unit")
    return tuple(out)


def single_unit_list(problem: Problem) -> Solution:
    """``single-unit-list`` on an abstract problem: the best single unit without gap filling."""
    return single_unit(problem, insertion=False)


def single_unit_list_model(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
    """``single-unit-list`` on a model: the one-pass list scheduler restricted to each unit in turn."""
    best: Schedule | None = None
    for unit in chip.units:
        allowed = {
            op: (unit.name,) if unit.name in row else (min(row, key=lambda u: row[u].latency_ns),)
            for op, row in table.costs.items()
        }
        s = one_pass_schedule(graph, chip, table, earliest_finish, f"single-unit ({unit.name})", allowed)
        if best is None or s.est_makespan_ns < best.est_makespan_ns:
            best = s
    assert best is not None  # a chip has at least one unit
    return best
