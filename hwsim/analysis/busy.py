"""Busy cores over time: the one home of how a trace's op records occupy a unit's cores.

An op split across ``k`` cores keeps each of them busy (``len(record.all_cores)``); core-time
sums over cores, *active* time is wall time with at least one core busy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hwsim.sim.engine import OpRecord, Trace

__all__ = [
    "busy_core_ps_until",
    "busy_core_steps",
    "busy_union_ps",
    "clocked_core_steps",
    "unit_active_ps",
    "unit_busy_ps",
    "unit_busy_ps_by_clock",
]


def busy_union_ps(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals.

    >>> busy_union_ps([(0, 10), (5, 15), (20, 25)])
    20
    """
    total, cur_start, cur_end = 0, None, None
    for s, e in sorted(intervals):
        if cur_end is None or s > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


def unit_busy_ps(trace: Trace, unit: str) -> int:
    """Core-time the unit was busy (a split op counts once per core it occupied), in ps."""
    return sum(r.duration_ps * len(r.all_cores) for r in trace.ops if r.unit == unit)


def unit_busy_ps_by_clock(trace: Trace, unit: str) -> dict[float, int]:
    """:func:`unit_busy_ps` by the clock factor the ops ran at (``OpRecord.clock_factor``), in ps;
    ``{1.0: busy}`` when nothing was throttled (empty: the unit ran nothing)."""
    out: dict[float, int] = {}
    for r in trace.ops:
        if r.unit == unit:
            out[r.clock_factor] = out.get(r.clock_factor, 0) + r.duration_ps * len(r.all_cores)
    return out


def unit_active_ps(trace: Trace, unit: str) -> int:
    """Wall time at least one core of the unit was busy, in ps."""
    return busy_union_ps([(r.start_ps, r.end_ps) for r in trace.ops if r.unit == unit])


def busy_core_steps(ops: Iterable[OpRecord]) -> list[tuple[int, int]]:
    """``(time_ps, busy cores)`` at every moment the number of busy cores changes.

    >>> from hwsim.sim.engine import OpRecord
    >>> busy_core_steps([OpRecord("a", "Conv", "npu", 0, 0, 10, 0),
    ...                  OpRecord("b", "Conv", "npu", 1, 5, 10, 0)])
    [(0, 1), (5, 2), (10, 0)]
    """
    starts, ends, cores = [], [], []
    for r in ops:
        starts.append(r.start_ps)
        ends.append(r.end_ps)
        cores.append(len(r.all_cores))  # an op split across cores keeps each of them busy
    return _steps(starts, ends, cores)


def _steps(starts: list[int], ends: list[int], cores: list[int]) -> list[tuple[int, int]]:
    """:func:`busy_core_steps` of ops from ``starts[i]`` to ``ends[i]`` on ``cores[i]`` cores:
    each time's summed change, the times where it is not zero, the running sum. In numpy where
    the times and counts are int64 (exact), else in Python."""
    all_times = starts + ends
    times = np.asarray(all_times)
    if len(times) and times.dtype == np.int64 and max(abs(int(times.min())), int(times.max())) < 2**62:
        at, first, where = np.unique(times, return_index=True, return_inverse=True)
        delta = np.zeros(len(at), dtype=np.int64)
        np.add.at(delta, where, np.asarray(cores + [-n for n in cores], dtype=np.int64))
        changed = delta != 0
        # each time as the records' own int object (a power timeline keeps them all run long)
        at_changed = [all_times[i] for i in first[changed].tolist()]
        return list(zip(at_changed, np.cumsum(delta[changed]).tolist(), strict=True))
    change: dict[int, int] = {}
    for s, e, n in zip(starts, ends, cores, strict=True):
        change[s] = change.get(s, 0) + n
        change[e] = change.get(e, 0) - n
    steps, busy = [], 0
    for t in sorted(change):
        if change[t]:
            busy += change[t]
            steps.append((t, busy))
    return steps


def clocked_core_steps(ops: Iterable[OpRecord]) -> list[tuple[int, dict[float, int]]]:
    """``(time_ps, busy cores by clock factor)`` at every moment the busy cores change.

    Counts stay integers, so a unit whose cores all end is exactly idle again.

    >>> from hwsim.sim.engine import OpRecord
    >>> clocked_core_steps([OpRecord("a", "Conv", "npu", 0, 0, 10, 0),
    ...                     OpRecord("b", "Conv", "npu", 1, 5, 10, 0, clock_factor=0.5)])
    [(0, {1.0: 1}), (5, {1.0: 1, 0.5: 1}), (10, {1.0: 0, 0.5: 0})]
    """
    ops = list(ops)
    factors = {r.clock_factor for r in ops}
    if len(factors) == 1:  # one clock (no thermal throttling): the plain steps under that factor
        (f,) = factors
        return [(t, {f: n}) for t, n in busy_core_steps(ops)]
    delta: dict[int, dict[float, int]] = {}
    for r in ops:
        n, f = len(r.all_cores), r.clock_factor
        for t, d in ((r.start_ps, n), (r.end_ps, -n)):
            at = delta.setdefault(t, {})
            at[f] = at.get(f, 0) + d
    steps: list[tuple[int, dict[float, int]]] = []
    busy: dict[float, int] = {}
    for t in sorted(delta):
        if any(delta[t].values()):
            for f, d in delta[t].items():
                busy[f] = busy.get(f, 0) + d
            steps.append((t, dict(busy)))
    return steps


def busy_core_ps_until(steps: Sequence[tuple[int, int]], times_ps: np.ndarray) -> np.ndarray:
    """Busy core-time from 0 up to each of ``times_ps``, from :func:`busy_core_steps` ``steps``.

    The integral of the busy-core step function: ``before[i]`` core-picoseconds up to
    ``times_ps[i]``; differences between two times are the core-time inside that span.

    >>> busy_core_ps_until([(0, 1), (5, 2), (10, 0)], np.array([0.0, 5.0, 7.0, 20.0])).tolist()
    [0.0, 5.0, 9.0, 15.0]
    """
    if not steps:
        return np.zeros(len(times_ps))
    t = np.array([s for s, _ in steps], dtype=np.float64)
    level = np.array([n for _, n in steps], dtype=np.float64)
    done = np.concatenate(([0.0], np.cumsum(level[:-1] * np.diff(t))))  # core-time up to each step
    k = np.searchsorted(t, times_ps, side="right") - 1
    at = np.maximum(k, 0)
    return np.where(k >= 0, done[at] + level[at] * (times_ps - t[at]), 0.0)
