"""Scheduling policies on abstract task graphs: validity, bounds, exact <= heuristics, best, determinism."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import POLICIES
from scheduler.affinity_locality import affinity_locality
from scheduler.best import CHEAP_POLICIES
from scheduler.bounds import problem_bounds
from scheduler.exact import exact
from scheduler.generators import random_problem
from scheduler.heft import heft
from scheduler.problem import Problem, Timeline, evaluate, make_problem
from scheduler.solver import DeadlineError, solve
from tests.helpers import EPS, check_valid

problems = st.builds(
    random_problem,
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 14),
    n_units=st.integers(1, 5),
    ccr=st.sampled_from([0.0, 0.5, 1.0, 5.0]),
    kind=st.sampled_from(["related", "unrelated"]),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=problems)
def test_every_cheap_policy_is_valid_and_above_the_bounds(p):
    lb = problem_bounds(p)
    results = {}
    for name, fn in CHEAP_POLICIES.items():
        s = fn(p)
        check_valid(p, s)
        assert s.makespan_ns >= lb.best_ns - EPS, name
        results[name] = s.makespan_ns
    best = solve(p, "best").solution
    check_valid(p, best)
    assert best.makespan_ns <= min(results.values()) + EPS
    # The default seeds with HEFT and PEFT and only accepts improvements.
    assert results["affinity-locality"] <= min(results["heft"], results["peft"]) + EPS


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 7),
    n_units=st.integers(1, 3),
    ccr=st.sampled_from([0.5, 5.0]),
    kind=st.sampled_from(["related", "unrelated"]),
)
def test_exact_is_at_most_every_heuristic(seed, n, n_units, ccr, kind):
    p = random_problem(seed, n, n_units, ccr, kind)
    r = solve(p, "exact", exact_time_limit_s=20.0)
    check_valid(p, r.solution)
    assert r.proven
    for name, fn in CHEAP_POLICIES.items():
        assert r.solution.makespan_ns <= fn(p).makespan_ns + EPS, name
    assert r.lower_bound_ns <= r.solution.makespan_ns + EPS


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(4, 7),
    ccr=st.sampled_from([0.5, 1.0]),
    wide=st.lists(st.sampled_from([1.0, 2.0, 4.0]), min_size=3, max_size=3),
)
def test_the_milp_prices_a_unit_s_wider_outputs_as_the_heuristics_do(seed, n, ccr, wide):
    # A unit that stores its outputs wider (an fp16 GPU in an int8 deployment) sends each of
    # its edges `wide` times the volume. The MILP charged the volume alone: its "proven"
    # optimum, re-timed, lost to HEFT on 32 of 60 such problems (n = 7, ccr 0.5 / 1).
    base = random_problem(seed, n, 3, ccr, "unrelated")
    edges = [(j, i, vol) for i in range(base.n) for j, vol in base.preds[i]]
    p = make_problem(base.tasks, base.units, base.exec_ns, edges, kinds=base.kinds, volume_scale=wide)
    assert p.comm(3.0, 0, 1) == 3.0 * wide[0] * float(base.comm_scale[0, 1]) + float(base.comm_lat[0, 1])
    r = exact(p, heft(p), solver="highs", time_limit_s=20.0)
    check_valid(p, r.solution)
    assert r.proven
    for name, fn in CHEAP_POLICIES.items():
        assert r.solution.makespan_ns <= fn(p).makespan_ns + EPS, name
    assert r.bound_ns <= r.solution.makespan_ns + EPS


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(5, 15))
def test_default_is_deterministic(seed, n):
    a = random_problem(seed, n, 4, 1.0, "unrelated")
    b = random_problem(seed, n, 4, 1.0, "unrelated")
    assert affinity_locality(a) == affinity_locality(b)


def test_exact_beats_heft_on_a_known_instance():
    # Two parallel tasks and a join; HEFT splits them and pays the transfer, one unit is optimal.
    p = make_problem(
        ["a", "b", "c"], ["u0", "u1"], [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], [(0, 2, 10.0), (1, 2, 10.0)]
    )
    r = exact(p, CHEAP_POLICIES["heft"](p), problem_bounds(p).best_ns)
    assert r.proven
    assert r.solution.makespan_ns == pytest.approx(3.0)
    assert solve(p).solution.makespan_ns == pytest.approx(3.0)


def test_evaluate_fills_idle_gaps():
    # b must wait for a's transfer on u1; c (independent) fits into u1's idle time before b.
    p = make_problem(["a", "b", "c"], ["u0", "u1"], [[2.0, 9.0], [9.0, 1.0], [9.0, 1.0]], [(0, 1, 3.0)])
    s = evaluate(p, [0, 1, 1], [0, 1, 2])
    assert s.start_ns == (0.0, 5.0, 0.0)
    no_gap = evaluate(p, [0, 1, 1], [0, 1, 2], insertion=False)
    assert no_gap.start_ns[2] == 6.0


def test_empty_problem():
    p = make_problem([], ["u0"], [[]], [])
    for name in POLICIES:
        assert solve(p, name).solution.makespan_ns == 0.0


def test_deadlines_report_slack_and_fail_when_missed():
    p = make_problem(["a", "b"], ["u0"], [[2.0], [3.0]], [])
    r = solve(p, deadlines={0: 2.0, 1: 10.0})
    # The deadline-first retiming runs "a" first so it meets its deadline exactly.
    assert r.slack_ns[0] == pytest.approx(0.0)
    assert r.slack_ns[1] == pytest.approx(5.0)
    with pytest.raises(DeadlineError, match="'b'"):
        solve(p, deadlines={0: 2.0, 1: 4.0})


def test_reasons_name_affinity_locality_or_speed():
    p = random_problem(3, 12, 4, 1.0, "unrelated")
    r = solve(p)
    assert len(r.reasons) == p.n
    assert all(any(w in x for w in ("faster", "locality", "global", "only", "affinity")) for x in r.reasons)


def test_unknown_policy():
    with pytest.raises(ValueError, match="unknown policy"):
        solve(random_problem(0, 3, 2, 1.0), "nope")


# --- Energy-aware mode (scheduler.energy) -------------------------------------------------------


def _energy_model(p: Problem, seed: int):
    import numpy as np

    from scheduler.energy import EnergyModel

    # Power per unit drawn from the seed; a task's energy is its run time times its unit's power.
    rng = np.random.default_rng(seed)
    power = rng.uniform(0.2, 5.0, p.n_units)
    return EnergyModel(p.exec_ns * power[None, :] * 1e3, tuple(rng.uniform(0.0, 0.3, p.n_units)), 0.5)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(2, 14),
    n_units=st.integers(2, 4),
    slack=st.sampled_from([0.0, 0.2, 1.0, 10.0]),
)
def test_min_energy_meets_the_budget_and_never_costs_more(seed, n, n_units, slack):
    from scheduler.energy import min_energy, schedule_energy_pj

    p = random_problem(seed, n, n_units, 1.0, "unrelated")
    model = _energy_model(p, seed)
    fast = affinity_locality(p)
    budget = fast.makespan_ns * (1 + slack)
    s = min_energy(p, model, fast, budget)
    check_valid(p, s)
    assert s.makespan_ns <= budget + EPS
    assert schedule_energy_pj(p, model, s) <= schedule_energy_pj(p, model, fast) + EPS
    if slack == 0.0:
        assert s.makespan_ns == pytest.approx(fast.makespan_ns)
    # A budget below the start schedule's makespan returns the start unchanged.
    assert min_energy(p, model, fast, fast.makespan_ns * 0.5) is fast


def test_min_energy_moves_work_to_the_frugal_unit_when_time_allows():
    from scheduler.energy import EnergyModel, min_energy, schedule_energy_pj

    # Two independent tasks: u0 is fast and hungry, u1 slow and frugal.
    p = make_problem(["a", "b"], ["u0", "u1"], [[1.0, 2.0], [1.0, 2.0]], [])
    model = EnergyModel(p.exec_ns * [[10.0, 1.0]] * 1e3, (0.0, 0.0))
    start = evaluate(p, [0, 0], [0, 1])  # both on u0: 2 ns, 20 pJ x 1e3
    tight = min_energy(p, model, start, 2.0)
    assert sorted(tight.unit) == [0, 1] and tight.makespan_ns == pytest.approx(2.0)
    loose = min_energy(p, model, start, 4.0)
    assert loose.unit == (1, 1)
    assert schedule_energy_pj(p, model, loose) < schedule_energy_pj(p, model, tight) < schedule_energy_pj(p, model, start)


def test_a_zero_time_task_does_not_open_a_gap_inside_a_busy_interval():
    # Timeline.insert put a zero-time task after a longer one of the same start; the finish
    # times went unsorted and earliest() overlapped two tasks on one core (audio_kws, rk3588)
    tl = Timeline([1])
    tl.insert(0, 0, 0.0, 10.0)
    assert tl.earliest(0, 0.0, 0.0) == (0.0, 0)
    tl.insert(0, 0, 0.0, 0.0)
    assert tl.earliest(0, 0.0, 5.0)[0] >= 10.0
