"""``eft``: greedy earliest finish time, no affinity (a HEFT-like list scheduler without
insertion into idle gaps), kept as a baseline to compare the default policy with."""

from __future__ import annotations

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.list_scheduling import list_schedule
from scheduler.one_pass import earliest_finish, one_pass_schedule
from scheduler.problem import Problem, Solution, priority_order
from scheduler.ranks import upward_rank
from scheduler.schedule import Schedule

__all__ = ["eft", "eft_model"]


def eft(problem: Problem) -> Solution:
    """``eft`` on an abstract problem: tasks by upward rank, each on its earliest-finish unit, no gap filling."""
    return list_schedule(problem, priority_order(problem, upward_rank(problem)), insertion=False)


def eft_model(graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
    """``eft`` on a model, with the one-pass list scheduler of :mod:`scheduler.one_pass`."""
    return one_pass_schedule(graph, chip, table, earliest_finish, "eft")
