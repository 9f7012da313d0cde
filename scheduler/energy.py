"""Energy-aware scheduling: the least energy under a latency budget.

A schedule's energy is estimated as the engine's analysis counts it: each task's own energy on
its unit (``task_pj[i, u]``: active power over its run time plus its DRAM traffic), every unit's
idle power over the time none of its cores is busy (approximated as ``makespan - busy / cores``),
and ``comm_pj_per_volume`` per unit of volume crossing domains (a tensor written to and read back
from DRAM). :func:`min_energy` starts from a (latency-optimal) schedule and moves tasks, most
saving first, to cheaper units while the makespan stays within the budget; every move is
re-timed exactly. The effort is a count of evaluations that shrinks with the graph, so the
result is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cost_models.energy import energy_pj
from scheduler.list_scheduling import retime
from scheduler.problem import Problem, Solution

__all__ = ["ENERGY_WORK_BUDGET", "EnergyModel", "min_energy", "schedule_energy_pj"]

#: Task+edge visits :func:`min_energy` may spend (evaluations = this // (tasks + edges), at most 2000).
ENERGY_WORK_BUDGET = 400_000


@dataclass(frozen=True, slots=True)
class EnergyModel:
    """Energy figures of a :class:`~scheduler.problem.Problem`.

    Attributes
    ----------
    task_pj : (n_tasks, n_units) energy of each task on each unit, pJ (``inf`` where it cannot run).
    idle_w : per unit, power while none of its cores is busy, W (W x ns = 1e3 pJ).
    comm_pj_per_volume : energy per unit of edge volume crossing domains, pJ.
    """

    task_pj: np.ndarray
    idle_w: tuple[float, ...]
    comm_pj_per_volume: float = 0.0


def schedule_energy_pj(problem: Problem, model: EnergyModel, sol: Solution) -> float:
    """Estimated energy of ``sol`` in pJ (see the module docstring)."""
    busy = [0.0] * problem.n_units
    task = 0.0
    for i, u in enumerate(sol.unit):
        busy[u] += sol.finish_ns[i] - sol.start_ns[i]
        task += float(model.task_pj[i, u])
    idle = sum(
        energy_pj(model.idle_w[u], max(0.0, sol.makespan_ns - busy[u] / problem.cores[u])) for u in range(problem.n_units)
    )
    comm = 0.0
    if model.comm_pj_per_volume:
        dom = problem.unit_domain
        for i, ps in enumerate(problem.preds):
            for j, vol in ps:
                if dom[sol.unit[i]] != dom[sol.unit[j]]:
                    comm += vol
    return task + idle + comm * model.comm_pj_per_volume


def min_energy(
    problem: Problem,
    model: EnergyModel,
    start: Solution,
    latency_budget_ns: float,
    work_budget: int = ENERGY_WORK_BUDGET,
) -> Solution:
    """The least-energy schedule found whose makespan is at most ``latency_budget_ns``.

    Starts from ``start`` (returned unchanged when it already misses the budget or nothing
    cheaper fits); tasks are tried in order of the energy a move could save, each on its
    cheaper units from the cheapest, and a move is kept when the re-timed schedule meets the
    budget and uses less energy.
    """
    if problem.n == 0 or start.makespan_ns > latency_budget_ns:
        return start
    size = problem.n + problem.n_edges()
    budget = min(2000, work_budget // size)
    best = start
    best_e = schedule_energy_pj(problem, model, best)
    tp = model.task_pj
    saving = []
    for i in range(problem.n):
        cur = float(tp[i, best.unit[i]])
        cheap = min((float(tp[i, u]) for u in problem.capable[i]), default=cur)
        if cheap < cur:
            saving.append((cur - cheap, i))
    used = 0
    for _, i in sorted(saving, key=lambda x: (-x[0], x[1])):
        if used >= budget:
            break
        cur_pj = float(tp[i, best.unit[i]])
        for u in sorted(problem.capable[i], key=lambda v: (float(tp[i, v]), v)):
            if float(tp[i, u]) >= cur_pj or used >= budget:
                break
            assign = list(best.unit)
            assign[i] = u
            cand = retime(problem, assign)
            used += 1
            if cand.makespan_ns > latency_budget_ns:
                continue
            e = schedule_energy_pj(problem, model, cand)
            if e < best_e:
                best, best_e = cand, e
                break
    return best
