"""PEFT (Arabnejad, Barbosa 2014): priority by the mean optimistic cost to the exits, each task on
the unit minimizing its finish time plus the optimistic cost of what follows it there."""

from __future__ import annotations

from scheduler.list_scheduling import list_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import optimistic_cost_table

__all__ = ["peft"]


def peft(problem: Problem) -> Solution:
    """Schedule ``problem`` with PEFT."""
    oct_ = optimistic_cost_table(problem)
    finite = [oct_[i, list(c)].mean() if c else 0.0 for i, c in enumerate(problem.capable)]
    return list_schedule(problem, priority_order(problem, finite), lookahead=oct_)
