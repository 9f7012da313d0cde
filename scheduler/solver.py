"""``solve``: a policy of the registry on an abstract problem, with its bounds, per-task
reasons and deadlines (what ``hwsim schedule`` prints for a task-graph file)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.bounds import ProblemBounds, problem_bounds
from scheduler.deadlines import deadline_first
from scheduler.exact import EXACT_TIME_LIMIT_S
from scheduler.explain import explain
from scheduler.policy import SolveOptions
from scheduler.problem import Problem, Solution
from scheduler.registry import DEFAULT_POLICY, get_policy

__all__ = ["DeadlineError", "Result", "solve"]


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


def _meet_deadlines(problem: Problem, deadlines: Mapping[int, float], sol: Solution) -> Solution:
    """``sol``, or its deadline-first re-timing when that misses fewer by less."""
    alt = deadline_first(problem, deadlines, sol)
    worst = min(deadlines[i] - sol.finish_ns[i] for i in deadlines)
    worst_alt = min(deadlines[i] - alt.finish_ns[i] for i in deadlines)
    if worst < 0 <= worst_alt or (worst < 0 and worst_alt > worst):
        return alt
    return sol


def solve(
    problem: Problem,
    policy: str = DEFAULT_POLICY,
    *,
    deadlines: Mapping[int, float] | None = None,
    exact_time_limit_s: float = EXACT_TIME_LIMIT_S,
    time_unit: str = "",
) -> Result:
    """Schedule ``problem`` with ``policy`` and check ``deadlines`` (task index -> latest finish).

    Raises
    ------
    ValueError
        Unknown policy (:class:`~scheduler.registry.UnknownPolicyError`), or one that runs on
        models only.
    DeadlineError
        Some deadline is missed by the schedule (the message names the task and by how much).
    """
    entry = get_policy(policy)
    if entry.solve is None:
        raise ValueError(f"policy {policy!r} runs on models only, not on task graphs")
    bounds = problem_bounds(problem)
    solved = entry.solve(problem, SolveOptions(exact_time_limit_s=exact_time_limit_s, lower_bound_ns=bounds.best_ns))
    sol = solved.solution
    dl = dict(deadlines or {})
    if dl:
        sol = _meet_deadlines(problem, dl, sol)
    slack = {i: dl[i] - sol.finish_ns[i] for i in dl}
    proven = solved.proven or sol.makespan_ns <= bounds.best_ns * (1 + 1e-9)
    reasons = tuple(explain(problem, sol, time_unit))
    result = Result(solved.label, sol, bounds, solved.bound_ns, proven, reasons, slack)
    missed = [i for i, s in slack.items() if s < 0]
    if missed:
        i = min(missed, key=lambda k: (slack[k], k))
        raise DeadlineError(
            f"task {problem.tasks[i]!r} finishes at {sol.finish_ns[i]:.6g}, after its deadline "
            f"{dl[i]:.6g} (late by {-slack[i]:.6g}; {len(missed)} deadline(s) missed)",
            result,
        )
    return result
