"""Lower bounds on the makespan of any schedule (ns), for judging policies and for tests.

- critical path: the longest dependency chain with every op on its fastest unit and free
  communication;
- load: all the work, each op on its fastest unit, spread perfectly over every core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from chips.schema import Chip
from cost_models.base import OpCost
from cost_models.table import CostTable
from graph_ir.ir import ModelGraph
from scheduler.problem import Problem

__all__ = [
    "LP_MAX_PAIRS",
    "ProblemBounds",
    "critical_path_bound_ns",
    "load_bound_ns",
    "problem_bounds",
]


def _least_latency_ns(graph: ModelGraph, table: CostTable) -> list[float]:
    """Each op's least latency over its units (ns), in graph order; a cost object shared by
    identical ops is timed once."""
    seen: dict[int, tuple[OpCost, float]] = {}  # the cost kept with its time: its id stays its own

    def latency_ns(c: OpCost) -> float:
        got = seen.get(id(c))
        if got is None:
            got = seen[id(c)] = (c, c.latency_ns)
        return got[1]

    return [min(map(latency_ns, table.costs[n].values())) for n in graph.order]


def _critical_path_ns(graph: ModelGraph, least_ns: list[float]) -> float:
    dist: dict[str, float] = {}
    pred = graph.g.pred
    for n, best in zip(graph.order, least_ns, strict=True):
        longest = 0.0
        for p in pred[n]:
            if dist[p] > longest:  # noqa: PLR1730 (a call to max costs: once per edge)
                longest = dist[p]
        dist[n] = best + longest
    return max(dist.values(), default=0.0)


def _load_ns(chip: Chip, least_ns: list[float]) -> float:
    return sum(least_ns) / sum(u.cores for u in chip.units)


def critical_path_bound_ns(graph: ModelGraph, table: CostTable) -> float:
    """Longest path with each op at its minimum latency over units, no transfers."""
    return _critical_path_ns(graph, _least_latency_ns(graph, table))


def load_bound_ns(graph: ModelGraph, table: CostTable, chip: Chip) -> float:
    """Total minimum work divided by the total number of cores."""
    return _load_ns(chip, _least_latency_ns(graph, table))


@dataclass(frozen=True, slots=True)
class ProblemBounds:
    """Lower bounds on any schedule of a :class:`~scheduler.problem.Problem` (ns).

    ``lp_load_ns`` is the LP relaxation of the load (tasks split fractionally over units, each
    unit's work divided by its cores); ``nan`` where it was not computed (too large).
    """

    critical_path_ns: float
    load_ns: float
    lp_load_ns: float

    @property
    def best_ns(self) -> float:
        vals = [self.critical_path_ns, self.load_ns]
        if not math.isnan(self.lp_load_ns):
            vals.append(self.lp_load_ns)
        return max(vals)


#: The LP bound is computed up to this many (task, unit) pairs.
LP_MAX_PAIRS = 200_000


def problem_bounds(problem: Problem) -> ProblemBounds:
    """Critical path (fastest units, free transfers), load, and LP-relaxed load bounds."""
    n, m = problem.n, problem.n_units
    if n == 0:
        return ProblemBounds(0.0, 0.0, 0.0)
    fastest = np.min(problem.exec_ns, axis=1)
    dist = [0.0] * n
    for i in range(n):
        dist[i] = float(fastest[i]) + max((dist[j] for j, _ in problem.preds[i]), default=0.0)
    cp = max(dist)
    load = float(fastest.sum()) / sum(problem.cores)
    lp = math.nan
    if n * m <= LP_MAX_PAIRS:
        lp = _lp_load(problem)
    return ProblemBounds(cp, load, lp)


def _lp_load(problem: Problem) -> float:
    # scipy's optimizer imported here: half a second that a run without this bound would pay
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, m = problem.n, problem.n_units
    pairs = [(i, u) for i in range(n) for u in problem.capable[i]]
    nv = len(pairs) + 1  # last variable: C
    c = np.zeros(nv)
    c[-1] = 1.0
    rows, cols, vals = [], [], []
    for k, (i, _u) in enumerate(pairs):
        rows.append(i)
        cols.append(k)
        vals.append(1.0)
    a_eq = coo_matrix((vals, (rows, cols)), shape=(n, nv)).tocsr()
    rows, cols, vals = [], [], []
    for k, (i, u) in enumerate(pairs):
        rows.append(u)
        cols.append(k)
        vals.append(float(problem.exec_ns[i, u]) / problem.cores[u])
    for u in range(m):
        rows.append(u)
        cols.append(nv - 1)
        vals.append(-1.0)
    a_ub = coo_matrix((vals, (rows, cols)), shape=(m, nv)).tocsr()
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    return float(res.fun) * (1 - 1e-9) if res.status == 0 else math.nan
