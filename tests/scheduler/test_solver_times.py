"""Schedules rebuilt from a solver's start times, which carry rounding errors.

A MILP solver's start times respect the precedences only to its tolerance: a task can start a
hair before its zero-time predecessor. Rebuilt in plain start order, the successor was timed
before its predecessor (its inputs read as ready at 0) and the engine's per-core order ran it
first, waiting for an input that never came.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.generators import random_problem
from scheduler.heft import heft
from scheduler.problem import Problem, make_problem, solution_from_times, start_order
from tests.helpers import check_valid


def with_zero_time_tasks(p: Problem, zero: set[int]) -> Problem:
    """``p`` with the tasks in ``zero`` taking no time on the units that can run them."""
    ex = p.exec_ns.copy()
    for i in zero:
        ex[i][ex[i] < float("inf")] = 0.0
    edges = [(j, i, vol) for i in range(p.n) for j, vol in p.preds[i]]
    return make_problem(p.tasks, p.units, ex, edges, kinds=p.kinds, cores=p.cores)


def early(start: float, ulps: int) -> float:
    """``start`` moved ``ulps`` representable steps earlier (a solver's rounding)."""
    for _ in range(ulps):
        start = math.nextafter(start, -math.inf)
    return start


#: Random problems of up to 16 tasks on 1-3 units, the tasks in ``zero`` taking no time.
ZERO_TIME_CASES = {
    "seed": st.integers(0, 2**31 - 1),
    "n": st.integers(2, 16),
    "n_units": st.integers(1, 3),
    "zero": st.sets(st.integers(0, 15)),
}


def zero_time_problem(seed: int, n: int, n_units: int, zero: set[int]) -> Problem | None:
    """A case of :data:`ZERO_TIME_CASES` (None where a task has no unit to run on)."""
    p = with_zero_time_tasks(random_problem(seed, n, n_units, 0.5, "unrelated"), {i for i in zero if i < n})
    return None if any(not caps for caps in p.capable) else p


@settings(max_examples=60, deadline=None)
@given(**ZERO_TIME_CASES, jitter=st.lists(st.integers(0, 2), min_size=16, max_size=16))
def test_rounded_start_times_rebuild_a_valid_schedule(seed, n, n_units, zero, jitter):
    p = zero_time_problem(seed, n, n_units, zero)
    if p is None:
        return
    exact_times = heft(p)
    rounded = [early(s, jitter[i]) for i, s in enumerate(exact_times.start_ns)]
    order = start_order(p, rounded)
    position = {task: k for k, task in enumerate(order)}
    assert sorted(order) == list(range(p.n))
    assert all(position[j] < position[i] for i in range(p.n) for j, _ in p.preds[i])
    rebuilt = solution_from_times(p, exact_times.unit, rounded)
    check_valid(p, rebuilt)
    assert rebuilt.unit == exact_times.unit


def test_start_order_is_the_start_sort_when_times_respect_the_precedences():
    # a -> b (a takes no time, b starts when a does), c alone earlier, d alone at a tie with a.
    p = make_problem(["a", "b", "c", "d"], ["u"], [[0.0], [2.0], [1.0], [1.0]], [(0, 1, 0.0)])
    assert start_order(p, [5.0, 5.0, 1.0, 5.0]) == [2, 0, 1, 3]
    # b a hair before a: b still follows a, the other tasks keep their places by start.
    assert start_order(p, [5.0, 5.0 - 1e-12, 1.0, 5.0]) == [2, 0, 1, 3]


def test_a_task_taking_no_time_goes_before_the_one_it_starts_with() -> None:
    # a and b both start at 5 on one core; b takes no time. In (start, index) order a came
    # first and b waited for a's finish: the engine ran b (and whatever needed it) 2 ns late.
    p = make_problem(["a", "b"], ["u"], [[2.0], [0.0]], [])
    assert start_order(p, [5.0, 5.0]) == [0, 1]
    assert start_order(p, [5.0, 5.0], [7.0, 5.0]) == [1, 0]


@settings(max_examples=60, deadline=None)
@given(**ZERO_TIME_CASES)
def test_each_core_s_tasks_in_start_order_follow_one_another(seed, n, n_units, zero):
    # The per-core order of a schedule is its tasks in start_order: run one after another on
    # their core, they must keep the solution's times (none waits for one planned after it).
    p = zero_time_problem(seed, n, n_units, zero)
    if p is None:
        return
    sol = heft(p)
    last: dict[tuple[int, int], int] = {}
    for i in start_order(p, sol.start_ns, sol.finish_ns):
        core = (sol.unit[i], sol.core[i])
        if core in last:
            assert sol.finish_ns[last[core]] <= sol.start_ns[i]
        last[core] = i
