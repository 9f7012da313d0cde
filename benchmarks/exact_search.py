"""The ``exact`` policy against brute force on many small multi-core problems (a long property run).

Run: ``python benchmarks/exact_search.py [--examples 2000] [--max-n 6] [--max-cores 3] [--max-units 2]``.
The property of ``tests/scheduler/test_exact_search.py`` (``exact`` proves the optimum that
enumeration finds), drawn by Hypothesis derandomized, so a run repeats exactly; the suite draws
200 random examples each time, this script as many as asked. Prints each case that fails and a
JSON summary; exit 1 if any failed. Worth a run after a scipy (HiGHS) upgrade: HiGHS 1.12 proved
wrong optima here (see ``scheduler.exact._Milp.solve``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from scheduler.bounds import problem_bounds
from scheduler.exact import exact
from scheduler.generators import random_problem
from scheduler.heft import heft
from tests.scheduler.test_exact_search import _with_cores, brute_force_ns


def search(examples: int, max_n: int, max_cores: int, max_units: int) -> dict[str, int]:
    """Counts of cases checked, skipped (a task no unit can run) and failed."""
    counts = {"checked": 0, "skipped": 0, "failed": 0}

    @settings(
        max_examples=examples, deadline=None, derandomize=True, database=None,
        suppress_health_check=list(HealthCheck), phases=[Phase.generate],
    )  # fmt: skip
    @given(
        seed=st.integers(0, 2**31 - 1),
        n=st.integers(2, max_n),
        cores=st.lists(st.integers(1, max_cores), min_size=1, max_size=max_units),
        ccr=st.sampled_from([0.5, 5.0]),
        kind=st.sampled_from(["related", "unrelated"]),
    )
    def check(seed: int, n: int, cores: list[int], ccr: float, kind: str) -> None:
        base = random_problem(seed, n, len(cores), ccr, kind)
        if any(not caps for caps in base.capable):
            counts["skipped"] += 1
            return
        p = _with_cores(base, cores)
        counts["checked"] += 1
        optimum_ns = brute_force_ns(p)
        r = exact(p, heft(p), problem_bounds(p).best_ns, 20.0)
        if not (r.proven and math.isclose(r.solution.makespan_ns, optimum_ns, rel_tol=1e-6)):
            counts["failed"] += 1
            print(f"FAILED random_problem({seed}, {n}, {len(cores)}, {ccr}, {kind!r}) on cores {cores}: "
                  f"proven={r.proven} {r.solution.makespan_ns!r} vs {optimum_ns!r}", flush=True)  # fmt: skip

    check()
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--max-n", type=int, default=6, help="tasks per problem, at most (brute force grows fast)")
    ap.add_argument("--max-cores", type=int, default=3, help="cores per unit, at most")
    ap.add_argument("--max-units", type=int, default=2)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    counts = search(args.examples, args.max_n, args.max_cores, args.max_units)
    print(json.dumps({**counts, "seconds": round(time.perf_counter() - t0, 1)}))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
