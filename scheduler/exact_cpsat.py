"""The exact policy's model for OR-Tools CP-SAT (a dependency: ``pip install ortools``).

Same problem as :mod:`scheduler.exact`'s MILP: per task one optional interval per (unit, core)
it can run on, exactly one present; per core a no-overlap constraint; per edge, the successor
starts after the predecessor's finish plus the transfer time of the unit pair both are on
(enforced by the two placement literals). CP-SAT needs integer times, so times are scaled to
``SCALE`` integer steps of the incumbent's makespan and every run time and transfer time is
rounded **down**: a schedule of the real problem, its start times rounded down, is a schedule of
the rounded one, so the rounded optimum is a valid lower bound. The solver's schedule is re-timed
exactly in floating point (:func:`~scheduler.problem.solution_from_times`); it is proven when that
re-timed makespan is within ``PROOF_TOLERANCE`` of the bound (HiGHS's default relative MIP gap is
the same 1e-4).
"""

from __future__ import annotations

import math
import os
from typing import Any

from scheduler.problem import Problem, Solution, solution_from_times

__all__ = [
    "POLISH_DETERMINISTIC_S",
    "POLISH_MAX_SIZE",
    "PROOF_TOLERANCE",
    "SCALE",
    "MissingSolverError",
    "cpsat_available",
    "polish",
    "solve_cpsat",
]

#: Integer time steps over the incumbent's makespan (rounding loses < n / SCALE of it).
SCALE = 1_000_000
#: A schedule within this relative distance of the bound counts as proven optimal.
PROOF_TOLERANCE = 1e-4
#: :func:`polish` runs on graphs up to this many tasks + edges (the default policy's small graphs
#: on units of one core each: at n = 50 the model is solved or improved in about a second; a
#: unit of k cores makes k symmetric alternatives per task, and a model's units have several) ...
POLISH_MAX_SIZE = 400
#: ... for this much of CP-SAT's deterministic time (work units, not seconds: the same answer on
#: any machine with one OR-Tools version; 0.25 took 0.3-2.5 s of wall time at n = 50 on a 2-vCPU VM) ...
POLISH_DETERMINISTIC_S = 0.25
#: ... and never longer than this in wall time (only a starved machine reaches it).
POLISH_WALL_CAP_S = 30.0


class MissingSolverError(ImportError):
    """OR-Tools is not installed (the one-line message says how to install it)."""


def cpsat_available() -> bool:
    """Whether ``ortools`` can be imported."""
    try:
        import ortools.sat.python.cp_model  # noqa: F401
    except ImportError:
        return False
    return True


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def polish(problem: Problem, incumbent: Solution, share: float = 1.0) -> Solution:
    """``incumbent`` improved by CP-SAT on one worker within ``share`` x ``POLISH_DETERMINISTIC_S``
    (deterministic), or ``incumbent`` itself where nothing shorter was found, the graph is larger
    than ``POLISH_MAX_SIZE`` or OR-Tools is not installed. ``share`` is the caller's budget
    against the default (a model's search passes its twentieth)."""
    small = problem.n + problem.n_edges() <= POLISH_MAX_SIZE
    if not small or problem.n < 2 or not 0.0 < incumbent.makespan_ns < math.inf or not cpsat_available():
        return incumbent
    limit = POLISH_DETERMINISTIC_S * share
    best, _, _ = solve_cpsat(problem, incumbent, 0.0, POLISH_WALL_CAP_S * share, workers=1, deterministic_s=limit)
    return best


def _steps(ns: float, k: float, horizon: int) -> int:
    """``ns`` in integer steps (``k`` per ns), rounded down, and at most ``horizon + 1``: a time
    longer than the horizon fits no schedule either way, and CP-SAT refuses a constant past
    2^63 (a transfer of 6e13 ns beside a 10 ns incumbent was one).

    >>> _steps(2.5, 2.0, 100), _steps(6e13, 1e5, 100)
    (5, 101)
    """
    return min(math.floor(ns * k), horizon + 1)


def _add_precedences(model: Any, problem: Problem, start: list[Any], end: list[Any], on: list[dict[int, Any]], k: float) -> None:
    """Each successor starts after its predecessor's end, plus the transfer time (scaled by ``k``,
    rounded down) of the unit pair both are on (``on``: per task, unit -> placement literal)."""
    horizon = SCALE + 1
    for j in range(problem.n):
        for i, vol in problem.preds[j]:
            model.add(start[j] >= end[i])
            for u, lu in on[i].items():
                for v, lv in on[j].items():
                    c = _steps(problem.comm(vol, u, v), k, horizon) if u != v else 0
                    if c > 0:
                        model.add(start[j] >= end[i] + c).only_enforce_if(lu, lv)


def solve_cpsat(
    problem: Problem,
    incumbent: Solution,
    lower_bound_ns: float,
    time_limit_s: float,
    *,
    workers: int | None = None,
    deterministic_s: float | None = None,
) -> tuple[Solution, float, bool]:
    """Best schedule, lower bound (ns) and proof flag from CP-SAT, seeded with ``incumbent``.

    ``workers``: CP-SAT's search workers (default: the machine's cores, at most 8);
    ``deterministic_s``: a limit in CP-SAT's deterministic time as well (with one worker the
    answer is then the same on every run).

    Raises
    ------
    MissingSolverError
        ``ortools`` is not installed.
    """
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        raise MissingSolverError("the exact solver needs OR-Tools: pip install ortools") from None
    k = SCALE / incumbent.makespan_ns
    if not math.isfinite(k):
        return incumbent, lower_bound_ns, False  # a makespan so short (~1e-302) no integer scale reaches it
    horizon = SCALE + 1
    model = cp_model.CpModel()
    start = [model.new_int_var(0, horizon, f"s{i}") for i in range(problem.n)]
    end = [model.new_int_var(0, horizon, f"e{i}") for i in range(problem.n)]
    on: list[dict[int, cp_model.IntVar]] = []
    per_core: dict[tuple[int, int], list[cp_model.IntervalVar]] = {}
    for i in range(problem.n):
        lits: dict[int, cp_model.IntVar] = {}
        for u in problem.capable[i]:
            d = _steps(problem.exec_list[i][u], k, horizon)
            core_lits = []
            for c in range(problem.cores[u]):
                lit = model.new_bool_var(f"x{i}_{u}_{c}")
                # each alternative has a start of its own, tied to the task's only where present:
                # optional intervals sharing one start and end var but of different sizes made
                # CP-SAT 9.15 call a feasible model infeasible (proving a 37.7 "optimum" of 31.8)
                alt = model.new_int_var(0, horizon, f"s{i}_{u}_{c}")
                per_core.setdefault((u, c), []).append(
                    model.new_optional_fixed_size_interval_var(alt, d, lit, f"iv{i}_{u}_{c}")
                )
                model.add(alt == start[i]).only_enforce_if(lit)
                model.add(end[i] == start[i] + d).only_enforce_if(lit)
                core_lits.append(lit)
            lits[u] = model.new_bool_var(f"y{i}_{u}")
            model.add(sum(core_lits) == lits[u])
            model.add_hint(lits[u], incumbent.unit[i] == u)
        model.add_exactly_one(lits.values())
        on.append(lits)
        model.add_hint(start[i], math.floor(incumbent.start_ns[i] * k))
    for intervals in per_core.values():
        model.add_no_overlap(intervals)
    _add_precedences(model, problem, start, end, on, k)
    makespan = model.new_int_var(math.floor(lower_bound_ns * k), horizon, "C")
    model.add_max_equality(makespan, end)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = workers or _workers()
    if deterministic_s is not None:
        solver.parameters.max_deterministic_time = deterministic_s
    status = solver.solve(model)
    best = incumbent
    bound = lower_bound_ns
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        assign = [next(u for u, lit in on[i].items() if solver.boolean_value(lit)) for i in range(problem.n)]
        cand = solution_from_times(problem, assign, [solver.value(s) / k for s in start])
        if cand.makespan_ns < best.makespan_ns:
            best = cand
        bound = max(bound, solver.best_objective_bound / k)
    # INFEASIBLE proves nothing here: the incumbent, its times rounded down, is a schedule of the
    # model, so that status can only be a solver fault; the incumbent stays, unproven
    proven = best.makespan_ns <= bound * (1 + PROOF_TOLERANCE)
    return best, min(bound, best.makespan_ns), proven
