"""Ruin and recreate: take a region of a schedule off its units and put it back greedily.

A large-neighbourhood step for the default search (:mod:`scheduler.affinity_locality`): the
tasks of a region (a connected piece of the DAG, or everything that starts in a window of
time) lose their units; list scheduling in the schedule's own start order puts each back on
the unit where it finishes first, counting the transfer to any successor outside the region
(whose unit stays), while every other task keeps its unit. One call costs about one schedule
evaluation, and it moves a whole group of tasks at once, which no path of one-task moves does
when each step alone makes the schedule longer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.list_scheduling import list_schedule
from scheduler.problem import Problem, Solution

__all__ = ["connected_region", "recreate", "window_region"]


def recreate(problem: Problem, sol: Solution, region: Sequence[int]) -> Solution:
    """``sol`` with the tasks of ``region`` re-placed on their earliest-finish units.

    Tasks are taken in ``sol``'s start order; a task outside ``region`` keeps its unit. For a
    task of the region, the finish compared across units adds the longest transfer to a
    successor outside the region (that successor's unit is known), so a task is not pulled
    away from the consumer it feeds.

    Examples
    --------
    >>> import numpy as np
    >>> from scheduler.problem import evaluate, make_problem
    >>> p = make_problem(["a", "b"], ["u", "v"], np.array([[1.0, 4.0], [1.0, 4.0]]), [(0, 1, 5.0)])
    >>> slow = evaluate(p, [1, 1], [0, 1])
    >>> recreate(p, slow, [0, 1]).unit
    (0, 0)
    """
    inside = set(region)
    fixed: list[int | None] = [None if t in inside else u for t, u in enumerate(sol.unit)]
    lookahead = np.zeros((problem.n, problem.n_units))
    for t in inside:
        for j, vol in problem.succs[t]:
            if j in inside or not vol:
                continue
            for u in problem.capable[t]:
                lookahead[t, u] = max(lookahead[t, u], problem.comm(vol, u, sol.unit[j]))
    return list_schedule(problem, sol.order(), fixed=fixed, lookahead=lookahead)


def connected_region(problem: Problem, start: int, size: int, rng: np.random.Generator) -> list[int]:
    """Up to ``size`` tasks connected to ``start`` (predecessors and successors), grown from a
    random task of the region each step, so that the region is a random connected piece."""
    region = [start]
    seen = {start}
    frontier = [j for j, _ in (*problem.preds[start], *problem.succs[start])]
    while frontier and len(region) < size:
        j = frontier.pop(int(rng.integers(0, len(frontier))))
        if j in seen:
            continue
        seen.add(j)
        region.append(j)
        frontier.extend(k for k, _ in (*problem.preds[j], *problem.succs[j]) if k not in seen)
    return region


def window_region(sol: Solution, from_ns: float, width_ns: float) -> list[int]:
    """The tasks of ``sol`` that start in ``[from_ns, from_ns + width_ns)``."""
    return [t for t, s in enumerate(sol.start_ns) if from_ns <= s < from_ns + width_ns]
