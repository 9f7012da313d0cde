"""Scheduler quality against proven optima, on real models through the engine, and speed.

Run: ``python benchmarks/bench_scheduler_quality.py [--quick]``. Prints markdown tables:

1. Random DAGs (``scheduler.generators.random_problem``: layered DAGs, "related" units with one
   speed each, or "unrelated" SoC-like units with operator affinity and units that cannot run
   some tasks), each policy's makespan over the ``exact`` policy's (HiGHS MILP seeded with the
   best heuristic). Where the MILP stops at its time limit without proof, the ratio is over the
   best schedule it knows (so it understates the true ratio) and the row says how many optima
   were proven.
2. The bundled models on the bundled chips, latency simulated by the engine: the default as
   ``hwsim run`` uses it (the search checked against HEFT, the best single unit and
   affinity-list), each candidate, ort-greedy, and energy mode at a latency budget.
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


def real_models(energy_slack: float) -> None:
    """Each bundled model on each bundled chip through the engine (``hwsim run``'s default path).

    One default run simulates the search's schedule and HEFT's, the best single unit's and
    affinity-list's (``hwsim.policy_check``) and keeps the fastest; ort-greedy is run apart.
    Then energy mode with a budget of (1 + ``energy_slack``) x the default's latency.
    """
    from chips import load_chip
    from graph_ir import load_onnx
    from hwsim.pipeline import run_graph

    cols = ("affinity-locality", "heft", "single-unit", "affinity-list")
    print(
        "| model | ops | chip | default (kept) ms | kept | search alone ms | heft ms | single-unit ms | "
        "affinity-list ms | ort-greedy ms | default <= HEFT and single-unit | search alone <= both | "
        f"energy mode (budget +{100 * energy_slack:g}%) mJ | latency-optimal mJ | energy-mode ms | run s |"
    )
    print("|---|---:|---|---:|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|")
    for model in sorted((ROOT / "examples" / "models").glob("*.onnx")):
        graph = load_onnx(model)
        for chip_file in sorted((ROOT / "chips").glob("*.yaml")):
            chip = load_chip(chip_file)
            t0 = time.perf_counter()
            res = run_graph(graph, chip, "int8")
            dt = time.perf_counter() - t0
            assert res.choice is not None
            ms = {c.name: c.latency_ms for c in res.choice.candidates}
            kept = res.trace.makespan_ps / 1e9
            ort = run_graph(graph, chip, "int8", "ort-greedy").trace.makespan_ps / 1e9
            ref = min(ms.get("heft", kept), ms.get("single-unit", kept)) * (1 + 1e-9)
            ok = "yes" if kept <= ref else "NO"
            ok_search = "yes" if ms["affinity-locality"] <= ref else "no"
            en = run_graph(graph, chip, "int8", objective="energy", latency_budget_ms=kept * (1 + energy_slack))
            c = en.choice
            assert c is not None and c.chosen is not None and c.latency_optimal is not None
            cells = " | ".join(f"{ms[p]:.3f}" if p in ms else "-" for p in cols)
            print(
                f"| {model.stem} | {len(graph)} | {chip.name} | {kept:.3f} | {res.choice.winner} | {cells} | {ort:.3f} | "
                f"{ok} | {ok_search} | {c.chosen.energy_mj:.3f} | {c.latency_optimal.energy_mj:.3f} | "
                f"{c.chosen.latency_ms:.3f} | {dt:.2f} |",
                flush=True,
            )


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
    ap.add_argument("--energy-slack", type=float, default=0.2, help="energy mode budget: default latency x (1 + this)")
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
        real_models(args.energy_slack)
        print()
    if "speed" not in args.skip:
        speed([1000, 10000] if args.quick else [1000, 10000, 100000], 1 if args.quick else 3)


if __name__ == "__main__":
    main()
