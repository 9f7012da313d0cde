"""Busy cores over time: the step function, its integral, and the per-unit totals."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.analysis.busy import (
    busy_core_ps_until,
    busy_core_steps,
    busy_union_ps,
    clocked_core_steps,
    unit_active_ps,
    unit_busy_ps,
)
from hwsim.sim.engine import OpRecord, Trace


def rec(start: int, end: int, cores: tuple[int, ...] = (), unit: str = "npu") -> OpRecord:
    return OpRecord(f"op{start}-{end}", "Conv", unit, cores[0] if cores else 0, start, end, 0, cores=cores)


#: (start_ps, duration_ps, cores occupied) of random ops.
op_lists = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 300), st.integers(1, 3)), max_size=12)


def records(ops: list[tuple[int, int, int]]) -> list[OpRecord]:
    return [rec(s, s + d, tuple(range(n)) if n > 1 else ()) for s, d, n in ops]


class TestBusyCoreSteps:
    def test_empty_and_zero_length(self) -> None:
        assert busy_core_steps([]) == []
        assert busy_core_steps([rec(5, 5)]) == []

    def test_overlap_and_split(self) -> None:
        ops = [rec(0, 10), rec(5, 20, cores=(1, 2)), rec(20, 30)]
        # 1 core, then 3 (the split op holds two), back to 1 at 10; at 20 one op ends as the next starts
        assert busy_core_steps(ops) == [(0, 1), (5, 3), (10, 2), (20, 1), (30, 0)]

    @settings(max_examples=60, deadline=None)
    @given(op_lists)
    def test_levels_count_the_cores_running(self, ops: list[tuple[int, int, int]]) -> None:
        recs = records(ops)
        steps = busy_core_steps(recs)
        assert [t for t, _ in steps] == sorted({t for t, _ in steps})
        for t, level in steps:
            assert level == sum(len(r.all_cores) for r in recs if r.start_ps <= t < r.end_ps)
        assert not steps or steps[-1][1] == 0


class TestIntegral:
    def test_by_hand(self) -> None:
        steps = [(0, 1), (5, 2), (10, 0)]
        got = busy_core_ps_until(steps, np.array([-1.0, 0.0, 2.5, 5.0, 7.0, 10.0, 50.0]))
        assert got.tolist() == [0.0, 0.0, 2.5, 5.0, 9.0, 15.0, 15.0]
        assert busy_core_ps_until([], np.array([0.0, 3.0])).tolist() == [0.0, 0.0]

    @settings(max_examples=60, deadline=None)
    @given(op_lists, st.lists(st.integers(0, 1400), min_size=1, max_size=8))
    def test_matches_a_brute_force_count(self, ops: list[tuple[int, int, int]], times: list[int]) -> None:
        recs = records(ops)
        got = busy_core_ps_until(busy_core_steps(recs), np.array(times, dtype=np.float64))
        want = [sum(min(max(t - r.start_ps, 0), r.duration_ps) * len(r.all_cores) for r in recs) for t in times]
        assert got.tolist() == pytest.approx(want)


class TestTotals:
    def test_union_and_core_time(self) -> None:
        assert busy_union_ps([]) == 0
        assert busy_union_ps([(0, 10), (5, 15), (20, 25)]) == 20
        ops = (rec(0, 10), rec(5, 15, cores=(1, 2)), rec(0, 7, unit="cpu"))
        trace = Trace(20, ops, (), ())
        assert unit_busy_ps(trace, "npu") == 10 + 2 * 10
        assert unit_active_ps(trace, "npu") == 15
        assert (unit_busy_ps(trace, "gpu"), unit_active_ps(trace, "gpu")) == (0, 0)

    @settings(max_examples=40, deadline=None)
    @given(op_lists)
    def test_core_time_is_the_integral_to_the_end(self, ops: list[tuple[int, int, int]]) -> None:
        recs = tuple(records(ops))
        end = max((r.end_ps for r in recs), default=0)
        trace = Trace(end, recs, (), ())
        total = busy_core_ps_until(busy_core_steps(recs), np.array([float(end)]))[0]
        assert total == unit_busy_ps(trace, "npu")


def _steps_by_dict(recs: list[OpRecord]) -> list[tuple[int, int]]:
    """The busy-core steps summed in a dict of changes, time by time."""
    change: dict[int, int] = {}
    for r in recs:
        change[r.start_ps] = change.get(r.start_ps, 0) + len(r.all_cores)
        change[r.end_ps] = change.get(r.end_ps, 0) - len(r.all_cores)
    steps, busy = [], 0
    for t in sorted(change):
        if change[t]:
            busy += change[t]
            steps.append((t, busy))
    return steps


@settings(max_examples=60, deadline=None)
@given(op_lists, st.sampled_from([1.0, 0.5]))
def test_steps_are_the_dict_sums_and_one_clock_its_steps(ops: list[tuple[int, int, int]], factor: float) -> None:
    """The int64 path gives the dict's steps as Python ints; with one clock factor the clocked
    steps are those steps under that factor, as the general path counts them."""
    recs = records(ops)
    steps = busy_core_steps(recs)
    assert steps == _steps_by_dict(recs) and all(type(t) is int and type(n) is int for t, n in steps)
    one_clock = [replace(r, clock_factor=factor) for r in recs]
    later = replace(rec(2000, 2001), clock_factor=0.25)  # a second factor, after every op: the general path
    expected = [(t, {factor: n}) for t, n in steps]
    assert clocked_core_steps(one_clock) == expected
    assert clocked_core_steps([*one_clock, later])[: len(steps)] == expected
