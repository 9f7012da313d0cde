"""list_schedule, Timeline.earliest, priority_order and the ranks against their plain forms (the
inner loops are written out for speed: the same results, bit for bit)."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.generators import random_problem
from scheduler.list_scheduling import list_schedule
from scheduler.problem import Problem, Solution, Timeline, make_problem, priority_order
from scheduler.ranks import mean_exec, placement_rank, upward_rank


def _plain_earliest(tl: Timeline, unit: int, ready: float, duration: float, insertion: bool) -> tuple[float, int]:
    """Timeline.earliest as first written: a max() per step, every core searched the same way."""
    best, best_core = math.inf, 0
    for c, (starts, finishes) in enumerate(zip(tl._start[unit], tl._finish[unit], strict=True)):
        if not finishes:
            t = ready
        elif not insertion:
            t = max(ready, finishes[-1])
        else:
            k = bisect_right(finishes, ready)
            t = ready
            while k < len(starts):
                if t + duration <= starts[k]:
                    break
                t = max(t, finishes[k])
                k += 1
        if t < best:
            best, best_core = t, c
            if t == ready:
                break
    return best, best_core


def _plain_list_schedule(
    problem: Problem, order: Sequence[int], lookahead: np.ndarray | None, fixed: Sequence[int | None] | None,
    insertion: bool,
) -> Solution:  # fmt: skip
    """list_schedule as first written: tuple keys and max()."""
    n = problem.n
    start, finish, unit, core = [0.0] * n, [0.0] * n, [0] * n, [0] * n
    tl = Timeline(problem.cores, insertion)
    preds, ex, ps, pl = problem.preds, problem.exec_list, problem.pair_scale, problem.pair_lat
    la = lookahead.tolist() if lookahead is not None else None
    makespan = 0.0
    for i in order:
        cands = (fixed[i],) if fixed is not None and fixed[i] is not None else problem.capable[i]
        best_key, best = (math.inf, math.inf), (0, 0, 0.0)
        for u in cands:
            ready = 0.0
            for j, vol in preds[i]:
                uj = unit[j]
                ready = max(ready, finish[j] + (vol * ps[uj][u] + pl[uj][u] if vol and uj != u else 0.0))
            w = ex[i][u]
            s, c = _plain_earliest(tl, u, ready, w, insertion)
            f = s + w
            key = (f + la[i][u], f) if la is not None else (f, f)
            if key < best_key:
                best_key, best = key, (u, c, s)
        u, c, s = best
        w = ex[i][u]
        tl.insert(u, c, s, s + w)
        unit[i], core[i], start[i], finish[i] = u, c, s, s + w
        makespan = max(makespan, s + w)
    return Solution(tuple(unit), tuple(core), tuple(start), tuple(finish), makespan)


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    """Random problems with several cores per unit, edges carrying data, and (rounded times)
    many ties between units and cores."""
    n_units = draw(st.integers(1, 4))
    base = random_problem(draw(st.integers(0, 2**31 - 1)), draw(st.integers(1, 30)), n_units, 1.0, "unrelated")
    ex = np.round(base.exec_ns) if draw(st.booleans()) else base.exec_ns
    vol = draw(st.sampled_from([0.0, 1.0, 3.5]))
    edges = [(j, i, vol * (j % 3)) for i, pr in enumerate(base.preds) for j, _ in pr]
    cores = draw(st.lists(st.integers(1, 3), min_size=n_units, max_size=n_units))
    return make_problem(base.tasks, base.units, ex, edges, cores=cores, comm_scale=np.full((n_units, n_units), 0.5))


@settings(max_examples=150, deadline=None)
@given(p=problems(), insertion=st.booleans(), ahead=st.booleans(), pin=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_list_schedule_is_its_plain_form(p, insertion, ahead, pin, seed):
    rng = np.random.default_rng(seed)
    order = priority_order(p, upward_rank(p))
    lookahead = np.round(rng.uniform(0, 5, size=(p.n, p.n_units))) if ahead else None
    fixed = [caps[int(rng.integers(len(caps)))] if rng.random() < 0.5 else None for caps in p.capable] if pin else None
    got = list_schedule(p, order, lookahead=lookahead, fixed=fixed, insertion=insertion)
    assert got == _plain_list_schedule(p, order, lookahead, fixed, insertion)


@settings(max_examples=200, deadline=None)
@given(
    cores=st.integers(1, 3),
    busy=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6)), max_size=12),
    ready=st.integers(0, 30),
    duration=st.integers(0, 8),
    insertion=st.booleans(),
)
def test_earliest_is_its_plain_form(cores, busy, ready, duration, insertion):
    tl = Timeline([cores], insertion)
    for at, w in busy:  # placed as list scheduling places them: no overlaps on a core
        s, c = _plain_earliest(tl, 0, float(at), float(w), insertion)
        tl.insert(0, c, s, s + w)
    want = _plain_earliest(tl, 0, float(ready), float(duration), insertion)
    assert tl.earliest(0, float(ready), float(duration)) == want


def _plain_priority_order(problem: Problem, priority: Sequence[float]) -> list[int]:
    missing = [len(p) for p in problem.preds]
    heap = [(-priority[i], i) for i in range(problem.n) if missing[i] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, i = heapq.heappop(heap)
        out.append(i)
        for j, _vol in problem.succs[i]:
            missing[j] -= 1
            if missing[j] == 0:
                heapq.heappush(heap, (-priority[j], j))
    return out


def _plain_upward_rank(problem: Problem) -> list[float]:
    w = mean_exec(problem)
    sc = float(np.asarray(problem.pair_scale).sum() / problem.n_units**2)
    la = float(np.asarray(problem.pair_lat).sum() / problem.n_units**2)
    rank = [0.0] * problem.n
    for i in range(problem.n - 1, -1, -1):
        rank[i] = w[i] + max(((vol * sc + la if vol else 0.0) + rank[j] for j, vol in problem.succs[i]), default=0.0)
    return rank


def _plain_placement_rank(problem: Problem, assign: Sequence[int]) -> list[float]:
    ex, ps, pl = problem.exec_list, problem.pair_scale, problem.pair_lat
    rank = [0.0] * problem.n
    for i in range(problem.n - 1, -1, -1):
        u = assign[i]
        best = 0.0
        for j, vol in problem.succs[i]:
            v = assign[j]
            best = max(best, rank[j] + (vol * ps[u][v] + pl[u][v] if vol and u != v else 0.0))
        rank[i] = ex[i][u] + best
    return rank


@settings(max_examples=100, deadline=None)
@given(p=problems(), seed=st.integers(0, 2**31 - 1))
def test_orders_and_ranks_are_their_plain_forms(p, seed):
    rng = np.random.default_rng(seed)
    priority = np.round(rng.uniform(0, 4, size=p.n)).tolist()  # ties: the lower index first
    assert priority_order(p, priority) == _plain_priority_order(p, priority)
    assert upward_rank(p) == _plain_upward_rank(p)
    assign = [caps[int(rng.integers(len(caps)))] for caps in p.capable]
    assert placement_rank(p, assign) == _plain_placement_rank(p, assign)
