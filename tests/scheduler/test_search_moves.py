"""The default search's small-graph moves: linear clusters, binding chains, weighted re-timing."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scheduler.affinity_locality as al
from scheduler.affinity_list import affinity_list
from scheduler.affinity_locality import affinity_locality, critical_tasks, unit_swaps
from scheduler.clustering import cluster_seed, linear_clusters, moved
from scheduler.exact import exact
from scheduler.generators import random_problem
from scheduler.heft import heft
from scheduler.problem import (
    Problem,
    Solution,
    evaluate,
    evaluate_within,
    make_problem,
    priority_order,
)
from scheduler.ruin_recreate import connected_region, recreate, window_region
from tests.helpers import check_valid

_PROBLEMS = {
    "seed": st.integers(0, 2**31 - 1),
    "n": st.integers(1, 24),
    "n_units": st.integers(1, 4),
    "ccr": st.sampled_from([0.0, 1.0, 5.0]),
    "kind": st.sampled_from(["related", "unrelated"]),
}


@settings(max_examples=25, deadline=None)
@given(**_PROBLEMS)
def test_linear_clusters_cut_the_graph_into_chains(seed, n, n_units, ccr, kind):
    p = random_problem(seed, n, n_units, ccr, kind)
    clusters = linear_clusters(p)
    assert sorted(t for c in clusters for t in c) == list(range(p.n))
    for chain in clusters:
        for a, b in itertools.pairwise(chain):
            assert a in {j for j, _ in p.preds[b]}, (chain, a, b)


def test_linear_clusters_take_the_heaviest_path_first():
    # a -> b carries 5, a -> c carries 1: the first chain is a, b, then c alone.
    p = make_problem(["a", "b", "c"], ["u0", "u1"], [[1.0, 1.0]] * 3, [(0, 1, 5.0), (0, 2, 1.0)])
    assert linear_clusters(p) == [(0, 1), (2,)]
    assert linear_clusters(make_problem([], ["u0"], [], [])) == []


@settings(max_examples=15, deadline=None)
@given(**_PROBLEMS)
def test_cluster_seed_is_valid_and_no_longer_than_one_unit(seed, n, n_units, ccr, kind):
    p = random_problem(seed, n, n_units, ccr, kind)
    s = cluster_seed(p, linear_clusters(p))
    check_valid(p, s)
    one = min(al.single_unit(p).makespan_ns, s.makespan_ns)
    assert s.makespan_ns <= one * (1 + 1e-12)


def test_moved_keeps_tasks_the_unit_cannot_run():
    inf = float("inf")
    p = make_problem(["a", "b"], ["u0", "u1"], [[1.0, 1.0], [1.0, inf]], [(0, 1, 1.0)])
    assert moved(p, [0, 0], (0, 1), 1) == [1, 0]


@settings(max_examples=25, deadline=None)
@given(**_PROBLEMS)
def test_critical_tasks_are_a_binding_chain_from_time_zero_to_the_makespan(seed, n, n_units, ccr, kind):
    p = random_problem(seed, n, n_units, ccr, kind)
    s = heft(p)
    crit = critical_tasks(p, s)
    assert crit and len(set(crit)) == len(crit)
    ends = {t for t in range(p.n) if s.finish_ns[t] >= s.makespan_ns * (1 - 1e-9)}
    assert ends <= set(crit)
    # Following what held each start always leads back to a task that started at time 0.
    assert min(s.start_ns[t] for t in crit) == 0.0
    assert [s.finish_ns[t] for t in crit] == sorted((s.finish_ns[t] for t in crit), reverse=True)


def test_critical_tasks_leave_out_a_task_with_slack():
    # a (2) -> c (1) on u0; b (1) on u1 alone: the makespan is a's chain, b has slack.
    p = make_problem(["a", "b", "c"], ["u0", "u1"], [[2.0, 9.0], [9.0, 1.0], [1.0, 9.0]], [(0, 2, 0.0)])
    s = Solution((0, 1, 0), (0, 0, 0), (0.0, 0.0, 2.0), (2.0, 1.0, 3.0), 3.0)
    assert critical_tasks(p, s) == [2, 0]


def _search_alone(monkeypatch):
    """The heuristic search without the CP-SAT polish that ends it (the moves' own tests)."""
    monkeypatch.setattr(al, "polish", lambda problem, sol, share=1.0: sol)


def _all_tasks(problem, sol):
    return sorted(range(problem.n), key=lambda i: (-sol.finish_ns[i], i))


def test_moves_of_binding_tasks_reach_an_optimum_the_full_descent_misses(monkeypatch):
    # The benchmark's seed 10010 (n=10, 3 units, CCR 5, unrelated). Descending over every task
    # spends the budget on moves that cannot shorten the makespan and stays 7.5% above the
    # optimum; moving only tasks on a binding chain reaches it.
    _search_alone(monkeypatch)
    p = random_problem(10010, 10, 3, 5.0, "unrelated")
    opt = exact(p, heft(p), solver="highs")
    assert opt.proven
    s = affinity_locality(p)
    check_valid(p, s)
    assert s.makespan_ns == pytest.approx(opt.solution.makespan_ns, rel=1e-9)
    monkeypatch.setattr(al, "critical_tasks", _all_tasks)
    assert affinity_locality(p).makespan_ns > opt.solution.makespan_ns * 1.05


def test_weighted_transfers_in_the_re_timing_reach_the_optimum(monkeypatch):
    # The benchmark's seed 20008 (n=20, 4 related units, CCR 5); its optimum, 74.976 ns, is
    # CP-SAT's (proven in 0.1 s). Re-timed by the plain placement rank, the optimum's own units
    # come out 9% longer and the search stops 6.7% above it.
    _search_alone(monkeypatch)
    p = random_problem(20008, 20, 4, 5.0, "related")
    s = affinity_locality(p)
    check_valid(p, s)
    assert s.makespan_ns == pytest.approx(74.976, abs=1e-3)
    monkeypatch.setattr(al, "TIMED_COMM_WEIGHT", 1.0)
    # With weight 1 the exchanges of two units' tasks (unit_swaps) still reach it; without them
    # the weight alone decides.
    assert affinity_locality(p).makespan_ns == pytest.approx(74.976, abs=1e-3)
    monkeypatch.setattr(al, "unit_swaps", lambda problem, assign: [])
    assert affinity_locality(p).makespan_ns > 74.976 * 1.05


@settings(max_examples=40, deadline=None)
@given(**_PROBLEMS, cut=st.floats(0.0, 1.5), data=st.data())
def test_evaluate_within_is_evaluate_or_stops_past_the_cutoff(seed, n, n_units, ccr, kind, cut, data):
    p = random_problem(seed, n, n_units, ccr, kind)
    assign = [data.draw(st.sampled_from(list(p.capable[i]))) for i in range(p.n)]
    order = priority_order(p, [float(data.draw(st.integers(0, 9))) for _ in range(p.n)])
    full = evaluate(p, assign, order)
    cutoff = full.makespan_ns * cut
    within = evaluate_within(p, assign, order, cutoff)
    if full.makespan_ns > cutoff:
        assert within is None
    else:
        assert within == full


def test_the_cutoff_leaves_the_search_unchanged(monkeypatch):
    # The cutoff only skips candidates the search would reject: the same schedule without it.
    p = random_problem(50_002, 20, 4, 5.0, "related")
    fast = affinity_locality(p)
    monkeypatch.setattr(al, "_above", lambda sol: float("inf"))
    assert affinity_locality(p) == fast


def test_unit_swaps_exchange_two_units_tasks_where_both_can_run_them():
    inf = float("inf")
    # Task c runs only on u0: u0 trades with nobody; a pair of units holding nothing is left out.
    p = make_problem(["a", "b", "c"], ["u0", "u1", "u2"], [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, inf, inf]], [])
    assert unit_swaps(p, [0, 1, 0]) == [[0, 2, 0]]
    assert unit_swaps(p, [1, 2, 0]) == [[2, 1, 0]]
    assert unit_swaps(p, [0, 0, 0]) == []
    q = make_problem(["a", "b"], ["u0", "u1"], [[1.0, 2.0], [3.0, 4.0]], [(0, 1, 1.0)])
    assert unit_swaps(q, [0, 1]) == [[1, 0]]


def test_unit_swap_descents_reach_what_one_task_moves_miss(monkeypatch):
    # The development seed 3050003 (n=50, 4 related units, CCR 5; CP-SAT's proven optimum
    # 85.881 ns). Without exchanging two units' tasks the search stops 7.3% above the optimum:
    # every path of one-task moves to the better assignment climbs first.
    _search_alone(monkeypatch)
    p = random_problem(3_050_003, 50, 4, 5.0, "related")
    s = affinity_locality(p)
    check_valid(p, s)
    assert s.makespan_ns <= 85.881 * 1.04
    # Ruin and recreate (which comes after the exchanges) off too: it reaches this one as well.
    monkeypatch.setattr(al, "RUIN_SHARE", 0)
    monkeypatch.setattr(al, "unit_swaps", lambda problem, assign: [])
    assert affinity_locality(p).makespan_ns > 85.881 * 1.06


@settings(max_examples=25, deadline=None)
@given(**_PROBLEMS, data=st.data())
def test_recreate_moves_only_the_region_and_is_valid(seed, n, n_units, ccr, kind, data):
    p = random_problem(seed, n, n_units, ccr, kind)
    s = heft(p)
    region = data.draw(st.lists(st.integers(0, p.n - 1), unique=True))
    r = recreate(p, s, region)
    check_valid(p, r)
    assert all(r.unit[t] == s.unit[t] for t in range(p.n) if t not in region)
    assert recreate(p, s, []).unit == s.unit


@settings(max_examples=25, deadline=None)
@given(**_PROBLEMS, size=st.integers(1, 30), rng_seed=st.integers(0, 2**32 - 1))
def test_connected_region_is_connected_around_its_start(seed, n, n_units, ccr, kind, size, rng_seed):
    p = random_problem(seed, n, n_units, ccr, kind)
    start = rng_seed % p.n
    region = connected_region(p, start, size, np.random.default_rng(rng_seed))
    assert region[0] == start and len(set(region)) == len(region) <= size
    # Every task after the first touches one taken before it (predecessor or successor).
    for k, t in enumerate(region[1:], 1):
        near = {j for j, _ in (*p.preds[t], *p.succs[t])}
        assert near & set(region[:k]), (region, t)


def test_window_region_takes_the_tasks_starting_in_it():
    s = Solution((0, 0, 0), (0, 0, 0), (0.0, 2.0, 5.0), (2.0, 5.0, 6.0), 6.0)
    assert window_region(s, 1.0, 4.0) == [1]
    assert window_region(s, 0.0, 5.0) == [0, 1]


def test_ruin_and_recreate_reaches_what_the_walks_and_exchanges_miss(monkeypatch):
    # The development seed 5050001 (n=50, 4 related units, CCR 5; CP-SAT's proven optimum
    # 160.598 ns). Without ruin and recreate the search stops 7.8% above the optimum; re-placing
    # a connected region or a window of time at once takes it to within 3%.
    _search_alone(monkeypatch)
    p = random_problem(5_050_001, 50, 4, 5.0, "related")
    s = affinity_locality(p)
    check_valid(p, s)
    assert s.makespan_ns <= 160.598 * 1.035
    monkeypatch.setattr(al, "RUIN_SHARE", 0)
    assert affinity_locality(p).makespan_ns > 160.598 * 1.07


def _with_preferences(seed: int, n: int, n_units: int, ccr: float, kind: str, pref: list[int]) -> Problem:
    """A random problem whose tasks prefer units by ``pref`` (a rank per unit, repeated)."""
    p = random_problem(seed, n, n_units, ccr, kind)
    return dataclasses.replace(p, affinity=np.tile(np.asarray(pref[:n_units]), (p.n, 1)))


@settings(max_examples=25, deadline=None)
@given(**_PROBLEMS, pref=st.permutations([0, 1, 2, 3]))
def test_the_search_is_never_longer_than_affinity_list_where_tasks_have_preferences(
    seed, n, n_units, ccr, kind, pref
):
    p = _with_preferences(seed, n, n_units, ccr, kind, pref)
    assert affinity_locality(p).makespan_ns <= affinity_list(p).makespan_ns + 1e-6


def test_affinity_list_seeds_the_search_only_where_tasks_have_preferences():
    plain = random_problem(3, 20, 3, 1.0, "unrelated")
    preferring = _with_preferences(3, 20, 3, 1.0, "unrelated", [2, 0, 1])
    seeds = al._seeds(preferring, None)
    assert len(seeds) == len(al._seeds(plain, None)) + 1
    assert seeds[-1] == affinity_list(preferring)
