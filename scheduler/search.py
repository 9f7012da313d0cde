"""The default policy, ``affinity-locality``: several list schedules, then a local search.

1. Seeds: HEFT, PEFT (look-ahead), CPOP, upward ranks with communication weighted 0x and 2x,
   and the best single unit (all locality, no parallelism).
2. Local search from the best seeds: move one task, or a task together with its
   heaviest-communicating neighbour (locality), to another unit; re-time the whole schedule
   exactly (tasks by upward rank computed for the *actual* placement, idle gaps filled) and keep
   the move if the makespan (then the sum of finish times) drops.
3. Affinity: a task is moved to the unit its operator type prefers when that costs nothing.

The effort is a count of schedule evaluations that shrinks with the graph
(``work_budget // (tasks + edges)``, and only ``LARGE_WORK_BUDGET // (tasks + edges)`` above
``SMALL``), so the result is deterministic: a 10k-op graph gets a handful of evaluations, a
graph above ``HUGE`` only the HEFT seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scheduler.cpop import cpop
from scheduler.heft import heft
from scheduler.list_eft import list_schedule
from scheduler.peft import peft
from scheduler.problem import Problem, Solution, evaluate, priority_order
from scheduler.ranks import upward_rank
from scheduler.single import single_unit

__all__ = ["DEFAULT_WORK_BUDGET", "affinity_locality", "placement_rank", "retime"]

#: Task+edge visits the local search may spend in total (evaluations = this // (n + edges)).
DEFAULT_WORK_BUDGET = 600_000
#: At most this many evaluations however small the graph.
MAX_EVALUATIONS = 4000
#: Seeds beyond HEFT and PEFT are tried only below this size (tasks + edges).
SMALL = 20_000
#: Above ``SMALL`` the search gets ``LARGE_WORK_BUDGET // size`` evaluations (each one re-times
#: the whole graph; ~0.1 s at 10k ops), so a 10k-op model is scheduled in a few seconds.
LARGE_WORK_BUDGET = 150_000
#: Above this size (tasks + edges) only HEFT seeds the search (PEFT's look-ahead table is m^2 per edge).
HUGE = 100_000


def placement_rank(problem: Problem, assign: Sequence[int]) -> list[float]:
    """Upward rank with each task's real cost on its unit and real transfer times."""
    ex, ps, pl = problem.exec_list, problem.pair_scale, problem.pair_lat
    rank = [0.0] * problem.n
    for i in range(problem.n - 1, -1, -1):
        u = assign[i]
        best = 0.0
        for j, vol in problem.succs[i]:
            v = assign[j]
            t = rank[j] + (vol * ps[u][v] + pl[u][v] if vol and u != v else 0.0)
            best = max(best, t)
        rank[i] = ex[i][u] + best
    return rank


def retime(problem: Problem, assign: Sequence[int]) -> Solution:
    """Exact schedule for a fixed assignment: ready tasks by placement rank, gaps filled."""
    return evaluate(problem, assign, priority_order(problem, placement_rank(problem, assign)))


def _key(sol: Solution) -> tuple[float, float]:
    return (round(sol.makespan_ns, 9), round(sum(sol.finish_ns), 9))


def _seeds(problem: Problem) -> list[Solution]:
    size = problem.n + problem.n_edges()
    out = [heft(problem)]
    if size <= HUGE:
        out.append(peft(problem))
    if size <= SMALL:
        out.append(cpop(problem))
        for w in (0.0, 2.0):
            out.append(list_schedule(problem, priority_order(problem, upward_rank(problem, comm_weight=w))))
        out.append(single_unit(problem))
    return out


def _local_search(problem: Problem, sol: Solution, budget: int) -> tuple[Solution, int]:
    """First-improvement descent over one-task and task-plus-neighbour moves; returns evaluations used."""
    used = 0
    best = retime(problem, sol.unit)
    used += 1
    if _key(sol) < _key(best):
        best = sol
    best_key = _key(best)
    # Heaviest-communicating neighbour of each task.
    partner: list[int] = []
    for i in range(problem.n):
        nb = [(vol, j) for j, vol in problem.preds[i]] + [(vol, j) for j, vol in problem.succs[i]]
        partner.append(max(nb)[1] if nb else -1)
    improved = True
    while improved and used < budget:
        improved = False
        # Latest-finishing tasks first: they sit on the critical tail.
        tasks = sorted(range(problem.n), key=lambda i: (-best.finish_ns[i], i))
        for i in tasks:
            if used >= budget:
                break
            cur = best.unit
            for u in problem.capable[i]:
                if u == cur[i]:
                    continue
                moves: list[tuple[int, ...]] = [(i,)]
                j = partner[i]
                if j >= 0 and cur[j] != u and u in problem.capable[j]:
                    moves.append((i, j))
                for move in moves:
                    if used >= budget:
                        break
                    assign = list(cur)
                    for t in move:
                        assign[t] = u
                    cand = retime(problem, assign)
                    used += 1
                    k = _key(cand)
                    if k < best_key:
                        best, best_key, improved = cand, k, True
                        break
                if best.unit is not cur:
                    break
    return best, used


def _prefer_affinity(problem: Problem, sol: Solution, budget: int) -> Solution:
    """Move tasks to their preferred unit when the makespan does not grow."""
    aff = problem.affinity
    if budget <= 0 or not aff.any():
        return sol
    best = sol
    used = 0
    for i in range(problem.n):
        if used >= budget:
            break
        caps = problem.capable[i]
        pref = min(caps, key=lambda u: (aff[i, u], u))
        if aff[i, best.unit[i]] <= aff[i, pref]:
            continue
        assign = list(best.unit)
        assign[i] = pref
        cand = retime(problem, assign)
        used += 1
        if cand.makespan_ns <= best.makespan_ns * (1 + 1e-12):
            best = cand
    return best


def _perturbed(problem: Problem, best: Solution, rng: np.random.Generator) -> Solution:
    """A kick for the iterated local search: reassign a few tasks, or jitter the task order."""
    assign = list(best.unit)
    if rng.random() < 0.25:
        rank = placement_rank(problem, assign)
        jit = [r * rng.uniform(0.85, 1.15) for r in rank]
        return evaluate(problem, assign, priority_order(problem, jit))
    movable = [i for i in range(problem.n) if len(problem.capable[i]) > 1]
    if not movable:
        return best
    for _ in range(int(rng.integers(1, 4))):
        i = movable[int(rng.integers(0, len(movable)))]
        caps = problem.capable[i]
        assign[i] = caps[int(rng.integers(0, len(caps)))]
    return retime(problem, assign)


def affinity_locality(problem: Problem, work_budget: int = DEFAULT_WORK_BUDGET) -> Solution:
    """Schedule ``problem`` with the default policy (see the module docstring)."""
    if problem.n == 0:
        return Solution((), (), (), (), 0.0)
    size = problem.n + problem.n_edges()
    budget = min(MAX_EVALUATIONS, (work_budget if size <= SMALL else min(work_budget, LARGE_WORK_BUDGET)) // size)
    seeds = sorted(_seeds(problem), key=_key)
    best = seeds[0]
    # Descend from the best distinct seeds, then kick the best and descend again (iterated
    # local search), until the evaluation budget is spent. The kicks use a generator seeded
    # from the problem's size, so the result is deterministic.
    distinct: list[Solution] = []
    for s in seeds:
        if all(s.unit != d.unit for d in distinct):
            distinct.append(s)
    spent = 0
    share = budget // 6
    for s in distinct[:3] if budget > 0 else ():
        cand, used = _local_search(problem, s, min(share, budget - spent))
        spent += used
        if _key(cand) < _key(best):
            best = cand
    rng = np.random.default_rng(problem.n * 7919 + problem.n_units)
    while spent + 2 <= budget - budget // 10:
        kick = _perturbed(problem, best, rng)
        cand, used = _local_search(problem, kick, min(budget // 10 + 1, budget - spent - 1))
        spent += used + 1
        if _key(cand) < _key(best):
            best = cand
    return _prefer_affinity(problem, best, budget - spent)


Policy = Callable[[Problem], Solution]
