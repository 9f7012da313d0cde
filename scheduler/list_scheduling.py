"""List scheduling on a :class:`~scheduler.problem.Problem`: take tasks in a priority order and
put each on the unit (and core) where it finishes first, optionally plus a look-ahead term
(PEFT's optimistic cost to the exits); :func:`retime` is list scheduling with every unit given."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from scheduler.problem import Problem, Solution, Timeline, evaluate, priority_order
from scheduler.ranks import placement_rank

__all__ = ["list_schedule", "retime"]


def list_schedule(
    problem: Problem,
    order: Sequence[int],
    *,
    allowed: Sequence[Sequence[int]] | None = None,
    lookahead: np.ndarray | None = None,
    fixed: Sequence[int | None] | None = None,
    insertion: bool = True,
) -> Solution:
    """Schedule tasks in ``order`` (a topological order), each on its earliest-finish unit.

    Parameters
    ----------
    allowed : per task, the units it may use (default: every unit able to run it).
    lookahead : (n, units) extra cost added to the finish time when choosing (e.g. PEFT's OCT).
    fixed : per task, a unit it must use (None: free choice).
    insertion : whether tasks may fill idle gaps on a core.
    """
    n = problem.n
    start = [0.0] * n
    finish = [0.0] * n
    unit = [0] * n
    core = [0] * n
    tl = Timeline(problem.cores, insertion)
    earliest, insert = tl.earliest, tl.insert
    preds, ex, ps, pl = problem.preds, problem.exec_list, problem.pair_scale, problem.pair_lat
    la = lookahead.tolist() if lookahead is not None else None
    makespan = 0.0
    # The search's inner loop: comparisons written out where a call to max() or a tuple key
    # would cost (the same choices: the first unit with the least (finish + look-ahead, finish)).
    for i in order:
        if fixed is not None and fixed[i] is not None:
            cands: Sequence[int] = (fixed[i],)  # type: ignore[assignment]
        elif allowed is not None:
            cands = allowed[i]
        else:
            cands = problem.capable[i]
        pi, ei, lai = preds[i], ex[i], la[i] if la is not None else None
        best_k, best_f, bu, bc, bs = math.inf, math.inf, 0, 0, 0.0
        for u in cands:
            ready = 0.0
            for j, vol in pi:
                uj = unit[j]
                t = finish[j] + (vol * ps[uj][u] + pl[uj][u] if vol and uj != u else 0.0)
                if t > ready:  # noqa: PLR1730
                    ready = t
            s, c = earliest(u, ready, ei[u])
            f = s + ei[u]
            k = f + lai[u] if lai is not None else f
            if k < best_k or (k == best_k and f < best_f):
                best_k, best_f, bu, bc, bs = k, f, u, c, s
        f = bs + ei[bu]
        insert(bu, bc, bs, f)
        unit[i], core[i], start[i], finish[i] = bu, bc, bs, f
        if f > makespan:  # noqa: PLR1730
            makespan = f
    return Solution(tuple(unit), tuple(core), tuple(start), tuple(finish), makespan)


def retime(problem: Problem, assign: Sequence[int]) -> Solution:
    """Exact schedule for a fixed assignment: ready tasks by placement rank, gaps filled."""
    return evaluate(problem, assign, priority_order(problem, placement_rank(problem, assign)))
