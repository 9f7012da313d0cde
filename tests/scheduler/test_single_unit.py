"""The fastest single units: the same as trying every unit, with fewer tried."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.generators import random_problem
from scheduler.problem import Problem, make_problem
from scheduler.single_unit import busy_bound_ns, fastest_single_units, single_unit_each


@st.composite
def _problems(draw: st.DrawFn) -> Problem:
    """Random DAGs, some units unable to run some tasks, units of 1-3 cores."""
    p = random_problem(
        draw(st.integers(0, 2**31 - 1)), draw(st.integers(1, 25)), draw(st.integers(1, 4)),
        draw(st.sampled_from([0.0, 1.0, 5.0])), draw(st.sampled_from(["related", "unrelated"])),
    )  # fmt: skip
    ex = p.exec_ns.copy()
    for i in range(p.n):
        keep = draw(st.sampled_from(np.flatnonzero(np.isfinite(ex[i])).tolist()))  # one unit still runs it
        off = draw(st.lists(st.integers(0, p.n_units - 1), max_size=p.n_units - 1, unique=True))
        ex[i, [u for u in off if u != keep]] = np.inf
    cores = draw(st.lists(st.integers(1, 3), min_size=p.n_units, max_size=p.n_units))
    edges = [(j, i, vol) for i, preds in enumerate(p.preds) for j, vol in preds]
    return make_problem(p.tasks, p.units, ex, edges, cores=cores, unit_domain=p.unit_domain,
                        comm_scale=p.comm_scale, comm_lat=p.comm_lat)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(p=_problems(), most=st.integers(1, 4), within=st.sampled_from([1.0, 1.5, 2.5, math.inf]))
def test_fastest_single_units_are_the_sorted_head_of_every_unit(p: Problem, most: int, within: float) -> None:
    each = sorted(single_unit_each(p), key=lambda s: s.makespan_ns)
    want = [s for s in each[:most] if s.makespan_ns <= within * each[0].makespan_ns]
    assert fastest_single_units(p, most, within) == want


@settings(max_examples=60, deadline=None)
@given(p=_problems())
def test_busy_bound_is_below_every_single_unit_makespan(p: Problem) -> None:
    for bound, s in zip(busy_bound_ns(p), single_unit_each(p)):
        assert bound <= s.makespan_ns * (1 + 1e-9)


def test_a_unit_bound_above_the_best_is_not_scheduled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of 3: y alone takes 3 x 1 ns, x alone 3 x 10 ns (its bound 30 > 3): x is never tried."""
    import scheduler.single_unit as su

    tried: list[int] = []
    on_unit = su._on_unit
    monkeypatch.setattr(su, "_on_unit", lambda p, u, *a: tried.append(u) or on_unit(p, u, *a))
    p = make_problem(["a", "b", "c"], ["x", "y"], np.array([[10.0, 1.0]] * 3), [(0, 1, 0.0), (1, 2, 0.0)])
    assert busy_bound_ns(p).tolist() == [30.0, 3.0]
    (best,) = fastest_single_units(p, 1)
    assert tried == [1]
    assert best.unit == (1, 1, 1) and best.makespan_ns == 3.0
