"""What a policy is: on an abstract :class:`~scheduler.problem.Problem` it takes
:class:`SolveOptions` and returns :class:`Solved`; on a model it is
``(ModelGraph, Chip, CostTable) -> Schedule``. The registry (:mod:`scheduler.registry`) holds
both faces of each policy under one name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.affinity_locality import DEFAULT_WORK_BUDGET
from scheduler.exact import EXACT_TIME_LIMIT_S
from scheduler.problem import Problem, Solution
from scheduler.schedule import Schedule

__all__ = ["ModelPolicy", "ProblemPolicy", "SolveOptions", "Solved"]


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """What a caller may tell a policy beyond the problem (each policy reads what concerns it).

    Attributes
    ----------
    work_budget : the ``affinity-locality`` search's effort (task+edge visits).
    exact_time_limit_s : seconds ``exact`` may spend, s.
    lower_bound_ns : a known lower bound on the makespan, handed to ``exact`` (problem time units).
    """

    work_budget: int = DEFAULT_WORK_BUDGET
    exact_time_limit_s: float = EXACT_TIME_LIMIT_S
    lower_bound_ns: float = 0.0


@dataclass(frozen=True, slots=True)
class Solved:
    """A policy's answer on a problem.

    Attributes
    ----------
    solution : the schedule.
    label : the name reported for it (``best`` says which policy won: ``"best (heft)"``).
    bound_ns : a lower bound the policy proved on the way (``exact``), problem time units.
    proven : whether the policy proved the schedule optimal.
    reasons : why each task is where it is, in the policy's own terms (None: judged against
        the schedule by :func:`scheduler.explain.explain`).
    """

    solution: Solution
    label: str
    bound_ns: float = 0.0
    proven: bool = False
    reasons: tuple[str, ...] | None = None


#: A policy on an abstract problem.
ProblemPolicy = Callable[[Problem, SolveOptions], Solved]
#: A policy on a model: the graph's ops on the chip's units, with the costs of the table.
ModelPolicy = Callable[[ModelGraph, Chip, CostTable], Schedule]
