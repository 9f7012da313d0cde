"""Task priorities used by the list schedulers: upward and downward ranks, PEFT's optimistic
cost table, and the upward rank of a fixed placement. Mean costs are over the units able to run a task; a mean edge cost is over every
ordered pair of units (the chance that two tasks land on different units included)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.problem import Problem

__all__ = [
    "downward_rank",
    "mean_comm",
    "mean_exec",
    "optimistic_cost_table",
    "placement_rank",
    "upward_rank",
]


def mean_exec(problem: Problem) -> list[float]:
    """Mean run time of each task over the units that can run it (ns)."""
    ex = problem.exec_ns
    ok = np.isfinite(ex)
    count = ok.sum(axis=1)
    total = np.where(ok, ex, 0.0).sum(axis=1)
    return [float(x) for x in np.where(count > 0, total / np.maximum(count, 1), 0.0)]


def mean_comm(problem: Problem) -> tuple[float, float]:
    """Mean (scale, latency) of an edge over all ordered unit pairs, same unit counted as 0."""
    m = problem.n_units
    sc = np.asarray(problem.pair_scale, dtype=float)
    la = np.asarray(problem.pair_lat, dtype=float)
    return float(sc.sum() / (m * m)), float(la.sum() / (m * m))


def upward_rank(
    problem: Problem, cost: Sequence[float] | None = None, comm_weight: float = 1.0
) -> list[float]:
    """Longest path from each task to an exit: task cost plus mean edge cost times ``comm_weight``."""
    w = mean_exec(problem) if cost is None else list(cost)
    sc, la = mean_comm(problem)
    rank = [0.0] * problem.n
    for i in range(problem.n - 1, -1, -1):
        best = 0.0
        for j, vol in problem.succs[i]:
            t = comm_weight * (vol * sc + la if vol else 0.0) + rank[j]
            if t > best:  # noqa: PLR1730 (a call to max costs: once per edge)
                best = t
        rank[i] = w[i] + best
    return rank


def downward_rank(problem: Problem, cost: Sequence[float] | None = None) -> list[float]:
    """Longest path from an entry to each task, the task itself excluded."""
    w = mean_exec(problem) if cost is None else list(cost)
    sc, la = mean_comm(problem)
    rank = [0.0] * problem.n
    for i in range(problem.n):
        best = 0.0
        for j, vol in problem.preds[i]:
            t = rank[j] + w[j] + (vol * sc + la if vol else 0.0)
            if t > best:  # noqa: PLR1730 (a call to max costs: once per edge)
                best = t
        rank[i] = best
    return rank


def optimistic_cost_table(problem: Problem) -> np.ndarray:
    """PEFT's OCT: ``oct[i, u]`` = longest optimistic path from ``i`` on ``u`` to an exit, ``i`` excluded."""
    n, m = problem.n, problem.n_units
    ex = problem.exec_ns
    sc = np.asarray(problem.pair_scale, dtype=float)
    la = np.asarray(problem.pair_lat, dtype=float)
    oct_ = np.zeros((n, m))
    for i in range(n - 1, -1, -1):
        row = np.zeros(m)
        for j, vol in problem.succs[i]:
            # cand[u, v] = oct[j, v] + w[j, v] + comm(u -> v)
            base = oct_[j] + ex[j]
            comm = vol * sc + la if vol else np.zeros((m, m))
            cand = base[None, :] + comm
            row = np.maximum(row, cand.min(axis=1))
        oct_[i] = row
    return oct_


def placement_rank(problem: Problem, assign: Sequence[int], comm_weight: float = 1.0) -> list[float]:
    """Upward rank with each task's real cost on its unit and real transfer times (those
    weighted by ``comm_weight``: above 1, a task that feeds another unit goes earlier)."""
    ex, ps, pl = problem.exec_list, problem.pair_scale, problem.pair_lat
    rank = [0.0] * problem.n
    for i in range(problem.n - 1, -1, -1):
        u = assign[i]
        best = 0.0
        for j, vol in problem.succs[i]:
            v = assign[j]
            t = rank[j] + (comm_weight * (vol * ps[u][v] + pl[u][v]) if vol and u != v else 0.0)
            if t > best:  # noqa: PLR1730 (a call to max costs: once per edge)
                best = t
        rank[i] = ex[i][u] + best
    return rank
