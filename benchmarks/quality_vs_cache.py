"""The default policy against cached optima, without solving anything (minutes, not an hour).

Run: ``python benchmarks/quality_vs_cache.py CACHE.json [CACHE.json ...] [--only SUBSTRING ...] [--jobs 2]``.
A cache is a JSON object keyed ``"seed|n|units|ccr|kind"`` (the benchmark's
``random_problem`` arguments), each value with at least ``seed``, ``n``, ``units``, ``ccr``,
``kind``, ``opt`` (the best makespan known, ns) and ``proven``; where several caches hold a key, a
proven entry wins, then the shorter makespan. Prints, per configuration and overall, the default's
makespan over the optimum (mean / worst over the proven ones, then over all) and the median user
CPU time of the default, and writes the per-graph ratios as JSON with ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from scheduler.affinity_locality import affinity_locality
from scheduler.generators import random_problem


def load(paths: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """The merged caches (a proven entry wins, then the shorter makespan)."""
    cache: dict[str, dict[str, Any]] = {}
    for path in paths:
        for key, entry in json.loads(path.read_text()).items():
            old = cache.get(key)
            if old is None or (entry["proven"], -entry["opt"]) > (old["proven"], -old["opt"]):
                cache[key] = entry
    return cache


def ratio(entry: dict[str, Any]) -> tuple[float, float]:
    """The default's makespan over ``entry["opt"]`` and the user CPU seconds it took."""
    p = random_problem(entry["seed"], entry["n"], entry["units"], entry["ccr"], entry["kind"])
    t0 = time.process_time()
    sol = affinity_locality(p)
    return sol.makespan_ns / entry["opt"], time.process_time() - t0


def _summary(rows: list[tuple[float, float, bool]]) -> str:
    proven = [r for r, _, ok in rows if ok]
    every = [r for r, _, _ in rows]
    head = f"{statistics.fmean(proven):.4f} / {max(proven):.3f}" if proven else "-"
    return (f"{len(rows):4d} graphs, {len(proven):4d} proven: {head}   all {statistics.fmean(every):.4f} / "
            f"{max(every):.3f}   cpu median {statistics.median(t for _, t, _ in rows):.2f} s")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("caches", nargs="+", type=Path)
    ap.add_argument("--only", nargs="*", default=[], help="keep keys containing any of these")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, help="per-graph [ratio, cpu s, proven] as JSON")
    args = ap.parse_args(argv)
    cache = load(args.caches)
    keys = [k for k in cache if not args.only or any(s in k for s in args.only)]
    with ProcessPoolExecutor(args.jobs) as ex:
        results = dict(zip(keys, ex.map(ratio, [cache[k] for k in keys]), strict=True))
    groups: dict[tuple[int, int, float, str], list[tuple[float, float, bool]]] = defaultdict(list)
    for key, (r, t) in results.items():
        e = cache[key]
        groups[(e["n"], e["units"], e["ccr"], e["kind"])].append((r, t, bool(e["proven"])))
    for (n, units, ccr, kind), rows in sorted(groups.items()):
        print(f"n={n:3d} units={units} ccr={ccr:<4} {kind:9s} {_summary(rows)}")
    print(f"{'overall':34s} {_summary([row for rows in groups.values() for row in rows])}")
    if args.out:
        args.out.write_text(json.dumps({k: [r, t, cache[k]["proven"]] for k, (r, t) in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
