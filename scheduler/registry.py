"""The one registry of scheduling policies, for task-graph files and ONNX models alike.

Each :class:`Policy` has one name and two faces: :attr:`Policy.solve` on an abstract
:class:`~scheduler.problem.Problem` (what ``hwsim schedule`` runs on a task-graph file), and
calling it with ``(graph, chip, table)`` on a model (what ``hwsim run`` does): by default the
model is turned into a Problem (:func:`scheduler.onnx_policies.problem_from_graph`), solved, and
the solution turned back into a :class:`~scheduler.schedule.Schedule`. A policy whose model form
sees more than the Problem holds (the one-pass list schedulers track where each tensor is; the
onnxruntime order reads the units' kinds) gives its own model face.

Plugins add policies with :func:`register_policy`; an unknown name is an error that lists the
registered ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chips.schema import Chip
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.affinity_list import affinity_list, affinity_list_model
from scheduler.affinity_locality import affinity_locality
from scheduler.best import best
from scheduler.cpop import cpop
from scheduler.eft import eft, eft_model
from scheduler.exact import exact
from scheduler.heft import heft
from scheduler.onnx_policies import ort_greedy_model, schedule_model
from scheduler.ort_greedy import ort_greedy
from scheduler.peft import peft
from scheduler.policy import ModelPolicy, ProblemPolicy, Solved, SolveOptions
from scheduler.problem import Problem, Solution
from scheduler.schedule import Schedule
from scheduler.single_unit import (
    single_unit,
    single_unit_list,
    single_unit_list_model,
    single_unit_reasons,
)

__all__ = ["DEFAULT_POLICY", "POLICIES", "Policy", "UnknownPolicyError", "get_policy", "register_policy", "schedule"]

#: The default policy's name: every default and every "is this the default" test reads it.
DEFAULT_POLICY = "affinity-locality"


class UnknownPolicyError(ValueError):
    """No policy of that name is registered (the message lists the registered ones)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """A scheduling policy under its one name (see the module docstring).

    Attributes
    ----------
    name : the name users type (``--policy``).
    solve : the policy on an abstract problem (None: it runs on models only, e.g. a plugin's).
    model : its own form on a model, instead of the Problem round trip (None: the round trip).
    colocated : on a model, plan with the costs of fused neighbours
        (:func:`scheduler.onnx_policies.colocated_costs`).
    """

    name: str
    solve: ProblemPolicy | None
    model: ModelPolicy | None = None
    colocated: bool = False

    def __call__(self, graph: ModelGraph, chip: Chip, table: CostTable) -> Schedule:
        """Schedule ``graph`` on ``chip`` with the costs in ``table``."""
        if self.model is not None:
            return self.model(graph, chip, table)
        if self.solve is None:
            raise ValueError(f"policy {self.name!r} has neither a problem nor a model form")
        return schedule_model(self.solve, graph, chip, table, colocated=self.colocated)


def _plain(name: str, fn: Callable[[Problem], Solution]) -> ProblemPolicy:
    """A policy that needs no options, its schedule reported under ``name``."""

    def solve(problem: Problem, options: SolveOptions) -> Solved:
        return Solved(fn(problem), name)

    solve.__name__ = fn.__name__
    solve.__doc__ = fn.__doc__
    return solve


def _solve_affinity_locality(problem: Problem, options: SolveOptions) -> Solved:
    return Solved(affinity_locality(problem, options.work_budget), "affinity-locality")


def _solve_single_unit(problem: Problem, options: SolveOptions) -> Solved:
    sol = single_unit(problem)
    return Solved(sol, "single-unit", reasons=single_unit_reasons(problem, sol))


def _solve_best(problem: Problem, options: SolveOptions) -> Solved:
    winner, sol = best(problem)
    return Solved(sol, f"best ({winner})")


def _solve_exact(problem: Problem, options: SolveOptions) -> Solved:
    _, incumbent = best(problem)
    res = exact(problem, incumbent, options.lower_bound_ns, options.exact_time_limit_s)
    return Solved(res.solution, "exact", res.bound_ns, res.proven)


POLICIES: dict[str, Policy] = {}


def register_policy(name: str, policy: Policy | ModelPolicy) -> None:
    """Add a policy (plugins use this; built-ins are registered below).

    ``policy`` is a :class:`Policy`, or a plain ``(graph, chip, table) -> Schedule`` function
    (a policy on models only).
    """
    POLICIES[name] = policy if isinstance(policy, Policy) else Policy(name, None, policy)


def get_policy(name: str) -> Policy:
    """The registered policy ``name``.

    Raises
    ------
    UnknownPolicyError
        No such policy; the message lists the registered ones.
    """
    try:
        return POLICIES[name]
    except KeyError:
        raise UnknownPolicyError(f"unknown policy {name!r}; registered: {', '.join(POLICIES)}") from None


def schedule(graph: ModelGraph, chip: Chip, table: CostTable, policy: str = DEFAULT_POLICY) -> Schedule:
    """Run the policy named ``policy`` on a model."""
    return get_policy(policy)(graph, chip, table)


for _policy in (
    # The default: seeds plus local search on the abstract problem (hwsim.policy_check also
    # checks it through the engine against HEFT, the best single unit and affinity-list).
    Policy("affinity-locality", _solve_affinity_locality, colocated=True),
    Policy("heft", _plain("heft", heft)),
    Policy("peft", _plain("peft", peft)),
    Policy("cpop", _plain("cpop", cpop)),
    Policy("single-unit", _solve_single_unit),
    Policy("ort-greedy", _plain("ort-greedy", ort_greedy), ort_greedy_model),
    Policy("best", _solve_best),
    Policy("exact", _solve_exact),
    # The earlier one-pass policies, kept for comparison (affinity-list was the default).
    Policy("eft", _plain("eft", eft), eft_model),
    Policy("affinity-list", _plain("affinity-list", affinity_list), affinity_list_model),
    Policy("single-unit-list", _plain("single-unit-list", single_unit_list), single_unit_list_model),
):
    register_policy(_policy.name, _policy)
