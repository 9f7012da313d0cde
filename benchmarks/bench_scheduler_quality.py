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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scheduler import DEFAULT_POLICY
from scheduler.best import CHEAP_POLICIES
from scheduler.bounds import problem_bounds
from scheduler.exact import ExactResult, exact
from scheduler.generators import random_problem
from scheduler.problem import Problem

ROOT = Path(__file__).resolve().parents[1]
SHOWN = (DEFAULT_POLICY, "heft", "peft", "cpop")


@dataclass(frozen=True, slots=True)
class Config:
    """One row of the random-DAG table: ``count`` DAGs of ``n`` tasks, MILP limit in seconds."""

    n: int
    units: int
    ccr: float
    kind: str
    count: int
    limit_s: float


def mean_max(xs: list[float]) -> str:
    """``mean / max`` of ratios to three decimals, ``-`` for none."""
    return f"{np.mean(xs):.3f} / {np.max(xs):.3f}" if xs else "-"


def against_exact(p: Problem, limit_s: float) -> tuple[dict[str, float], ExactResult, float, float]:
    """Each cheap policy's makespan on ``p`` by name, the ``exact`` policy's result seeded with the
    best of them (``limit_s`` seconds), and the seconds the default and the exact policy took."""
    res: dict[str, float] = {}
    inc, t_def = None, 0.0
    for name, fn in CHEAP_POLICIES.items():
        t0 = time.perf_counter()
        s = fn(p)
        if name == DEFAULT_POLICY:
            t_def = time.perf_counter() - t0
        res[name] = s.makespan_ns
        if inc is None or s.makespan_ns < inc.makespan_ns:
            inc = s
    assert inc is not None
    t0 = time.perf_counter()
    r = exact(p, inc, problem_bounds(p).best_ns, limit_s)
    return res, r, t_def, time.perf_counter() - t0


def quality(configs: list[Config], seed_base: int = 0) -> None:
    """Per configuration: ratios over proven optima, ratios over unproven incumbents apart, then overall."""
    print(
        "| DAGs | units | CCR | kind | optima proven | default/OPT | HEFT/OPT | PEFT/OPT | CPOP/OPT "
        "| default < HEFT (mean) | unproven: default/best known | unproven: HEFT/best known "
        "| unproven: MILP gap mean / max | default s | MILP s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    everything: dict[str, list[float]] = {k: [] for k in SHOWN}
    all_proven: dict[str, list[float]] = {k: [] for k in SHOWN}
    for c in configs:
        proven_r: dict[str, list[float]] = {k: [] for k in SHOWN}
        every_r: dict[str, list[float]] = {k: [] for k in SHOWN}
        open_default: list[float] = []
        open_heft: list[float] = []
        gaps: list[float] = []
        t_def, t_ex = [], []
        for seed in range(c.count):
            p = random_problem(seed_base + 1000 * c.n + seed, c.n, c.units, c.ccr, c.kind)
            res, r, s_def, s_ex = against_exact(p, c.limit_s)
            t_def.append(s_def)
            t_ex.append(s_ex)
            opt = r.solution.makespan_ns
            for k in SHOWN:
                every_r[k].append(res[k] / opt)
                if r.proven:
                    proven_r[k].append(res[k] / opt)
            if not r.proven:
                open_default.append(res[DEFAULT_POLICY] / opt)
                open_heft.append(res["heft"] / opt)
                gaps.append(r.gap)
        for k in SHOWN:
            everything[k] += every_r[k]
            all_proven[k] += proven_r[k]
        better = "yes" if np.mean(every_r[DEFAULT_POLICY]) < np.mean(every_r["heft"]) else "no"
        cells = " | ".join(mean_max(proven_r[k]) for k in SHOWN)
        gap = f"{np.mean(gaps):.3f} / {np.max(gaps):.3f}" if gaps else "-"
        print(
            f"| n={c.n} ({c.count}) | {c.units} | {c.ccr:g} | {c.kind} | {len(proven_r['heft'])}/{c.count} | {cells} "
            f"| {better} | {mean_max(open_default)} | {mean_max(open_heft)} | {gap} | {statistics.median(t_def):.2f} | {statistics.median(t_ex):.1f} |",
            flush=True,
        )
    total = len(everything["heft"])
    print()
    print("| over | instances | default | HEFT | PEFT | CPOP |")
    print("|---|---|---|---|---|---|")
    n_pr = len(all_proven["heft"])
    print(f"| proven optima (mean / max) | {n_pr} | " + " | ".join(mean_max(all_proven[k]) for k in SHOWN) + " |")
    print(f"| all, best known (mean / max) | {total} | " + " | ".join(mean_max(everything[k]) for k in SHOWN) + " |")


def real_models(energy_slack: float) -> None:
    """Each bundled model on each bundled chip through the engine (``hwsim run``'s default path).

    One default run simulates the search's schedule and HEFT's, the best single unit's and
    affinity-list's (``hwsim.policy_check``) and keeps the fastest; ort-greedy is run apart.
    Then energy mode with a budget of (1 + ``energy_slack``) x the default's latency.
    """
    from chips import load_chip
    from graph_ir import load_onnx
    from hwsim.pipeline import run_graph

    cols = (DEFAULT_POLICY, "heft", "single-unit", "affinity-list")
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
            ok_search = "yes" if ms[DEFAULT_POLICY] <= ref else "no"
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
            CHEAP_POLICIES[DEFAULT_POLICY](p)
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
    ap.add_argument("--seed-base", type=int, default=0,
                    help="random DAG seeds are this + 1000 n + k (e.g. 9000000: a held-out set)")
    args = ap.parse_args()
    if args.quick:
        configs = [Config(n, u, ccr, kind, cnt, lim) for n, u, cnt, lim in ((10, 3, 5, 10.0), (20, 4, 3, 8.0))
                   for ccr in (1.0, 5.0) for kind in ("related", "unrelated")]
    else:
        # >= 20 DAGs at n=10, 10 at n=20, 5 at n=50; every CCR and both kinds, 3-5 units.
        configs = [
            Config(n, u, ccr, kind, cnt, lim)
            for n, u, cnt, lim in ((10, 3, 20, 10.0), (10, 5, 20, 10.0), (20, 4, 10, 8.0), (50, 4, 5, 8.0))
            for ccr in ((0.5, 1.0, 5.0) if u != 5 or n == 10 else (1.0,))
            for kind in ("related", "unrelated")
            if not (n == 10 and u == 5 and ccr == 0.5) and not (n == 50 and ccr == 0.5)
        ]
    if "quality" not in args.skip:
        quality(configs, args.seed_base)
        print()
    if "models" not in args.skip:
        real_models(args.energy_slack)
        print()
    if "speed" not in args.skip:
        speed([1000, 10000] if args.quick else [1000, 10000, 100000], 1 if args.quick else 3)


if __name__ == "__main__":
    main()
