"""``hwsim sweep SWEEP.yaml``: Pareto fronts over models x chips x a grid, on a pool or Dask.

Writes ``points.csv``, ``front.csv``, ``results.sqlite``, ``pareto.png`` and ``report.html``
into ``--out`` (default ``reports/sweep-<file stem>/``). A rerun into the same folder skips the
points ``results.sqlite`` already holds and says how many. ``--budget N`` runs a multi-objective search (the analytic
screen's best points, TPE, then a Pareto local search) for N distinct points per model instead
of the full grid. Bad input (the sweep file, an unreachable
``--dask`` address) is one line and exit 2, with nothing written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwsim.commands.common import UsageError, add_debug

if TYPE_CHECKING:
    from hwsim.studies.sweep import Point
    from hwsim.studies.sweep_store import StoredPoint, SweepStore

__all__ = ["SWEEP_FILES", "add_parser", "input_errors", "main"]

#: The files ``hwsim sweep`` writes into its folder (the store's journal while it writes).
SWEEP_FILES = ("points.csv", "front.csv", "results.sqlite", "pareto.png", "report.html", "results.sqlite-journal")


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from hwsim.studies.sweep import SweepError
    from hwsim.studies.sweep_store import StoreError

    return (SweepError, StoreError)


def add_parser(sub: Any) -> None:
    """Add the ``sweep`` subcommand to an ``add_subparsers`` object."""
    s = sub.add_parser(
        "sweep",
        help="Pareto fronts over models x chips x a grid of chip fields, precision, pruning, policy",
        description="Simulate every point of a sweep file (or --budget N search trials per model), "
        "keep the non-dominated feasible points per model; on a process pool or a Dask cluster.",
    )
    s.add_argument("sweep", type=Path, help="sweep YAML file (see examples/sweeps/rk3588_small.yaml)")
    s.add_argument("--out", type=Path, help="folder (default reports/sweep-<file stem>/); a rerun resumes")
    s.add_argument("--workers", type=int, default=2, help="worker processes (default: %(default)s)")
    s.add_argument(
        "--dask", metavar="local|tcp://HOST:PORT",
        help="evaluate on Dask: a LocalCluster of --workers processes, or the scheduler at the address",
    )  # fmt: skip
    s.add_argument("--budget", type=int, metavar="N", help="multi-objective search (the analytic screen's best, TPE, then a Pareto local search): N distinct points per model instead of the grid")
    s.add_argument("--seed", type=int, default=0, help="seed of the --budget search (default: %(default)s)")
    add_debug(s)


def _progress(total: int, desc: str) -> Any:
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: the process pool forks after this
    return tqdm(total=total, file=sys.stderr, unit="pt", desc=desc, smoothing=0.1, dynamic_ncols=True)


class _Runner:
    """Evaluates points on one engine: the first in this process (to time it), then batches
    sized from that time and the engine's measured per-task overhead."""

    def __init__(self, executor: Executor, store: SweepStore, workers: int) -> None:
        self.executor, self.store, self.workers = executor, store, workers
        self.size: int | None = None

    def __call__(self, points: Sequence[Point], on_done: Callable[[int], None] = lambda n: None) -> dict[str, StoredPoint]:
        from hwsim.studies.sweep import batch_size, evaluate, run_points, task_overhead_s

        done = self.store.keys()
        todo = [p for p in points if p.key not in done]
        if todo and self.size is None:
            first = evaluate(todo[0])
            self.store.add([first])
            on_done(1)
            overhead_s = task_overhead_s(self.executor)
            self.size = batch_size(first.seconds, overhead_s, len(todo) - 1, self.workers)
            print(
                f"hwsim sweep: a point takes {1e3 * first.seconds:.1f} ms, a task's overhead {1e3 * overhead_s:.2f} ms: "
                f"{self.size} points per task",
                file=sys.stderr,
            )
            todo = todo[1:]
        if todo:
            run_points(self.executor, todo, self.store, self.size or 1, on_done)
        return self.store.get(p.key for p in points)


def _evaluate_all(args: argparse.Namespace, spec: Any, runner: _Runner, store: SweepStore) -> list[Point]:
    """Evaluate the grid (or run the search); returns the points in output order."""
    from hwsim.studies.sweep import grid_points
    from hwsim.studies.sweep_screen import screener
    from hwsim.studies.sweep_search import search_model

    if args.budget is None:
        points = grid_points(spec)
        done = store.keys()
        skipped = sum(p.key in done for p in points)
        if skipped:
            print(f"hwsim sweep: resuming: {skipped} of {len(points)} points already in results.sqlite", file=sys.stderr)
        with _progress(len(points) - skipped, "sweep") as bar:
            runner(points, bar.update)
        return points
    points = []
    with _progress(args.budget * len(spec.models), "search") as bar:
        for model in spec.models:
            points += search_model(
                spec, model, args.budget, runner, args.seed, round_size=max(2, args.workers), on_round=bar.update,
                screen=screener((*spec.objectives, *spec.constraints)),
            )
    return points


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim sweep``; returns the exit code."""
    from hwsim.report.outdir import check_own_dir
    from hwsim.studies.sweep import load_sweep, open_executor
    from hwsim.studies.sweep_report import sweep_tables, write_outputs
    from hwsim.studies.sweep_store import SweepStore

    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected at least 1")
    if args.budget is not None and args.budget < 1:
        raise UsageError(f"--budget {args.budget}: expected at least 1")
    spec = load_sweep(args.sweep)
    out: Path = args.out if args.out is not None else Path("reports") / f"sweep-{args.sweep.stem}"
    check_own_dir(out, SWEEP_FILES)
    with open_executor(args.workers, args.dask) as executor:
        out.mkdir(parents=True, exist_ok=True)
        store = SweepStore.at(out / "results.sqlite")
        try:
            points = _evaluate_all(args, spec, _Runner(executor, store, args.workers), store)
            tables = sweep_tables(spec, points, store.get(p.key for p in points))
        finally:
            store.close()
    write_outputs(tables, out, args.sweep.read_text(encoding="utf-8"))
    feasible = sum(r.feasible for r in tables.rows)
    print(f"hwsim sweep: {len(tables.rows)} points, {feasible} feasible; objectives {', '.join(spec.objectives)}")
    for model, front, hv in tables.fronts:
        print(f"  {model:<20} front {len(front):3d} points  hypervolume {hv:.4f}")
    print(f"  reports       {out}/")
    return 0
