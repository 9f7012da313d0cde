"""Deadlines: re-order a schedule so tasks with a deadline, and what they wait for, run first."""

from __future__ import annotations

import math
from collections.abc import Mapping

from scheduler.problem import Problem, Solution, evaluate, priority_order
from scheduler.ranks import placement_rank

__all__ = ["deadline_first"]


def deadline_first(problem: Problem, deadlines: Mapping[int, float], sol: Solution) -> Solution:
    """``sol``'s units, re-timed with the tasks in ``deadlines`` (task index -> latest finish)
    and their ancestors first, earliest deadline first, then by placement rank."""
    urgent = set(deadlines)
    for i in range(problem.n - 1, -1, -1):
        if i in urgent:
            urgent.update(j for j, _ in problem.preds[i])
    rank = placement_rank(problem, sol.unit)
    # Earliest deadline first among urgent tasks, then by rank.
    due = [math.inf] * problem.n
    for i in range(problem.n - 1, -1, -1):
        d = deadlines.get(i, math.inf)
        for j, _ in problem.succs[i]:
            d = min(d, due[j])
        due[i] = d
    big = max(rank, default=0.0) + 1.0
    span = max((d for d in due if math.isfinite(d)), default=0.0) + 1.0
    prio = [
        (2 * big + big * (1 - due[i] / span) + rank[i]) if i in urgent else rank[i] for i in range(problem.n)
    ]
    return evaluate(problem, sol.unit, priority_order(problem, prio))
