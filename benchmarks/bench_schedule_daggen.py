"""The default policy against proven optima on task graphs of a generator the project never tuned on.

``bench_scheduler_quality.py`` draws its DAGs from ``scheduler.generators.random_problem``:
layered, about sqrt(n) wide, up to three predecessors, work uniform in [1, 20]. The policy's
rounds and probe limits were chosen on those. This script draws the DAGs from ``daggen``
(PyPI, the generator of Suter and Hunold's DAGGEN used across the scheduling literature and in
``shared/reference/scheduling.md``): its shape parameters (``fat``, ``density``, ``regular``,
``jump_size``) are drawn per graph, and its task work spans two to three orders of magnitude.
Nothing in hwsim was fitted on these graphs.

Units: "related" (one speed each, uniform in [0.5, 2]: run time = work / speed) or "unrelated"
(each task's run time on each unit its work times an independent factor, uniform in [0.5, 2]).
Communication: daggen's data volumes (a pair daggen lists twice is one transfer of both), scaled so that the mean transfer is ``CCR`` times the mean
run time, paid only between different units. Each graph goes through
:func:`scheduler.taskgraph.parse_task_graph`, as a file given to ``hwsim schedule`` would.
Optima: :func:`scheduler.exact.exact` (OR-Tools CP-SAT) seeded with the best heuristic; a row
counts the proven ones apart and gives the ratio over the best known schedule for the rest.

    pip install daggen   # not a dependency of hwsim: this script only
    python benchmarks/bench_schedule_daggen.py [--count N] [--seed-base N] [--limit S]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from scheduler import DEFAULT_POLICY
from scheduler.problem import Problem
from scheduler.taskgraph import parse_task_graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scheduler_quality import (  # the random-DAG table: its row, its cells
    SHOWN,
    Config,
    against_exact,
    mean_max,
)


def graph_json(seed: int, n: int, units: int, ccr: float, kind: str) -> dict[str, Any]:
    """One daggen DAG as a ``hwsim schedule`` task-graph document (see the module)."""
    import daggen

    rng = random.Random(seed)
    shape = {
        "fat": rng.choice((0.2, 0.5, 0.8)),
        "density": rng.choice((0.2, 0.5, 0.8)),
        "regular": rng.choice((0.2, 0.8)),
        "jump_size": rng.choice((1, 2, 4)),
    }
    tasks, edges = daggen.DAG(seed=seed, num_tasks=n, **shape).task_n_edge_dicts()
    work = np.array([float(t["computation"]) for t in tasks])
    work = 10.0 * work / work.mean()
    names = [f"t{t['name']}" for t in tasks]
    if kind == "related":
        speed = [rng.uniform(0.5, 2.0) for _ in range(units)]
        cost = [[w / s for s in speed] for w in work]
    else:
        cost = [[w * rng.uniform(0.5, 2.0) for _ in range(units)] for w in work]
    mean_run = float(np.mean(cost))
    volume: dict[tuple[int, int], float] = {}  # daggen may list one pair twice (jump_size > 1): one transfer of both
    for e in edges:
        volume[e["source"], e["target"]] = volume.get((e["source"], e["target"]), 0.0) + float(e["data"])
    data = np.array(list(volume.values()))
    comm = ccr * mean_run * data / data.mean() if len(data) else data
    return {
        "units": [f"u{u}" for u in range(units)],
        "tasks": [{"name": nm, "cost": {f"u{u}": c for u, c in enumerate(row)}} for nm, row in zip(names, cost, strict=True)],
        "edges": [{"src": f"t{a}", "dst": f"t{b}", "comm": float(c)} for (a, b), c in zip(volume, comm, strict=True)],
    }


def problem(seed: int, c: Config) -> Problem:
    return parse_task_graph(graph_json(seed, c.n, c.units, c.ccr, c.kind), f"daggen seed {seed}").problem


def row(c: Config, seed_base: int, proven_all: dict[str, list[float]], known_all: dict[str, list[float]]) -> None:
    proven: dict[str, list[float]] = {k: [] for k in SHOWN}
    known: dict[str, list[float]] = {k: [] for k in SHOWN}
    t_def, t_ex = [], []
    for k in range(c.count):
        res, r, s_def, s_ex = against_exact(problem(seed_base + 1000 * c.n + k, c), c.limit_s)
        t_def.append(s_def)
        t_ex.append(s_ex)
        for name in SHOWN:
            (proven if r.proven else known)[name].append(res[name] / r.solution.makespan_ns)
    for name in SHOWN:
        proven_all[name] += proven[name]
        known_all[name] += known[name]
    cells = " | ".join(mean_max(proven[name]) for name in SHOWN)
    print(f"| n={c.n} ({c.count}) | {c.units} | {c.ccr:g} | {c.kind} | {len(proven['heft'])}/{c.count} | {cells} "
          f"| {mean_max(known[DEFAULT_POLICY])} | {mean_max(known['heft'])} | {statistics.median(t_def):.2f} "
          f"| {statistics.median(t_ex):.1f} |", flush=True)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10, help="graphs per row at n = 10 and 20 (half at n = 50)")
    ap.add_argument("--seed-base", type=int, default=0, help="graph k of a row at n tasks has seed this + 1000 n + k")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds CP-SAT may spend on one graph (Config.limit_s)")
    args = ap.parse_args()
    try:
        import daggen  # noqa: F401
    except ImportError:
        print("bench_schedule_daggen: daggen is not installed; pip install daggen", file=sys.stderr)
        return 2
    shapes = ((10, 3, (0.5, 1.0, 5.0), args.count), (20, 4, (1.0, 5.0), args.count), (50, 4, (1.0,), max(1, args.count // 2)))
    configs = [Config(n, u, ccr, kind, cnt, args.limit) for n, u, ccrs, cnt in shapes for ccr in ccrs
               for kind in ("related", "unrelated")]  # fmt: skip
    print("| DAGs | units | CCR | kind | optima proven | default/OPT | HEFT/OPT | PEFT/OPT | CPOP/OPT "
          "| unproven: default/best known | unproven: HEFT/best known | default s | CP-SAT s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    proven: dict[str, list[float]] = {k: [] for k in SHOWN}
    known: dict[str, list[float]] = {k: [] for k in SHOWN}
    for c in configs:
        row(c, args.seed_base, proven, known)
    print()
    print("| over | instances | default | HEFT | PEFT | CPOP |")
    print("|---|---|---|---|---|---|")
    print(f"| proven optima (mean / max) | {len(proven['heft'])} | " + " | ".join(mean_max(proven[k]) for k in SHOWN) + " |")
    print(f"| unproven, best known (mean / max) | {len(known['heft'])} | " + " | ".join(mean_max(known[k]) for k in SHOWN) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
