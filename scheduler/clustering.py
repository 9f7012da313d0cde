"""Linear clustering for transfer-heavy graphs: chains of tasks kept on one unit.

:func:`linear_clusters` cuts the DAG into chains, heaviest first (Kim and Browne's linear
clustering): the longest remaining path, counting each task's mean run time and each edge's
mean transfer time, becomes a cluster, and its tasks leave the graph. Running a chain on one
unit saves every transfer along it, which is what a schedule at a high communication-to-
computation ratio (CCR) lives on.

:func:`cluster_seed` maps the clusters to units: it starts from the best single unit and moves
each cluster, longest first, to the unit where the re-timed schedule is shortest. The default
policy uses it as a seed and moves whole clusters in its local search.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.list_scheduling import retime
from scheduler.problem import Problem, Solution
from scheduler.ranks import mean_exec
from scheduler.single_unit import single_unit

__all__ = ["cluster_seed", "linear_clusters", "moved"]


def _mean_transfer(problem: Problem) -> tuple[float, float]:
    """Mean (scale, latency) of an edge between two different units (0, 0 with one unit)."""
    m = problem.n_units
    pairs = [(u, v) for u in range(m) for v in range(m) if u != v]
    if not pairs:
        return 0.0, 0.0
    scale = sum(problem.pair_scale[u][v] for u, v in pairs) / len(pairs)
    lat = sum(problem.pair_lat[u][v] for u, v in pairs) / len(pairs)
    return scale, lat


def linear_clusters(problem: Problem) -> list[tuple[int, ...]]:
    """The tasks cut into chains (each in topological order), the heaviest chain first.

    Examples
    --------
    >>> from scheduler.problem import make_problem
    >>> import numpy as np
    >>> p = make_problem(["a", "b", "c"], ["u"], np.ones((3, 1)), [(0, 1, 5.0), (0, 2, 1.0)])
    >>> linear_clusters(p)
    [(0, 1), (2,)]
    """
    n = problem.n
    w = mean_exec(problem)
    sc, la = _mean_transfer(problem)
    free = [True] * n
    out: list[tuple[int, ...]] = []
    left = n
    while left:
        # Longest path ending at each free task, over free tasks only (indices are topological).
        best = [0.0] * n
        prev = [-1] * n
        for i in range(n):
            if not free[i]:
                continue
            b, p = 0.0, -1
            for j, vol in problem.preds[i]:
                if free[j]:
                    t = best[j] + (vol * sc + la if vol else 0.0)
                    if t > b:
                        b, p = t, j
            best[i], prev[i] = b + w[i], p
        end = max((i for i in range(n) if free[i]), key=lambda i: (best[i], -i))
        chain: list[int] = []
        while end >= 0:
            chain.append(end)
            free[end] = False
            end = prev[end]
        left -= len(chain)
        out.append(tuple(reversed(chain)))
    return out


def moved(problem: Problem, assign: Sequence[int], tasks: Sequence[int], unit: int) -> list[int]:
    """``assign`` with every task of ``tasks`` that ``unit`` can run put on ``unit``."""
    out = list(assign)
    for t in tasks:
        if unit in problem.capable[t]:
            out[t] = unit
    return out


def cluster_seed(problem: Problem, clusters: Sequence[Sequence[int]], passes: int = 2) -> Solution:
    """Clusters mapped to units greedily (see the module docstring); ``passes`` rounds over them."""
    best = single_unit(problem)
    for _ in range(passes):
        changed = False
        for chain in clusters:
            for u in range(problem.n_units):
                if all(best.unit[t] == u or u not in problem.capable[t] for t in chain):
                    continue
                cand = retime(problem, moved(problem, best.unit, chain, u))
                if cand.makespan_ns < best.makespan_ns * (1 - 1e-12):
                    best, changed = cand, True
        if not changed:
            break
    return best
