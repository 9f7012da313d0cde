"""CPOP (Topcuoglu, Hariri, Wu 2002): the tasks on a critical path (upward + downward rank equal
to the entry's) all go to the one unit that runs that path fastest; the others by earliest
finish. Ready tasks are taken by decreasing upward + downward rank."""

from __future__ import annotations

import math

from scheduler.list_scheduling import list_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import downward_rank, upward_rank

__all__ = ["cpop"]


def cpop(problem: Problem) -> Solution:
    """Schedule ``problem`` with CPOP."""
    if problem.n == 0:
        return Solution((), (), (), (), 0.0)
    up, down = upward_rank(problem), downward_rank(problem)
    prio = [a + b for a, b in zip(up, down, strict=True)]
    cp_len = max(prio)
    tol = 1e-9 * max(cp_len, 1.0)
    # Walk one critical path from an entry task, always following a critical successor.
    entry = max((i for i in range(problem.n) if not problem.preds[i]), key=lambda i: (prio[i], -i))
    path = [entry]
    while True:
        nxt = [j for j, _ in problem.succs[path[-1]] if abs(prio[j] - cp_len) <= tol]
        if not nxt:
            break
        path.append(min(nxt))
    best_u, best_cost = -1, math.inf
    for u in range(problem.n_units):
        cost = float(sum(problem.exec_ns[i, u] for i in path))
        if cost < best_cost:
            best_u, best_cost = u, cost
    fixed: list[int | None] = [None] * problem.n
    if best_u >= 0:
        for i in path:
            fixed[i] = best_u
    return list_schedule(problem, priority_order(problem, prio), fixed=fixed)
