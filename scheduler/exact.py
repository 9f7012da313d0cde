"""``exact``: a mixed-integer model solved by HiGHS (``scipy.optimize.milp``).

Variables: ``x[i, k]`` (task ``i`` on core slot ``k``), start times ``s[i]``, the makespan ``C``;
per edge with a transfer cost, "different domain" indicators; per pair of tasks that no path
orders, an order bit ``z`` and a "same slot" indicator ``q`` with big-M disjunctions. The best
heuristic schedule caps ``C`` so the solver only searches for better ones, and is the answer if
the solver finds nothing better in time. The result says whether it is proven optimal and, if
not, the gap to the solver's bound.

Tightening (each is valid for every schedule no longer than the incumbent ``U``):

- time windows: with ``head[i]`` the longest chain of fastest run times before ``i`` and
  ``tail[i]`` the one after it, ``head[i] <= s[i] <= U - tail[i] - fastest[i]`` and
  ``C >= s[i] + dur[i] + tail[i]``;
- big-M per ordered pair from the windows (``U - tail[i] - head[j]``, not ``U``); a pair whose
  windows cannot overlap needs no disjunction, and an order the windows forbid is fixed;
- per core slot, the work placed on it is at most ``C``;
- identical cores of one unit are interchangeable: the ``t``-th task able to run on a unit may
  only use its cores ``0..t`` (symmetry breaking).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from scheduler.problem import Problem, Solution, solution_from_times

__all__ = ["ExactResult", "exact"]


@dataclass(frozen=True, slots=True)
class ExactResult:
    """The exact policy's answer: the schedule, the solver's lower bound, and whether it is proven."""

    solution: Solution
    bound_ns: float
    proven: bool

    @property
    def gap(self) -> float:
        """Relative gap ``(makespan - bound) / makespan`` (0 when proven)."""
        m = self.solution.makespan_ns
        return 0.0 if self.proven or m <= 0 else max(0.0, (m - self.bound_ns) / m)


def _reach(problem: Problem) -> list[set[int]]:
    """Descendants of each task."""
    desc: list[set[int]] = [set() for _ in range(problem.n)]
    for i in range(problem.n - 1, -1, -1):
        for j, _ in problem.succs[i]:
            desc[i].add(j)
            desc[i] |= desc[j]
    return desc


def _windows(problem: Problem) -> tuple[list[float], list[float], list[float]]:
    """Per task: fastest run time, longest fastest chain before it (head) and after it (tail), ns."""
    n = problem.n
    fast = [min((problem.exec_list[i][u] for u in problem.capable[i]), default=0.0) for i in range(n)]
    head = [0.0] * n
    for i in range(n):
        head[i] = max((head[j] + fast[j] for j, _ in problem.preds[i]), default=0.0)
    tail = [0.0] * n
    for i in range(n - 1, -1, -1):
        tail[i] = max((fast[j] + tail[j] for j, _ in problem.succs[i]), default=0.0)
    return fast, head, tail


def exact(
    problem: Problem,
    incumbent: Solution,
    lower_bound_ns: float = 0.0,
    time_limit_s: float = 10.0,
) -> ExactResult:
    """Optimal schedule of ``problem`` (or the best found in ``time_limit_s`` with its gap).

    ``incumbent`` is a valid schedule (e.g. the best heuristic); ``lower_bound_ns`` a known bound.
    """
    n = problem.n
    if n == 0:
        return ExactResult(incumbent, 0.0, True)
    ub = incumbent.makespan_ns
    fast, head, tail = _windows(problem)
    lb = max(lower_bound_ns, max(h + f + t for h, f, t in zip(head, fast, tail, strict=True)))
    if ub <= lb * (1 + 1e-9):
        return ExactResult(incumbent, ub, True)
    # Every bound below derives from the incumbent's makespan; a little slack keeps the
    # incumbent itself feasible in floating point (a schedule that meets a big-M or a window
    # exactly was otherwise cut off, the model came out infeasible and nothing was proven).
    cap = ub * (1 + 1e-6) + 1e-6
    slots = [(u, c) for u in range(problem.n_units) for c in range(problem.cores[u])]
    ex = problem.exec_ns
    var: list[tuple[float, float, int]] = []  # (lb, ub, integrality)
    cost: list[float] = []

    def new(lo: float, hi: float, integer: int) -> int:
        var.append((lo, hi, integer))
        cost.append(0.0)
        return len(var) - 1

    x: dict[tuple[int, int], int] = {}
    seen = [0] * problem.n_units  # tasks so far able to run on each unit (symmetry breaking)
    for i in range(n):
        for k, (u, c) in enumerate(slots):
            if math.isfinite(ex[i, u]) and c <= seen[u]:
                x[i, k] = new(0, 1, 1)
        for u in problem.capable[i]:
            seen[u] += 1
    # Latest start: the incumbent's makespan less the task's fastest run and the tail after it.
    latest = [max(head[i], cap - tail[i] - fast[i]) for i in range(n)]
    s = [new(head[i], latest[i], 0) for i in range(n)]
    cmax = new(lb, cap, 0)
    cost[cmax] = 1.0
    rows: list[tuple[dict[int, float], float, float]] = []
    slots_of = {i: [k for k in range(len(slots)) if (i, k) in x] for i in range(n)}

    def dur(i: int) -> dict[int, float]:
        return {x[i, k]: float(ex[i, slots[k][0]]) for k in slots_of[i]}

    for i in range(n):
        rows.append(({x[i, k]: 1.0 for k in slots_of[i]}, 1.0, 1.0))
        # C >= s_i + dur_i + tail_i
        row = {cmax: 1.0, s[i]: -1.0}
        for v, w in dur(i).items():
            row[v] = -w
        rows.append((row, tail[i], math.inf))
    # The work on one core slot fits in the makespan.
    for k, (u, _c) in enumerate(slots):
        row = {x[i, k]: float(ex[i, u]) for i in range(n) if (i, k) in x}
        if row:
            row[cmax] = -1.0
            rows.append((row, -math.inf, 0.0))
    domains = sorted(set(problem.unit_domain))
    nd = len(domains)
    dom_slots = {d: [k for k, (u, _c) in enumerate(slots) if problem.unit_domain[u] == d] for d in domains}
    for j in range(n):
        for i, vol in problem.preds[j]:
            # s_j >= s_i + dur_i + comm
            row = {s[j]: 1.0, s[i]: -1.0}
            for v, w in dur(i).items():
                row[v] = row.get(v, 0.0) - w
            if vol and nd > 1:
                pair = {
                    (a, b): vol * float(problem.comm_scale[a, b]) + float(problem.comm_lat[a, b])
                    for a in domains for b in domains if a != b
                }  # fmt: skip
                costs = set(pair.values())
                if len(costs) == 1:
                    # One cost for any cross-domain edge: d >= X_ia - X_ja for each domain a.
                    c0 = costs.pop()
                    d = new(0, 1, 0)
                    row[d] = -c0
                    for a in domains:
                        r = {d: 1.0}
                        for k in dom_slots[a]:
                            if (i, k) in x:
                                r[x[i, k]] = r.get(x[i, k], 0.0) - 1.0
                            if (j, k) in x:
                                r[x[j, k]] = r.get(x[j, k], 0.0) + 1.0
                        rows.append((r, 0.0, math.inf))
                else:
                    for (a, b), c_ab in pair.items():
                        e = new(0, 1, 0)
                        row[e] = -c_ab
                        r = {e: 1.0}
                        for k in dom_slots[a]:
                            if (i, k) in x:
                                r[x[i, k]] = r.get(x[i, k], 0.0) - 1.0
                        for k in dom_slots[b]:
                            if (j, k) in x:
                                r[x[j, k]] = r.get(x[j, k], 0.0) - 1.0
                        rows.append((r, -1.0, math.inf))
            rows.append((row, 0.0, math.inf))
    desc = _reach(problem)
    for i in range(n):
        for j in range(i + 1, n):
            if j in desc[i]:
                continue
            shared = [k for k in slots_of[i] if (j, k) in x]
            if not shared:
                continue
            # Big-M per order from the windows: i's end minus j's start can be at most m_ij.
            m_ij = cap - tail[i] - head[j]
            m_ji = cap - tail[j] - head[i]
            i_first = head[i] + fast[i] + fast[j] + tail[j] <= cap  # i then j on one core fits
            j_first = head[j] + fast[j] + fast[i] + tail[i] <= cap
            if not i_first and not j_first:
                for k in shared:  # they cannot share a core
                    rows.append(({x[i, k]: 1.0, x[j, k]: 1.0}, -math.inf, 1.0))
                continue
            if m_ij <= 0 or m_ji <= 0:
                continue  # the windows already order them
            z = new(0 if j_first else 1, 1 if i_first else 0, 1)  # 1: i before j
            q = new(0, 1, 0)  # 1: same slot
            for k in shared:
                rows.append(({q: 1.0, x[i, k]: -1.0, x[j, k]: -1.0}, -1.0, math.inf))
            # s_j >= s_i + dur_i - M(1 - z) - M(1 - q)  ->  s_j - s_i - dur_i - M z - M q >= -2M
            r1 = {s[j]: 1.0, s[i]: -1.0, z: -m_ij, q: -m_ij}
            for v, w in dur(i).items():
                r1[v] = r1.get(v, 0.0) - w
            rows.append((r1, -2 * m_ij, math.inf))
            # s_i >= s_j + dur_j - M z - M(1 - q)  ->  s_i - s_j - dur_j + M z - M q >= -M
            r2 = {s[i]: 1.0, s[j]: -1.0, z: m_ji, q: -m_ji}
            for v, w2 in dur(j).items():
                r2[v] = r2.get(v, 0.0) - w2
            rows.append((r2, -m_ji, math.inf))
    data: list[float] = []
    ri: list[int] = []
    ci: list[int] = []
    lo: list[float] = []
    hi: list[float] = []
    for row_ix, (coefs, low, high) in enumerate(rows):
        for v, w3 in coefs.items():
            ri.append(row_ix)
            ci.append(v)
            data.append(w3)
        lo.append(low)
        hi.append(high)
    a_mat = coo_matrix((data, (ri, ci)), shape=(len(rows), len(var))).tocsr()
    res = milp(
        c=np.array(cost),
        constraints=LinearConstraint(a_mat, np.array(lo), np.array(hi)),
        integrality=np.array([v[2] for v in var]),
        bounds=Bounds(np.array([v[0] for v in var]), np.array([v[1] for v in var])),
        options={"time_limit": time_limit_s, "mip_rel_gap": 1e-7, "presolve": True},
    )
    bound = max(lb, float(getattr(res, "mip_dual_bound", lb) or lb))
    best = incumbent
    if res.x is not None:
        sol_x = res.x
        assign = [0] * n
        for i in range(n):
            ks = slots_of[i]
            vals = [float(sol_x[x[i, k]]) for k in ks]
            assign[i] = slots[ks[vals.index(max(vals))]][0]
        cand = solution_from_times(problem, assign, [float(sol_x[v]) for v in s])
        if cand.makespan_ns < best.makespan_ns:
            best = cand
    proven = res.status == 0 or best.makespan_ns <= bound * (1 + 1e-6)
    if res.status == 0:
        bound = max(bound, min(best.makespan_ns, float(res.fun)) if res.fun is not None else bound)
    return ExactResult(best, min(bound, best.makespan_ns), proven)
