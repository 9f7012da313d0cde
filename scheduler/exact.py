"""``exact``: OR-Tools CP-SAT (:mod:`scheduler.exact_cpsat`, a dependency) where it imports, else
a mixed-integer model solved by HiGHS (``scipy.optimize.milp``).

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
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.exact_cpsat import cpsat_available, solve_cpsat
from scheduler.problem import Problem, Solution, solution_from_times

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

__all__ = ["EXACT_TIME_LIMIT_S", "SOLVERS", "ExactResult", "exact", "time_windows"]

def milp(**kwargs: Any) -> OptimizeResult:
    """``scipy.optimize.milp``, imported on the first call: scipy's optimizer takes about half a
    second to import, and a ``hwsim run`` without the exact policy never needs it."""
    from scipy.optimize import milp as scipy_milp

    return scipy_milp(**kwargs)


#: ``exact`` gives up after this long (s) and keeps the best schedule found.
EXACT_TIME_LIMIT_S = 10.0
#: What ``exact(solver=...)`` accepts.
SOLVERS = ("auto", "cpsat", "highs")

#: ``scipy.optimize.milp``'s statuses that answer: optimal (0), time or node limit (1).
_ANSWERED = (0, 1)

#: HiGHS options of each try until one answers (see :meth:`_Milp.solve`). scipy passes
#: ``random_seed`` to HiGHS as it is, with a warning that :meth:`_Milp._milp` silences.
_ATTEMPTS: tuple[dict[str, object], ...] = (
    {"presolve": True},
    {"presolve": False},
    {"presolve": True, "random_seed": 1},
    {"presolve": False, "random_seed": 1},
)

#: The tries where a task's duration repeats over its slots (see :meth:`_Milp.solve`): HiGHS's
#: presolve only after two tries without it.
_ATTEMPTS_NO_PRESOLVE_FIRST: tuple[dict[str, object], ...] = (
    {"presolve": False},
    {"presolve": False, "random_seed": 1},
    {"presolve": True},
    {"presolve": True, "random_seed": 1},
)


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


def time_windows(problem: Problem) -> tuple[list[float], list[float], list[float]]:
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


def _repeated_run_times(problem: Problem) -> bool:
    """Whether some task runs equally long on two core slots (two cores of one unit, or two
    units alike): the repeated coefficients HiGHS's presolve misuses (see :meth:`_Milp.solve`)."""
    for i in range(problem.n):
        runs = [float(problem.exec_ns[i, u]) for u in problem.capable[i] for _ in range(problem.cores[u])]
        if len(set(runs)) < len(runs):
            return True
    return False


#: A constraint row: coefficients (variable -> weight), lower and upper bound.
_Row = tuple[dict[int, float], float, float]


class _Milp:
    """The model of the module docstring while it is built: variables ``(lb, ub, integrality)``,
    the objective (the makespan), and constraint rows. The windows (``fast``, ``head``,
    ``tail``) and ``cap`` (the incumbent's makespan, slightly relaxed) bound everything."""

    def __init__(self, problem: Problem, windows: tuple[list[float], list[float], list[float]], lb: float, cap: float):
        self.problem = problem
        self.fast, self.head, self.tail = windows
        self.cap = cap
        self.var: list[tuple[float, float, int]] = []
        self.cost: list[float] = []
        self.rows: list[_Row] = []
        self.slots = [(u, c) for u in range(problem.n_units) for c in range(problem.cores[u])]
        self.x = self._slot_variables()
        n = problem.n
        # Latest start: the incumbent's makespan less the task's fastest run and the tail after it.
        latest = [max(self.head[i], cap - self.tail[i] - self.fast[i]) for i in range(n)]
        self.s = [self.new(self.head[i], latest[i], 0) for i in range(n)]
        self.cmax = self.new(lb, cap, 0)
        self.cost[self.cmax] = 1.0
        self.slots_of = {i: [k for k in range(len(self.slots)) if (i, k) in self.x] for i in range(n)}

    def new(self, lo: float, hi: float, integer: int) -> int:
        """A new variable's index."""
        self.var.append((lo, hi, integer))
        self.cost.append(0.0)
        return len(self.var) - 1

    def _slot_variables(self) -> dict[tuple[int, int], int]:
        """``x[i, k]``: task ``i`` on core slot ``k`` (the ``t``-th task able to run on a unit
        may only use its cores ``0..t``: identical cores are interchangeable)."""
        problem, ex = self.problem, self.problem.exec_ns
        x: dict[tuple[int, int], int] = {}
        seen = [0] * problem.n_units  # tasks so far able to run on each unit (symmetry breaking)
        for i in range(problem.n):
            for k, (u, c) in enumerate(self.slots):
                if math.isfinite(ex[i, u]) and c <= seen[u]:
                    x[i, k] = self.new(0, 1, 1)
            for u in problem.capable[i]:
                seen[u] += 1
        return x

    def dur(self, i: int) -> dict[int, float]:
        """Task ``i``'s run time as a linear term over its slot variables."""
        ex = self.problem.exec_ns
        return {self.x[i, k]: float(ex[i, self.slots[k][0]]) for k in self.slots_of[i]}

    def add_assignments(self) -> None:
        """Each task on one slot, and ``C >= s_i + dur_i + tail_i``."""
        for i in range(self.problem.n):
            self.rows.append(({self.x[i, k]: 1.0 for k in self.slots_of[i]}, 1.0, 1.0))
            row = {self.cmax: 1.0, self.s[i]: -1.0}
            for v, w in self.dur(i).items():
                row[v] = -w
            self.rows.append((row, self.tail[i], math.inf))

    def add_slot_loads(self) -> None:
        """The work on one core slot fits in the makespan."""
        ex = self.problem.exec_ns
        for k, (u, _c) in enumerate(self.slots):
            row = {self.x[i, k]: float(ex[i, u]) for i in range(self.problem.n) if (i, k) in self.x}
            if row:
                row[self.cmax] = -1.0
                self.rows.append((row, -math.inf, 0.0))

    def add_precedences(self) -> None:
        """``s_j >= s_i + dur_i + comm`` per edge, comm paid when the two land in different domains."""
        problem = self.problem
        domains = sorted(set(problem.unit_domain))
        dom_slots = {d: [k for k, (u, _c) in enumerate(self.slots) if problem.unit_domain[u] == d] for d in domains}
        # the producer's volume scale: one per domain on every bundled chip; where a domain's
        # units differ, the least (the transfer is then never over-charged: the bound holds)
        wide = {a: min(problem.volume_scale[u] for u, d in enumerate(problem.unit_domain) if d == a) for a in domains}
        for j in range(problem.n):
            for i, vol in problem.preds[j]:
                row = {self.s[j]: 1.0, self.s[i]: -1.0}
                for v, w in self.dur(i).items():
                    row[v] = row.get(v, 0.0) - w
                if vol and len(domains) > 1:
                    self._add_comm(row, i, j, vol, domains, dom_slots, wide)
                self.rows.append((row, 0.0, math.inf))

    def _add_comm(
        self, row: dict[int, float], i: int, j: int, vol: float, domains: list[int], dom_slots: dict[int, list[int]],
        wide: Mapping[int, float],
    ) -> None:
        """The transfer term of edge ``i -> j`` in ``row``, with its domain indicators (``wide``:
        per domain, the volume scale of its producers)."""
        problem, x = self.problem, self.x
        pair = {
            (a, b): vol * float(problem.comm_scale[a, b]) * wide[a] + float(problem.comm_lat[a, b])
            for a in domains for b in domains if a != b
        }  # fmt: skip
        costs = set(pair.values())
        if len(costs) == 1:
            # One cost for any cross-domain edge: d >= X_ia - X_ja for each domain a.
            c0 = costs.pop()
            d = self.new(0, 1, 0)
            row[d] = -c0
            for a in domains:
                r = {d: 1.0}
                for k in dom_slots[a]:
                    if (i, k) in x:
                        r[x[i, k]] = r.get(x[i, k], 0.0) - 1.0
                    if (j, k) in x:
                        r[x[j, k]] = r.get(x[j, k], 0.0) + 1.0
                self.rows.append((r, 0.0, math.inf))
            return
        for (a, b), c_ab in pair.items():
            e = self.new(0, 1, 0)
            row[e] = -c_ab
            r = {e: 1.0}
            for k in dom_slots[a]:
                if (i, k) in x:
                    r[x[i, k]] = r.get(x[i, k], 0.0) - 1.0
            for k in dom_slots[b]:
                if (j, k) in x:
                    r[x[j, k]] = r.get(x[j, k], 0.0) - 1.0
            self.rows.append((r, -1.0, math.inf))

    def add_disjunctions(self) -> None:
        """Two tasks no path orders cannot overlap on one slot (see the module docstring)."""
        desc = _reach(self.problem)
        n = self.problem.n
        for i in range(n):
            for j in range(i + 1, n):
                if j in desc[i]:
                    continue
                shared = [k for k in self.slots_of[i] if (j, k) in self.x]
                if shared:
                    self._add_pair(i, j, shared)

    def _add_pair(self, i: int, j: int, shared: list[int]) -> None:
        x, s, cap, fast, head, tail = self.x, self.s, self.cap, self.fast, self.head, self.tail
        # Big-M per order from the windows: i's end minus j's start can be at most m_ij.
        m_ij = cap - tail[i] - head[j]
        m_ji = cap - tail[j] - head[i]
        i_first = head[i] + fast[i] + fast[j] + tail[j] <= cap  # i then j on one core fits
        j_first = head[j] + fast[j] + fast[i] + tail[i] <= cap
        if not i_first and not j_first:
            for k in shared:  # they cannot share a core
                self.rows.append(({x[i, k]: 1.0, x[j, k]: 1.0}, -math.inf, 1.0))
            return
        if m_ij <= 0 or m_ji <= 0:
            return  # the windows already order them
        z = self.new(0 if j_first else 1, 1 if i_first else 0, 1)  # 1: i before j
        q = self.new(0, 1, 0)  # 1: same slot
        for k in shared:
            self.rows.append(({q: 1.0, x[i, k]: -1.0, x[j, k]: -1.0}, -1.0, math.inf))
        # s_j >= s_i + dur_i - M(1 - z) - M(1 - q)  ->  s_j - s_i - dur_i - M z - M q >= -2M
        r1 = {s[j]: 1.0, s[i]: -1.0, z: -m_ij, q: -m_ij}
        for v, w in self.dur(i).items():
            r1[v] = r1.get(v, 0.0) - w
        self.rows.append((r1, -2 * m_ij, math.inf))
        # s_i >= s_j + dur_j - M z - M(1 - q)  ->  s_i - s_j - dur_j + M z - M q >= -M
        r2 = {s[i]: 1.0, s[j]: -1.0, z: m_ji, q: -m_ji}
        for v, w2 in self.dur(j).items():
            r2[v] = r2.get(v, 0.0) - w2
        self.rows.append((r2, -m_ji, math.inf))

    def solve(self, time_limit_s: float) -> OptimizeResult:
        """HiGHS on the model built so far, tried again in other ways until it answers.

        HiGHS 1.12 (scipy 1.17) can end a MIP in a solve error (status 4, no solution) when a
        heuristic's incumbent sits at its feasibility tolerance (ERGO-Code/HiGHS#2782, #2808),
        even on five tasks whose optimum it had proven in milliseconds
        (``random_problem(23630, 5, 2, 5.0, "related")`` on cores ``[2, 1]``), and its presolve
        can call the model infeasible (status 2; ``random_problem(1586461716, 5, 2, 0.5,
        "related")`` on cores ``[2, 1]``), which it never is: it holds the incumbent. About
        one small model in 500 meets one of these. The search takes another path without
        presolve or with another random seed; each try gets what is left of ``time_limit_s``.

        Worse, where a task's run time repeats over its slots (the cores of one unit), its
        presolve can return a wrong optimum as proven: its "sparsify" rule subtracts the
        assignment rows from the rows that carry the repeated run times, and the branch and
        bound on that equivalent model then closes the root at a makespan above the optimum
        (``random_problem(1298, 4, 2, 0.5, "related")`` on cores ``[1, 2]``: 22.526 proven,
        22.393 the optimum; rare: one in 20,000 small models of a derandomized property run,
        see ``benchmarks/exact_search.py``). scipy cannot turn that one rule off, so these models
        are solved without presolve first, as :func:`_repeated_run_times` says; no try
        without presolve returned a wrong optimum there. The others keep presolve first:
        without it a 20-task model on four one-core units stopped at its time limit further
        from the optimum."""
        attempts = _ATTEMPTS_NO_PRESOLVE_FIRST if _repeated_run_times(self.problem) else _ATTEMPTS
        t0 = time.monotonic()
        res = self._milp(time_limit_s, attempts[0])
        for options in attempts[1:]:
            left_s = time_limit_s - (time.monotonic() - t0)
            if res.status in _ANSWERED or left_s <= 0:
                break
            res = self._milp(left_s, options)
        return res

    def _milp(self, time_limit_s: float, options: dict[str, object]) -> OptimizeResult:
        """One ``scipy.optimize.milp`` call on the model built so far, with HiGHS ``options``."""
        from scipy.optimize import Bounds, LinearConstraint
        from scipy.sparse import coo_matrix

        data: list[float] = []
        ri: list[int] = []
        ci: list[int] = []
        lo: list[float] = []
        hi: list[float] = []
        for row_ix, (coefs, low, high) in enumerate(self.rows):
            for v, w3 in coefs.items():
                ri.append(row_ix)
                ci.append(v)
                data.append(w3)
            lo.append(low)
            hi.append(high)
        a_mat = coo_matrix((data, (ri, ci)), shape=(len(self.rows), len(self.var))).tocsr()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Unrecognized options detected", RuntimeWarning)
            return milp(
                c=np.array(self.cost),
                constraints=LinearConstraint(a_mat, np.array(lo), np.array(hi)),
                integrality=np.array([v[2] for v in self.var]),
                bounds=Bounds(np.array([v[0] for v in self.var]), np.array([v[1] for v in self.var])),
                options={"time_limit": time_limit_s, "mip_rel_gap": 1e-7, **options},
            )

    def solution(self, values: np.ndarray) -> Solution:
        """The schedule the solver's ``values`` describe, re-timed exactly."""
        assign = [0] * self.problem.n
        for i in range(self.problem.n):
            ks = self.slots_of[i]
            vals = [float(values[self.x[i, k]]) for k in ks]
            assign[i] = self.slots[ks[vals.index(max(vals))]][0]
        return solution_from_times(self.problem, assign, [float(values[v]) for v in self.s])


def exact(
    problem: Problem,
    incumbent: Solution,
    lower_bound_ns: float = 0.0,
    time_limit_s: float = EXACT_TIME_LIMIT_S,
    solver: str = "auto",
) -> ExactResult:
    """Optimal schedule of ``problem`` (or the best found in ``time_limit_s`` with its gap).

    ``incumbent`` is a valid schedule (e.g. the best heuristic); ``lower_bound_ns`` a known bound.
    ``solver``: ``"cpsat"`` (OR-Tools, raises :class:`~scheduler.exact_cpsat.MissingSolverError`
    where it is not installed), ``"highs"`` (the MILP), or ``"auto"``: CP-SAT where installed.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown exact solver {solver!r}; known: {', '.join(SOLVERS)}")
    if problem.n == 0:
        return ExactResult(incumbent, 0.0, True)
    ub = incumbent.makespan_ns
    fast, head, tail = windows = time_windows(problem)
    lb = max(lower_bound_ns, max(h + f + t for h, f, t in zip(head, fast, tail, strict=True)))
    if ub <= lb * (1 + 1e-9):
        return ExactResult(incumbent, ub, True)
    if solver == "cpsat" or (solver == "auto" and cpsat_available()):
        # CP-SAT proved 4 of 20 n=50 optima in 8 s where HiGHS proved none (and 59/60 at n=20
        # against 47/60): benchmarks/bench_exact_solvers.py, docs/scheduling.md.
        best, bound, proven = solve_cpsat(problem, incumbent, lb, time_limit_s)
        return ExactResult(best, bound, proven)
    # Every bound below derives from the incumbent's makespan; a little slack keeps the
    # incumbent itself feasible in floating point (a schedule that meets a big-M or a window
    # exactly was otherwise cut off, the model came out infeasible and nothing was proven).
    model = _Milp(problem, windows, lb, ub * (1 + 1e-6) + 1e-6)
    model.add_assignments()
    model.add_slot_loads()
    model.add_precedences()
    model.add_disjunctions()
    res = model.solve(time_limit_s)
    bound = max(lb, float(getattr(res, "mip_dual_bound", lb) or lb))
    best = incumbent
    if res.x is not None:
        cand = model.solution(res.x)
        if cand.makespan_ns < best.makespan_ns:
            best = cand
    proven = res.status == 0 or best.makespan_ns <= bound * (1 + 1e-6)
    if res.status == 0:
        bound = max(bound, min(best.makespan_ns, float(res.fun)) if res.fun is not None else bound)
    return ExactResult(best, min(bound, best.makespan_ns), proven)
