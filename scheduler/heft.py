"""HEFT (Topcuoglu, Hariri, Wu 2002): tasks by decreasing upward rank, each on the unit where it
finishes earliest, idle gaps filled."""

from __future__ import annotations

from scheduler.list_scheduling import list_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import upward_rank

__all__ = ["heft"]


def heft(problem: Problem) -> Solution:
    """Schedule ``problem`` with HEFT."""
    return list_schedule(problem, priority_order(problem, upward_rank(problem)))
