"""Measure ``hwsim sweep``: the budgeted search against the exhaustive grid, and how points scale over workers.

    python benchmarks/bench_sweep.py [--seeds 10] [--seed-from 0] [--budget-share 0.1] [--workers 1,2]
    python benchmarks/bench_sweep.py --search-only --seed-from 100 --models yolov5n,mobilenetv2   # held out
    python benchmarks/bench_sweep.py --scaling-only --repeats 3   # 1 and 2 workers interleaved, spread
    python benchmarks/bench_sweep.py --search-only --cache grid.sqlite --models yolov5n   # grid simulated once

1. The grid of :data:`GRID` (resnet18 on the RK3588) is evaluated exhaustively on a process pool
   of 1 and of 2 workers, and on a Dask ``LocalCluster`` of 2: points per second each, the
   scaling efficiency (pps at 2 / (2 x pps at 1)), and Dask's overhead per task (the round trip
   of an empty task) and per point (the extra wall time over the process pool's, per point).
2. The analytic screen (:mod:`hwsim.studies.sweep_screen`): its time per point next to the
   simulation's. The search (:func:`hwsim.studies.sweep_search.search_model`, with the screen
   unless ``--no-screen``) runs with a budget of a tenth of the grid's points, per seed, answering from the grid's results (the simulation is
   deterministic, so a lookup is what a fresh evaluation would give): the hypervolume of its
   feasible front over the grid's, both normalized in the grid's box (sweep_front).

Prints Markdown tables (docs/sweep.md has them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hwsim.studies.sweep import (
    Point,
    SweepSpec,
    batch_size,
    evaluate,
    feasibility,
    grid_points,
    open_executor,
    run_points,
    task_overhead_s,
)
from hwsim.studies.sweep_front import box_of, normalized_hypervolume, pareto_mask
from hwsim.studies.sweep_screen import screen, screener
from hwsim.studies.sweep_search import search_model
from hwsim.studies.sweep_store import StoredPoint, SweepStore

#: A grid with a real trade-off: more NPU cores and the policies that spread work over the GPU
#: and the NPU cut latency but draw more power at once and more energy (idle cores, GPU); the
#: clock and pruning are monotone (the search has to find their best corner).
GRID = {
    "npu.clock_mhz": (600, 800, 1000, 1200),
    "npu.cores": (1, 2, 3),
    "precision": ("int8", "fp16", "int4"),
    "prune": (0.0, 0.25, 0.5),
    "policy": ("heft", "eft", "affinity-locality"),
}
SPEC = SweepSpec(
    models=(str(ROOT / "examples/models/resnet18.onnx"), str(ROOT / "examples/models/yolov8n.onnx")),
    chips=("rk3588",),
    grid=GRID,
    objectives=("latency_ms", "energy_mj", "peak_power_w"),
    constraints={"latency_ms": "<= 12"},
)
#: The seeds the search runs with (the documented figures use all ten).
SEEDS = tuple(range(10))


def _evaluate_grid(points: Sequence[Point], workers: int, dask: str | None) -> tuple[float, float, int, dict[str, StoredPoint]]:
    """(wall s, per-task overhead s, batch size, results) of the whole grid on one engine."""
    store = SweepStore("sqlite://")
    first = evaluate(points[0])
    with open_executor(workers, dask) as ex:
        overhead = task_overhead_s(ex)
        size = batch_size(first.seconds, overhead, len(points), workers)
        start = time.perf_counter()
        run_points(ex, points, store, size)
        wall = time.perf_counter() - start
    return wall, overhead, size, store.get(p.key for p in points)


def _cached_grid(points: Sequence[Point], path: Path) -> dict[str, StoredPoint]:
    """The grid's results from the SQLite store at ``path``, simulating (2 workers) only the
    points it lacks: the simulation is deterministic, so a stored result is what a fresh run
    gives (delete the file after a change to the simulator)."""
    store = SweepStore.at(path)
    done = store.keys()
    missing = [p for p in points if p.key not in done]
    if missing:
        with open_executor(2, None) as ex:
            run_points(ex, missing, store, batch_size(evaluate(missing[0]).seconds, task_overhead_s(ex), len(missing), 2))
    return store.get(p.key for p in points)


def _feasible(spec: SweepSpec, results: Sequence[StoredPoint]) -> np.ndarray:
    """The minimized objective values of the feasible results (points x objectives)."""
    constraints = spec.constraint_list()
    feasible = [r for r in results if feasibility(r, constraints)[0]]
    return np.array([[dict(r.objectives)[o] for o in spec.objectives] for r in feasible]).reshape(-1, len(spec.objectives))


def _hv(spec: SweepSpec, results: Sequence[StoredPoint], box: tuple[np.ndarray, np.ndarray]) -> float:
    v = _feasible(spec, results)
    return normalized_hypervolume(v[pareto_mask(v)], box) if len(v) else 0.0


def _screen_cost(spec: SweepSpec, results: dict[str, StoredPoint]) -> None:
    """The screen's time per point against the simulation's, per model: a first pass over the
    grid with cold caches (it loads and prunes the model and builds every chip variant, which
    the simulation's time leaves out), and a second with them warm."""
    print("| model | screen ms/point, cold | warm | simulation ms/point (median) | cold / simulation |")
    print("|---|---|---|---|---|")
    for model in spec.models:
        points = [p for p in grid_points(spec) if p.model == model]
        ms = []
        for _ in range(2):
            start = time.perf_counter()
            for p in points:
                screen(p)
            ms.append(1e3 * (time.perf_counter() - start) / len(points))
        sim_ms = 1e3 * statistics.median(results[p.key].seconds for p in points)
        print(f"| {Path(model).stem} | {ms[0]:.2f} | {ms[1]:.2f} | {sim_ms:.1f} | {100 * ms[0] / sim_ms:.1f}% |")
    print()


def _search(
    spec: SweepSpec, results: dict[str, StoredPoint], share: float, seeds: Sequence[int], round_size: int = 2,
    use_screen: bool = True,
) -> None:
    """Per model and seed: the search's hypervolume over the grid's, in the grid's box."""
    print("| model | seed | trials | distinct points | hypervolume | share of the grid's |")
    print("|---|---|---|---|---|---|")
    shares = []
    for model in spec.models:
        mine = [r for k, r in results.items() if json.loads(k)[0] == model]
        box = box_of(_feasible(spec, mine))  # the box the report uses: feasible points
        grid_hv = _hv(spec, mine, box)
        budget = max(1, round(share * len(mine)))
        for seed in seeds:
            found = search_model(
                spec, model, budget, lambda ps: {p.key: results[p.key] for p in ps}, seed, round_size,
                screen=screener((*spec.objectives, *spec.constraints)) if use_screen else None,
            )
            hv = _hv(spec, [results[p.key] for p in found], box)
            shares.append(hv / grid_hv)
            name = Path(model).stem
            print(f"| {name} | {seed} | {budget} | {len(found)} | {hv:.4f} | {100 * hv / grid_hv:.2f}% of {grid_hv:.4f} |")
    print(f"\nmean share {100 * statistics.mean(shares):.2f}%, worst {100 * min(shares):.2f}%"
          f" ({sum(x >= 0.99 for x in shares)} of {len(shares)} runs at 99% or more)")


def _scaling(points: Sequence[Point], repeats: int) -> None:
    """Points per second on 1 and 2 workers, interleaved (1, 2, 1, 2, ...) so that the machine's
    drift hits both alike; the efficiency of each round and their spread."""
    print("| round | points/s, 1 worker | points/s, 2 workers | efficiency |\n|---|---|---|---|")
    effs: list[float] = []
    for r in range(repeats):
        pps = {w: len(points) / _evaluate_grid(points, w, None)[0] for w in (1, 2)}
        effs.append(pps[2] / (2 * pps[1]))
        print(f"| round {r + 1} | {pps[1]:.1f} | {pps[2]:.1f} | {100 * effs[-1]:.0f}% |", flush=True)
    print(f"\nscaling efficiency: median {100 * statistics.median(effs):.0f}%, "
          f"range {100 * min(effs):.0f}-{100 * max(effs):.0f}% over {repeats} interleaved rounds")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=len(SEEDS))
    ap.add_argument("--budget-share", type=float, default=0.1)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--seed-from", type=int, default=SEEDS[0], help="first seed (100: the held-out seeds)")
    ap.add_argument("--models", help="comma-separated model names in examples/models (default: resnet18,yolov8n)")
    ap.add_argument("--round-size", type=int, default=2, help="points evaluated together (the CLI: max(2, workers))")
    ap.add_argument("--search-only", action="store_true", help="one 2-worker grid run, then the search")
    ap.add_argument("--cache", type=Path, help="--search-only: the grid's results kept in this SQLite file")
    ap.add_argument("--no-screen", action="store_true", help="the search without the analytic screen (before)")
    ap.add_argument("--scaling-only", action="store_true", help="only the process pool's scaling, interleaved")
    ap.add_argument("--repeats", type=int, default=3, help="--scaling-only: rounds of (1 worker, 2 workers)")
    args = ap.parse_args(argv)
    spec = SPEC
    if args.models:
        models = tuple(str(ROOT / f"examples/models/{m}.onnx") for m in args.models.split(","))
        spec = SPEC.model_copy(update={"models": models})
    points = grid_points(spec)
    seeds = range(args.seed_from, args.seed_from + args.seeds)
    shape = " x ".join(str(len(v)) for v in GRID.values())
    names = ", ".join(Path(m).stem for m in spec.models)
    print(f"grid: {len(points)} points ({names} on rk3588, {shape} each)\n")
    pps: dict[int, float] = {}
    results: dict[str, StoredPoint] = {}
    if args.scaling_only:
        _scaling(points, args.repeats)
        return 0
    print("| engine | workers | batch | points/s | efficiency | task overhead ms |")
    print("|---|---|---|---|---|---|")
    if args.search_only:
        results = _cached_grid(points, args.cache) if args.cache else _evaluate_grid(points, 2, None)[3]
        if not args.cache:
            _screen_cost(spec, results)
        _search(spec, results, args.budget_share, seeds, args.round_size, not args.no_screen)
        return 0
    for w in (int(x) for x in args.workers.split(",")):
        wall, overhead, size, results = _evaluate_grid(points, w, None)
        pps[w] = len(points) / wall
        eff = pps[w] / (w * pps[min(pps)]) if w != min(pps) else 1.0
        print(f"| process pool | {w} | {size} | {pps[w]:.1f} | {100 * eff:.0f}% | {1e3 * overhead:.2f} |")
    w = max(pps)
    wall, overhead, size, _ = _evaluate_grid(points, w, "local")
    dask_pps = len(points) / wall
    extra_ms = 1e3 * (1 / dask_pps - 1 / pps[w])
    print(f"| dask LocalCluster | {w} | {size} | {dask_pps:.1f} | - | {1e3 * overhead:.2f} |")
    print(f"\nDask's extra wall time per point over the process pool at {w} workers: {extra_ms:.2f} ms")
    seconds = [r.seconds for r in results.values()]
    print(f"simulation time per point: median {1e3 * statistics.median(seconds):.1f} ms\n")

    _screen_cost(spec, results)
    _search(spec, results, args.budget_share, seeds, args.round_size, not args.no_screen)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
