"""Policies on abstract problems, by name, and ``solve``: schedule, bounds, reasons, deadlines.

Cheap policies: ``affinity-locality`` (the default), ``heft``, ``peft``, ``cpop``,
``single-unit``, ``ort-greedy``. ``best`` runs every cheap policy and keeps the shortest
schedule; ``exact`` solves a MILP seeded with that best schedule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scheduler.bounds import ProblemBounds, problem_bounds
from scheduler.cpop import cpop
from scheduler.exact import exact
from scheduler.explain import explain
from scheduler.heft import heft
from scheduler.ort_greedy import ort_greedy
from scheduler.peft import peft
from scheduler.problem import Problem, Solution
from scheduler.search import affinity_locality
from scheduler.single import single_unit

__all__ = [
    "CHEAP_POLICIES",
    "TASK_POLICIES",
    "DeadlineError",
    "Result",
    "solve",
]

CHEAP_POLICIES: dict[str, Callable[[Problem], Solution]] = {
    "affinity-locality": affinity_locality,
    "heft": heft,
    "peft": peft,
    "cpop": cpop,
    "single-unit": single_unit,
    "ort-greedy": ort_greedy,
}

#: Every policy name ``solve`` accepts.
TASK_POLICIES: tuple[str, ...] = (*CHEAP_POLICIES, "best", "exact")


class DeadlineError(RuntimeError):
    """A schedule misses a hard deadline; ``result`` is that schedule (``slack_ns`` < 0 where late)."""

    def __init__(self, message: str, result: Result) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True, slots=True)
class Result:
    """A solved problem: which policy produced the schedule, its bounds and per-task reasons.

    ``proven`` is True when the makespan is known optimal (``exact`` finished, or a bound is
    met); ``gap`` is ``(makespan - best bound) / makespan``. ``slack_ns`` maps each task with
    a deadline to ``deadline - finish``.
    """

    policy: str
    solution: Solution
    bounds: ProblemBounds
    solver_bound_ns: float
    proven: bool
    reasons: tuple[str, ...]
    slack_ns: Mapping[int, float]

    @property
    def lower_bound_ns(self) -> float:
        return max(self.bounds.best_ns, self.solver_bound_ns)

    @property
    def gap(self) -> float:
        m = self.solution.makespan_ns
        return 0.0 if m <= 0 else max(0.0, (m - self.lower_bound_ns) / m)


def _best(problem: Problem) -> tuple[str, Solution]:
    name, best = "", None
    for pname, fn in CHEAP_POLICIES.items():
        s = fn(problem)
        if best is None or s.makespan_ns < best.makespan_ns:
            name, best = pname, s
    assert best is not None
    return name, best


def _deadline_first(problem: Problem, deadlines: Mapping[int, float], sol: Solution) -> Solution:
    """Serve constrained paths first: retime with deadline tasks and their ancestors prioritized."""
    from scheduler.problem import evaluate, priority_order
    from scheduler.search import placement_rank

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


def solve(
    problem: Problem,
    policy: str = "affinity-locality",
    *,
    deadlines: Mapping[int, float] | None = None,
    exact_time_limit_s: float = 10.0,
    time_unit: str = "",
) -> Result:
    """Schedule ``problem`` with ``policy`` and check ``deadlines`` (task index -> latest finish).

    Raises
    ------
    ValueError
        Unknown policy.
    DeadlineError
        Some deadline is missed by the schedule (the message names the task and by how much).
    """
    bounds = problem_bounds(problem)
    solver_bound = 0.0
    proven = False
    name = policy
    if policy in CHEAP_POLICIES:
        sol = CHEAP_POLICIES[policy](problem)
    elif policy == "best":
        winner, sol = _best(problem)
        name = f"best ({winner})"
    elif policy == "exact":
        _, inc = _best(problem)
        res = exact(problem, inc, bounds.best_ns, exact_time_limit_s)
        sol, solver_bound, proven = res.solution, res.bound_ns, res.proven
    else:
        raise ValueError(f"unknown policy {policy!r}; have {', '.join(TASK_POLICIES)}")
    dl = dict(deadlines or {})
    if dl:
        alt = _deadline_first(problem, dl, sol)
        worst = min(dl[i] - sol.finish_ns[i] for i in dl)
        worst_alt = min(dl[i] - alt.finish_ns[i] for i in dl)
        if worst < 0 <= worst_alt or (worst < 0 and worst_alt > worst):
            sol = alt
    slack = {i: dl[i] - sol.finish_ns[i] for i in dl}
    proven = proven or sol.makespan_ns <= bounds.best_ns * (1 + 1e-9)
    result = Result(name, sol, bounds, solver_bound, proven, tuple(explain(problem, sol, time_unit)), slack)
    missed = [i for i, s in slack.items() if s < 0]
    if missed:
        i = min(missed, key=lambda k: (slack[k], k))
        raise DeadlineError(
            f"task {problem.tasks[i]!r} finishes at {sol.finish_ns[i]:.6g}, after its deadline "
            f"{dl[i]:.6g} (late by {-slack[i]:.6g}; {len(missed)} deadline(s) missed)",
            result,
        )
    return result
