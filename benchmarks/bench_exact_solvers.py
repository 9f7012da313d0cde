"""HiGHS (the MILP of ``scheduler.exact``) against OR-Tools CP-SAT (``scheduler.exact_cpsat``).

Run: ``python benchmarks/bench_exact_solvers.py [--limit 8] [--count 5]`` (CP-SAT needs
``pip install hwsim[exact]``). Both get the same incumbent (the best cheap policy), the same
lower bound and the same wall-clock limit on the benchmark's n=50 random DAGs (seeds
``50000 + k``, 4 units, CCR 1 and 5, related and unrelated; ``--n`` for other sizes). Prints a
markdown row per configuration: optima proven by each, mean remaining gap, median seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

from scheduler.best import CHEAP_POLICIES
from scheduler.bounds import problem_bounds
from scheduler.exact import exact
from scheduler.exact_cpsat import solve_cpsat
from scheduler.generators import random_problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=8.0, help="seconds per solve")
    ap.add_argument("--count", type=int, default=5, help="DAGs per configuration")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--units", type=int, default=4)
    args = ap.parse_args()
    print("| DAGs | units | CCR | kind | HiGHS proven | HiGHS gap mean | HiGHS s | CP-SAT proven | CP-SAT gap mean | CP-SAT s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ccr in (1.0, 5.0):
        for kind in ("related", "unrelated"):
            rows: dict[str, list[tuple[bool, float, float]]] = {"highs": [], "cpsat": []}
            for seed in range(args.count):
                p = random_problem(1000 * args.n + seed, args.n, args.units, ccr, kind)
                inc = min((fn(p) for fn in CHEAP_POLICIES.values()), key=lambda s: s.makespan_ns)
                lb = problem_bounds(p).best_ns
                t0 = time.perf_counter()
                r = exact(p, inc, lb, args.limit, solver="highs")
                rows["highs"].append((r.proven, r.gap, time.perf_counter() - t0))
                t0 = time.perf_counter()
                sol, bound, proven = solve_cpsat(p, inc, lb, args.limit)
                gap = 0.0 if proven else (sol.makespan_ns - bound) / sol.makespan_ns
                rows["cpsat"].append((proven, gap, time.perf_counter() - t0))
            cells = " | ".join(
                f"{sum(x[0] for x in rows[k])}/{args.count} | {statistics.mean(x[1] for x in rows[k]):.3f} "
                f"| {statistics.median(x[2] for x in rows[k]):.1f}"
                for k in ("highs", "cpsat")
            )
            print(f"| n={args.n} ({args.count}) | {args.units} | {ccr:g} | {kind} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
