"""The abstract scheduling problem shared by task-graph files and ONNX models, and its evaluator.

A :class:`Problem` is a DAG of tasks (in topological order) and a set of units, each with one
or more identical cores. ``exec_ns[i, u]`` is task ``i``'s run time on one core of unit ``u``
(``inf``: the unit cannot run it). An edge carries a ``volume``; it costs
``volume * w * comm_scale[a, b] + comm_lat[a, b]`` when its producer runs in domain ``a`` and its
consumer in a different domain ``b`` (nothing within a domain), ``w`` the ``volume_scale`` of the
producer's unit (a unit that stores its outputs wider than the volumes assume: an fp16 GPU
where the volumes are int8 bytes moves twice as many; 1 by default). A task-graph file gives every
unit its own domain, ``comm_scale = 1`` and ``comm_lat = 0``, so ``volume`` is the edge's
``comm`` time. Tasks are non-preemptive, a core runs one task at a time, transfers do not
contend.

:func:`evaluate` turns an assignment (task -> unit) and a priority order into exact start and
finish times: each task, in order, takes the earliest idle gap (or the end) of the unit's
core that lets it start first once its inputs have arrived.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Problem",
    "Solution",
    "Timeline",
    "evaluate",
    "evaluate_within",
    "make_problem",
    "priority_order",
    "solution_from_times",
    "start_order",
]


@dataclass(frozen=True, slots=True)
class Problem:
    """A task DAG on heterogeneous units (see the module docstring).

    Attributes
    ----------
    tasks : task names, in a topological order.
    kinds : per task, an operator type (ONNX ``op_type``; "" for task-graph files).
    units : unit names; ``cores[u]`` identical cores each.
    exec_ns : (n_tasks, n_units) run time on one core, ``inf`` where the unit cannot run it.
    preds, succs : per task, ``(other task index, volume)`` pairs.
    unit_domain : domain index of each unit.
    comm_scale, comm_lat : (n_domains, n_domains) time per unit of volume and fixed latency.
    volume_scale : per unit, the factor on the volume of an edge whose producer runs there.
    affinity : (n_tasks, n_units) preference rank of each unit for the task (0 = most preferred).
    """

    tasks: tuple[str, ...]
    kinds: tuple[str, ...]
    units: tuple[str, ...]
    cores: tuple[int, ...]
    exec_ns: np.ndarray
    preds: tuple[tuple[tuple[int, float], ...], ...]
    succs: tuple[tuple[tuple[int, float], ...], ...]
    unit_domain: tuple[int, ...]
    comm_scale: np.ndarray
    comm_lat: np.ndarray
    affinity: np.ndarray
    volume_scale: tuple[float, ...] = ()
    # Derived, for the inner loops: per unit pair (scale, latency) as plain floats.
    pair_scale: tuple[tuple[float, ...], ...] = field(repr=False, default=())
    pair_lat: tuple[tuple[float, ...], ...] = field(repr=False, default=())
    capable: tuple[tuple[int, ...], ...] = field(repr=False, default=())
    exec_list: tuple[tuple[float, ...], ...] = field(repr=False, default=())

    @property
    def n(self) -> int:
        return len(self.tasks)

    @property
    def n_units(self) -> int:
        return len(self.units)

    def comm(self, volume: float, u: int, v: int) -> float:
        """Time for an edge of ``volume`` from unit ``u`` to unit ``v``."""
        if volume == 0.0:
            return 0.0
        return volume * self.pair_scale[u][v] + self.pair_lat[u][v]

    def n_edges(self) -> int:
        return sum(len(p) for p in self.preds)


def make_problem(
    tasks: Sequence[str],
    units: Sequence[str],
    exec_ns: np.ndarray,
    edges: Sequence[tuple[int, int, float]],
    *,
    kinds: Sequence[str] | None = None,
    cores: Sequence[int] | None = None,
    unit_domain: Sequence[int] | None = None,
    comm_scale: np.ndarray | None = None,
    comm_lat: np.ndarray | None = None,
    affinity: np.ndarray | None = None,
    volume_scale: Sequence[float] | None = None,
) -> Problem:
    """Build a :class:`Problem`; ``tasks`` must be in topological order (edges go forward).

    Defaults describe a task-graph file: one core per unit, one domain per unit,
    ``comm_scale = 1`` and ``comm_lat = 0`` across domains, no affinity, ``volume_scale = 1``.
    """
    n, m = len(tasks), len(units)
    exec_arr = np.asarray(exec_ns, dtype=float).reshape(n, m)
    preds: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    succs: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for s, d, vol in edges:
        if not s < d:
            raise ValueError(f"edge {tasks[s]!r} -> {tasks[d]!r} goes backwards in the task order")
        preds[d].append((s, float(vol)))
        succs[s].append((d, float(vol)))
    dom = tuple(unit_domain) if unit_domain is not None else tuple(range(m))
    nd = max(dom) + 1 if dom else 0
    if comm_scale is None:
        comm_scale = np.ones((nd, nd)) - np.eye(nd)
    if comm_lat is None:
        comm_lat = np.zeros((nd, nd))
    scale = np.asarray(comm_scale, dtype=float)
    lat = np.asarray(comm_lat, dtype=float)
    wide = tuple(float(x) for x in volume_scale) if volume_scale is not None else (1.0,) * m
    pair_scale = tuple(
        tuple(0.0 if dom[u] == dom[v] else float(scale[dom[u], dom[v]]) * wide[u] for v in range(m)) for u in range(m)
    )
    pair_lat = tuple(
        tuple(0.0 if dom[u] == dom[v] else float(lat[dom[u], dom[v]]) for v in range(m)) for u in range(m)
    )
    finite = np.isfinite(exec_arr).tolist()
    capable = tuple(tuple(u for u, ok in enumerate(row) if ok) for row in finite)
    return Problem(
        tasks=tuple(tasks),
        kinds=tuple(kinds) if kinds is not None else ("",) * n,
        units=tuple(units),
        cores=tuple(cores) if cores is not None else (1,) * m,
        exec_ns=exec_arr,
        preds=tuple(tuple(p) for p in preds),
        succs=tuple(tuple(s) for s in succs),
        unit_domain=dom,
        comm_scale=scale,
        comm_lat=lat,
        affinity=np.asarray(affinity, dtype=int) if affinity is not None else np.zeros((n, m), dtype=int),
        volume_scale=wide,
        pair_scale=pair_scale,
        pair_lat=pair_lat,
        capable=capable,
        exec_list=tuple(map(tuple, exec_arr.tolist())),  # the same floats, without a numpy scalar each
    )


@dataclass(frozen=True, slots=True)
class Solution:
    """Where and when each task runs: ``unit[i]``, ``core[i]``, ``start_ns[i]``, ``finish_ns[i]``."""

    unit: tuple[int, ...]
    core: tuple[int, ...]
    start_ns: tuple[float, ...]
    finish_ns: tuple[float, ...]
    makespan_ns: float

    def order(self) -> list[int]:
        """Tasks by start time (ties: task index), a valid priority order for :func:`evaluate`."""
        return sorted(range(len(self.unit)), key=lambda i: (self.start_ns[i], self.finish_ns[i], i))


class Timeline:
    """Busy intervals per (unit, core), with insertion into idle gaps."""

    __slots__ = ("_finish", "_insertion", "_start")

    def __init__(self, cores: Sequence[int], insertion: bool = True) -> None:
        self._start: list[list[list[float]]] = [[[] for _ in range(c)] for c in cores]
        self._finish: list[list[list[float]]] = [[[] for _ in range(c)] for c in cores]
        self._insertion = insertion

    def earliest(self, unit: int, ready: float, duration: float) -> tuple[float, int]:
        """Earliest start >= ``ready`` of a task of ``duration`` on ``unit``, and the core."""
        best, best_core = math.inf, 0
        all_starts, insertion = self._start[unit], self._insertion
        for c, finishes in enumerate(self._finish[unit]):
            if not finishes or ready >= finishes[-1]:  # idle from ``ready`` on: nothing to bisect
                t = ready
            elif not insertion:
                t = finishes[-1]
            else:
                starts = all_starts[c]
                k = bisect_right(finishes, ready)
                t = ready
                while k < len(starts):
                    if t + duration <= starts[k]:
                        break
                    if finishes[k] > t:  # noqa: PLR1730 (a call to max costs: the search's inner loop)
                        t = finishes[k]
                    k += 1
            if t < best:
                best, best_core = t, c
                if t == ready:
                    break
        return best, best_core

    def insert(self, unit: int, core: int, start: float, finish: float) -> None:
        """Add a busy interval; intervals stay sorted by (start, finish), so a zero-time task
        starting with a longer one goes before it and the finish times stay sorted too (which
        :meth:`earliest` bisects)."""
        starts, finishes = self._start[unit][core], self._finish[unit][core]
        if not starts or start > starts[-1]:
            starts.append(start)
            finishes.append(finish)
            return
        k = bisect_left(starts, start)
        while k < len(starts) and starts[k] == start and finishes[k] <= finish:
            k += 1
        starts.insert(k, start)
        finishes.insert(k, finish)


def _ready_ns(
    pred: Sequence[tuple[int, float]], assign: Sequence[int], u: int, finish: Sequence[float],
    pair_scale: Sequence[Sequence[float]], pair_lat: Sequence[Sequence[float]],
) -> float:
    """When a task with predecessors ``pred`` ((task, volume) pairs) can start on unit ``u``: the
    latest predecessor finish plus its transfer (none from the same unit or for no data)."""
    ready = 0.0
    for j, vol in pred:
        uj = assign[j]
        t = finish[j] + (vol * pair_scale[uj][u] + pair_lat[uj][u] if vol and uj != u else 0.0)
        if t > ready:  # noqa: PLR1730 (a call to max costs here: the search's inner loop)
            ready = t
    return ready


def evaluate(problem: Problem, assign: Sequence[int], order: Sequence[int], insertion: bool = True) -> Solution:
    """Exact start/finish times for ``assign`` (task -> unit), tasks placed in ``order``.

    ``order`` must list every task after its predecessors.
    """
    if insertion and all(c == 1 for c in problem.cores):
        sol = evaluate_within(problem, assign, order, math.inf)
        assert sol is not None
        return sol
    n = problem.n
    start = [0.0] * n
    finish = [0.0] * n
    core = [0] * n
    tl = Timeline(problem.cores, insertion)
    makespan = 0.0
    for i in order:
        u = assign[i]
        ready = _ready_ns(problem.preds[i], assign, u, finish, problem.pair_scale, problem.pair_lat)
        w = problem.exec_list[i][u]
        s, c = tl.earliest(u, ready, w)
        f = s + w
        tl.insert(u, c, s, f)
        start[i], finish[i], core[i] = s, f, c
        makespan = max(makespan, f)
    return Solution(tuple(assign), tuple(core), tuple(start), tuple(finish), makespan)


def evaluate_within(
    problem: Problem, assign: Sequence[int], order: Sequence[int], cutoff_ns: float
) -> Solution | None:
    """:func:`evaluate` with insertion where every unit has one core, or ``None`` as soon as a
    task finishes after ``cutoff_ns`` (a search that only accepts a shorter makespan stops there).

    :class:`Timeline`'s gap search and insertion are inlined (the search's inner loop; the same
    times as :func:`evaluate`, bit for bit). Every unit must have one core.

    Examples
    --------
    >>> import numpy as np
    >>> p = make_problem(["a", "b"], ["u"], np.array([[2.0], [3.0]]), [(0, 1, 0.0)])
    >>> evaluate_within(p, [0, 0], [0, 1], 10.0).makespan_ns
    5.0
    >>> evaluate_within(p, [0, 0], [0, 1], 4.0) is None
    True
    """
    n = problem.n
    start = [0.0] * n
    finish = [0.0] * n
    starts: list[list[float]] = [[] for _ in problem.cores]
    finishes: list[list[float]] = [[] for _ in problem.cores]
    preds, ex, ps, pl = problem.preds, problem.exec_list, problem.pair_scale, problem.pair_lat
    makespan = 0.0
    for i in order:
        u = assign[i]
        ready = _ready_ns(preds[i], assign, u, finish, ps, pl)
        w = ex[i][u]
        st, fi = starts[u], finishes[u]
        s = ready
        if fi and ready < fi[-1]:
            k = bisect_right(fi, ready)
            while k < len(st):
                if s + w <= st[k]:
                    break
                if fi[k] > s:  # noqa: PLR1730 (as above)
                    s = fi[k]
                k += 1
        f = s + w
        if not st or s > st[-1]:
            st.append(s)
            fi.append(f)
        else:
            k = bisect_left(st, s)
            while k < len(st) and st[k] == s and fi[k] <= f:
                k += 1
            st.insert(k, s)
            fi.insert(k, f)
        start[i], finish[i] = s, f
        if f > makespan:
            makespan = f
            if f > cutoff_ns:
                return None
    return Solution(tuple(assign), (0,) * n, tuple(start), tuple(finish), makespan)


def solution_from_times(problem: Problem, assign: Sequence[int], start: Sequence[float]) -> Solution:
    """Rebuild a solution from given start times, re-timed by :func:`evaluate` in
    :func:`start_order` (times from a solver may put a task a rounding error before its
    zero-time predecessor; re-timed in plain start order, it read that predecessor's finish
    before it was set and the result broke the precedence)."""
    return evaluate(problem, assign, start_order(problem, start))


def start_order(problem: Problem, start: Sequence[float], finish: Sequence[float] | None = None) -> list[int]:
    """The tasks by ``start`` (ties: ``finish`` where given, then task index), except that no
    task comes before one of its predecessors: a topological order that always takes the ready
    task starting first.

    For start times that respect the precedences it is the plain sort by ``(start, index)``
    (``(start, finish, index)``): on one core a task taking no time and one that does may start
    at the same instant, and only the order with the one taking no time first keeps both there.
    """
    if finish is None:
        return priority_order(problem, [-s for s in start])
    rank = np.empty(problem.n)
    rank[np.lexsort((finish, start))] = -np.arange(problem.n, dtype=float)  # stable: ties keep the index order
    return priority_order(problem, rank.tolist())


def priority_order(problem: Problem, priority: Sequence[float]) -> list[int]:
    """A topological order that always takes the ready task of highest ``priority``.

    Ties go to the lower task index, so the order is deterministic.
    """
    n, succs = problem.n, problem.succs
    missing = [len(p) for p in problem.preds]
    heap = [(-priority[i], i) for i in range(n) if missing[i] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    append, pop, push = out.append, heapq.heappop, heapq.heappush
    while heap:
        i = pop(heap)[1]
        append(i)
        for j, _vol in succs[i]:
            left = missing[j] = missing[j] - 1
            if left == 0:
                push(heap, (-priority[j], j))
    return out
