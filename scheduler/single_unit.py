"""The best single unit: everything on one unit (tasks it cannot run go to their fastest unit),
the unit giving the shortest schedule wins.

Two policies hold this idea: ``single-unit`` (idle gaps filled) and ``single-unit-list``, the
one-pass form kept for comparison (no gap filling; on models it is the one-pass list scheduler
of :mod:`scheduler.one_pass`, as it was before the search existed).
"""

from __future__ import annotations

import math

import numpy as np

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.list_scheduling import list_schedule
from scheduler.one_pass import earliest_finish, one_pass_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import upward_rank
from scheduler.schedule import Schedule

__all__ = ["busy_bound_ns", "fastest_single_units", "single_unit", "single_unit_each", "single_unit_list", "single_unit_list_model", "single_unit_reasons"]


def single_unit(problem: Problem, insertion: bool = True) -> Solution:
    """Schedule ``problem`` on its best single unit (``insertion``: tasks may fill idle gaps)."""
    best = fastest_single_units(problem, 1, insertion=insertion)
    return best[0] if best else list_schedule(problem, priority_order(problem, upward_rank(problem)), insertion=insertion)


def single_unit_each(problem: Problem, insertion: bool = True) -> list[Solution]:
    """Per unit, in the problem's order: everything on that unit, tasks it cannot run on their
    fastest unit (``insertion``: tasks may fill idle gaps)."""
    order = priority_order(problem, upward_rank(problem))
    return [_on_unit(problem, u, order, insertion) for u in range(problem.n_units)]


def _on_unit(problem: Problem, u: int, order: list[int], insertion: bool) -> Solution:
    fixed: list[int | None] = []
    for i, caps in enumerate(problem.capable):
        row = problem.exec_list[i]
        fixed.append(u if u in caps else min(caps, key=lambda v: (row[v], v)))
    return list_schedule(problem, order, fixed=fixed, insertion=insertion)


def busy_bound_ns(problem: Problem) -> np.ndarray:
    """Per unit ``u``, a lower bound on the makespan of its single-unit schedule: the busiest
    unit's run time over its cores (every task on ``u`` where ``u`` can run it, else on its fastest
    unit; a core runs one task at a time).

    >>> from scheduler.problem import make_problem
    >>> p = make_problem(["a", "b"], ["x", "y"], np.array([[2.0, 1.0], [4.0, np.inf]]), [(0, 1, 0.0)])
    >>> busy_bound_ns(p).tolist()  # on y, b still runs on x
    [6.0, 4.0]
    """
    ex = problem.exec_ns
    able = np.isfinite(ex)
    fastest = np.argmin(ex, axis=1)  # the first of equal minima, as min(caps, key=(time, unit))
    cores = np.asarray(problem.cores, dtype=float)
    out = np.zeros(problem.n_units)
    for u in range(problem.n_units):
        off = ~able[:, u]
        # float: with no op off u, bincount of nothing is an int array, which truncated the sum
        # below to whole ns (and overflowed past 2^63 ns)
        busy = np.bincount(fastest[off], weights=ex[off, fastest[off]], minlength=problem.n_units).astype(float)
        busy[u] += ex[able[:, u], u].sum()
        out[u] = float(np.max(busy / cores))
    return out


def fastest_single_units(
    problem: Problem, most: int, within: float = math.inf, insertion: bool = True
) -> list[Solution]:
    """The ``most`` shortest of :func:`single_unit_each` (ties: the problem's unit order), those
    within ``within`` times the shortest: what sorting them all by makespan gives, without
    list-scheduling a unit whose :func:`busy_bound_ns` already rules it out (seconds at 100,000
    tasks)."""
    bound = busy_bound_ns(problem)
    order = priority_order(problem, upward_rank(problem))
    made: dict[int, Solution] = {}
    for u in sorted(range(problem.n_units), key=lambda u: (bound[u], u)):
        spans = sorted(s.makespan_ns for s in made.values())
        cut = min(spans[most - 1] if len(spans) >= most else math.inf, within * spans[0] if spans else math.inf)
        if bound[u] * (1 - 1e-9) > cut:  # this unit and every later one (bound sorted) is out
            break
        made[u] = _on_unit(problem, u, order, insertion)
    best = sorted(made.items(), key=lambda kv: (kv[1].makespan_ns, kv[0]))[:most]
    return [s for _, s in best if s.makespan_ns <= within * best[0][1].makespan_ns]


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
