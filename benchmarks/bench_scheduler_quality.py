"""Scheduler quality against proven optima, on real models through the engine, and speed.

Run: ``python benchmarks/bench_scheduler_quality.py [--quick]``. Prints markdown tables:

1. Random DAGs (``scheduler.generators.random_problem``: layered DAGs, "related" units with one
   speed each, or "unrelated" SoC-like units with operator affinity and units that cannot run
   some tasks), each policy's makespan over the ``exact`` policy's (HiGHS MILP seeded with the
   best heuristic). Where the MILP stops at its time limit without proof, the ratio is over the
   best schedule it knows (so it understates the true ratio) and the row says how many optima
   were proven.
2. The bundled models on the bundled chips, latency simulated by the engine, for the default,
   HEFT, the best single unit and ort-greedy.
3. Wall time of the default policy on large random graphs (medians; shared machine, noisy).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from scheduler.bounds import problem_bounds
from scheduler.exact import exact
from scheduler.generators import random_problem
from scheduler.policies import CHEAP_POLICIES, _best

ROOT = Path(__file__).resolve().parents[1]
SHOWN = ("affinity-locality", "heft", "peft", "cpop")


def quality(configs: list[tuple[int, int, float, str, int, float]]) -> None:
    print("| DAGs | units | CCR | kind | default/OPT | HEFT/OPT | PEFT/OPT | CPOP/OPT | default < HEFT (mean) | optima proven | default s | MILP s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, units, ccr, kind, count, limit in configs:
        ratios: dict[str, list[float]] = {k: [] for k in SHOWN}
        proven = 0
        t_def, t_ex = [], []
        for seed in range(count):
            p = random_problem(1000 * n + seed, n, units, ccr, kind)
            t0 = time.perf_counter()
            res = {k: CHEAP_POLICIES[k](p).makespan_ns for k in SHOWN}
            t_def.append(time.perf_counter() - t0)
            _, inc = _best(p)
            t0 = time.perf_counter()
            r = exact(p, inc, problem_bounds(p).best_ns, limit)
            t_ex.append(time.perf_counter() - t0)
            proven += r.proven
            for k in SHOWN:
                ratios[k].append(res[k] / r.solution.makespan_ns)
        cells = [f"{np.mean(ratios[k]):.3f} / {np.max(ratios[k]):.3f}" for k in SHOWN]
        better = "yes" if np.mean(ratios["affinity-locality"]) < np.mean(ratios["heft"]) else "no"
        print(
            f"| n={n} ({count}) | {units} | {ccr:g} | {kind} | " + " | ".join(cells)
            + f" | {better} | {proven}/{count} | {statistics.median(t_def):.2f} | {statistics.median(t_ex):.1f} |"
        )


def real_models() -> None:
    from chips import load_chip
    from graph_ir import load_onnx
    from hwsim.pipeline import run_graph

    pols = ("search", "heft", "single-unit", "ort-greedy", "affinity-locality")
    print("| model | chip | " + " | ".join(f"{p} ms" for p in pols) + " | default <= HEFT and single-unit |")
    print("|---|---|" + "---:|" * len(pols) + "---|")
    for model in sorted((ROOT / "examples" / "models").glob("*.onnx")):
        graph = load_onnx(model)
        for chip_file in sorted((ROOT / "chips").glob("*.yaml")):
            chip = load_chip(chip_file)
            ms = {p: run_graph(graph, chip, "int8", p).trace.makespan_ns / 1e6 for p in pols}
            ok = ms["search"] <= min(ms["heft"], ms["single-unit"]) * (1 + 1e-3)
            print(f"| {model.stem} | {chip.name} | " + " | ".join(f"{ms[p]:.3f}" for p in pols) + f" | {'yes' if ok else 'NO'} |")


def speed(sizes: list[int], repeat: int) -> None:
    print("| tasks | units | edges | default policy median s | HEFT median s |")
    print("|---:|---:|---:|---:|---:|")
    for n in sizes:
        p = random_problem(n, n, 4, 1.0, "unrelated")
        times, th = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            CHEAP_POLICIES["affinity-locality"](p)
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            CHEAP_POLICIES["heft"](p)
            th.append(time.perf_counter() - t0)
        print(f"| {n} | 4 | {p.n_edges()} | {statistics.median(times):.2f} | {statistics.median(th):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer DAGs and shorter MILP limits")
    ap.add_argument("--skip", nargs="*", default=[], choices=["quality", "models", "speed"])
    args = ap.parse_args()
    k = 1 if args.quick else 2
    configs = [
        (10, 3, 0.5, "related", 5 * k, 10.0),
        (10, 3, 1.0, "related", 5 * k, 10.0),
        (10, 3, 5.0, "related", 5 * k, 10.0),
        (10, 3, 0.5, "unrelated", 5 * k, 10.0),
        (10, 3, 1.0, "unrelated", 5 * k, 10.0),
        (10, 3, 5.0, "unrelated", 5 * k, 10.0),
        (20, 4, 1.0, "related", 3 * k, 15.0),
        (20, 4, 5.0, "related", 3 * k, 15.0),
        (20, 4, 1.0, "unrelated", 3 * k, 15.0),
        (20, 5, 5.0, "unrelated", 3 * k, 15.0),
        (50, 4, 1.0, "related", 2 * k, 20.0),
        (50, 4, 1.0, "unrelated", 2 * k, 20.0),
    ]
    if "quality" not in args.skip:
        quality(configs)
        print()
    if "models" not in args.skip:
        real_models()
        print()
    if "speed" not in args.skip:
        speed([1000, 10000] if args.quick else [1000, 10000, 100000], 1 if args.quick else 3)


if __name__ == "__main__":
    main()
