"""``hwsim run CHIP MODEL``: simulate one model on one chip and write every report.

Exit codes: 0 done, 1 a deadline missed, no schedule within the latency budget, or the DRAM
overcommitted (one line naming the domain, the peak and the capacity, nothing written;
``--allow-overcommit`` reports it in the reports instead), 2 bad input or options that do not go
together (one line, nothing written), a power cap (``--max-power-w``) below what one op or
transfer draws alone among them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwsim.commands.common import (
    UsageError,
    add_chip_model_arguments,
    add_debug,
    add_model_options,
    load_target,
    whole_number_at_least,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from chips.schema import Chip
    from cost_models.mapping import OpMapping
    from cost_models.table import CostTable
    from graph_ir.ir import ModelGraph
    from hwsim.pipeline import RunResult
    from hwsim.report.provenance import Provenance
    from hwsim.report.schedule_file import ScheduleFile
    from hwsim.report.summary import AssumedRange, Summary
    from scheduler import Schedule

__all__ = ["add_parser", "check_usage", "input_errors", "main"]

log = logging.getLogger("hwsim")

#: One bounded run (a workload's few models, an ``--assume`` range's few points): the CLI does
#: not collect garbage meanwhile (:func:`hwsim.cli.main`); what it makes it keeps to its end.
ONE_RUN = True


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones): a bad
    quantization binding, a power cap below what one op draws alone."""
    from graph_ir.quant_binding import BindingError
    from hwsim.report.schedule_file import ScheduleFileError
    from hwsim.sim.power import PowerCapError
    from hwsim.studies.workload import WorkloadError

    return (BindingError, PowerCapError, ScheduleFileError, WorkloadError)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value



def _deadline(text: str) -> tuple[str, float]:
    name, sep, ms = text.rpartition("=")
    try:
        value = float(ms)
    except ValueError:
        value = -1.0
    if not sep or not name or not value >= 0.0:
        raise argparse.ArgumentTypeError(f"expected NAME=MS with MS a non-negative number, got {text!r}")
    return name, value


def add_parser(sub: Any) -> None:
    """Add the ``run`` subcommand to an ``add_subparsers`` object."""
    from hwsim.sim.engine import FRAME_ORDERS

    r = sub.add_parser("run", help="simulate MODEL on CHIP and write reports")
    add_chip_model_arguments(r, model_optional=True)
    r.add_argument(
        "--workload", type=Path, metavar="W.yaml",
        help="instead of MODEL: several models at their rates and criticality, sharing the chip (see docs/workloads.md)",
    )  # fmt: skip
    r.add_argument("--out", type=Path, help="report folder (default: reports/<chip>-<model>/)")
    add_model_options(r)
    r.add_argument(
        "--frames", type=whole_number_at_least(1), default=1, metavar="N",
        help="stream N inputs through the schedule: throughput, initiation interval, per-frame latency",
    )  # fmt: skip
    r.add_argument(
        "--in-flight", type=whole_number_at_least(1), metavar="K",
        help="with --frames: admit a frame when the one K frames earlier is done (default: all at once)",
    )  # fmt: skip
    r.add_argument(
        "--frame-order", choices=FRAME_ORDERS, default=None,
        help=f"with --frames: a core runs a later frame's op while an earlier frame's next op waits "
        f"({FRAME_ORDERS[0]}, default), or finishes each frame's ops before the next frame's (frame-major)",
    )  # fmt: skip
    r.add_argument(
        "--objective", choices=("latency", "energy"), default="latency",
        help="minimize latency, or energy within --latency-budget-ms (default: latency)",
    )  # fmt: skip
    r.add_argument("--latency-budget-ms", type=float, metavar="MS", help="with --objective energy: latency limit")
    r.add_argument(
        "--deadline", action="append", default=[], type=_deadline, metavar="NAME=MS",
        help="finish graph output or node NAME within MS ms (repeatable); served first, slack reported, exit 1 if missed",
    )  # fmt: skip
    r.add_argument(
        "--quant", type=Path, metavar="BINDING.yaml",
        help="cost each op in the dtype its quantization binding gives (instead of one --precision), "
        "conversions inserted where dtypes change; see docs/quantization.md",
    )  # fmt: skip
    from cost_models.fusion import FUSE_MODES

    r.add_argument(
        "--fuse", choices=FUSE_MODES, default=FUSE_MODES[0],
        help="fuse each legal conv/matmul epilogue group where it is cheaper on this chip (auto), every one (on), "
        "or none (off) (default: auto)",
    )  # fmt: skip
    r.add_argument(
        "--max-power-w", type=_positive_float, metavar="W",
        help="cap the chip's instantaneous power at W watts: work waits until its power fits; the "
        "report says what it cost (exit 2 when one op alone draws more)",
    )  # fmt: skip
    r.add_argument("--no-double-buffer", action="store_true", help="tiled ops load, compute, store in turn")
    r.add_argument("--no-split", action="store_true", help="never split an op across the cores of a unit")
    r.add_argument(
        "--allow-overcommit", action="store_true",
        help="report a DRAM peak over dram.capacity_mib (summary.json overcommitted) instead of failing",
    )  # fmt: skip
    r.add_argument(
        "--export-schedule", type=Path, metavar="FILE.json",
        help="also write the schedule that ran as a versioned schedule file (see `hwsim schema --schedule`)",
    )  # fmt: skip
    r.add_argument(
        "--schedule", type=Path, metavar="FILE.json",
        help="replay this schedule file (placements and per-core order) instead of scheduling; "
        "refused for another model",
    )  # fmt: skip
    r.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the summary")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots (faster)")
    add_debug(r)


def check_usage(args: argparse.Namespace) -> None:
    """Refuse an option without its partner, before anything is read or written.

    Raises
    ------
    UsageError
        ``--objective energy`` without a positive ``--latency-budget-ms``, a budget without
        ``--objective energy``, ``--in-flight`` / ``--frame-order`` without ``--frames N > 1``, or
        ``--quant`` with a ``--precision`` other than the default (the binding's ``default``
        is the precision then), ``--schedule`` with ``--objective energy`` or a ``--policy``.
    """
    from scheduler import DEFAULT_POLICY

    if getattr(args, "quant", None) is not None and args.precision != "int8":
        raise UsageError(
            f"--quant and --precision {args.precision} do not go together: the binding's 'default' "
            "gives the dtype of every op no rule names"
        )
    if args.objective == "energy" and (args.latency_budget_ms is None or not args.latency_budget_ms > 0):
        raise UsageError("--objective energy needs --latency-budget-ms MS (a positive number)")
    if getattr(args, "schedule", None) is not None:
        if args.objective != "latency":
            raise UsageError("--schedule replays a schedule: --objective energy does not apply")
        if args.policy != DEFAULT_POLICY:
            raise UsageError(f"--schedule replays a schedule: --policy {args.policy} does not apply")
    if args.latency_budget_ms is not None and args.objective != "energy":
        raise UsageError("--latency-budget-ms applies only with --objective energy")
    if args.frames == 1:
        given = [o for o, v in (("--in-flight", args.in_flight), ("--frame-order", args.frame_order)) if v is not None]
        if given:
            raise UsageError(f"{given[0]} applies only with --frames N, N > 1")


def _check_frames(frames: int, graph: ModelGraph, source: str) -> None:
    """Refuse ``--frames`` whose ops, all frames together, are more than one run simulates
    (:data:`graph_ir.files.MAX_GRAPH_OPS`, as a workload's instances): 10^9 frames ran for hours."""
    from graph_ir import files

    total = frames * len(graph)
    if total > files.MAX_GRAPH_OPS:
        raise UsageError(
            f"{source}: --frames {frames}: {frames:,} frames of {len(graph):,} ops are {total:,} ops, over the limit "
            f"of {files.MAX_GRAPH_OPS:,} one run simulates"
        )


def _simulate(args: argparse.Namespace, replayed: ScheduleFile | None) -> tuple[RunResult, Path] | None:
    """Load, check the report folder, simulate (``replayed``: the ``--schedule`` file); None when
    no schedule meets the latency budget."""
    from hwsim.report.files import check_out_dir

    chip, graph = load_target(args)
    out = args.out if args.out is not None else Path("reports") / f"{chip.name}-{graph.name}"
    check_out_dir(out)
    result = _run(args, chip, graph, replayed)
    return None if result is None else (result, out)


def _run(args: argparse.Namespace, chip: Chip, graph: ModelGraph, replayed: ScheduleFile | None) -> RunResult | None:
    """Simulate ``graph`` on ``chip`` with the command's options; None when no schedule meets
    the latency budget (the reason printed)."""
    from cost_models.table import UnplaceableError
    from hwsim.pipeline import run_graph
    from hwsim.policy_check import BudgetError, resolve_deadlines
    from hwsim.sim.engine import FRAME_ORDERS, EngineOptions

    _check_frames(args.frames, graph, str(args.model))
    deadlines = resolve_deadlines(graph, args.deadline, str(args.model))
    quant = None
    if args.quant is not None:
        from graph_ir.quant_binding import load_binding, resolve_graph

        quant = resolve_graph(load_binding(args.quant), graph, str(args.quant))
    replay, mapping = _replay(args, chip, replayed) if replayed is not None else (None, None)
    options = EngineOptions(
        double_buffer=not args.no_double_buffer, split=not args.no_split,
        frame_order=args.frame_order or FRAME_ORDERS[0], max_power_w=args.max_power_w,
    )  # fmt: skip
    try:
        result = run_graph(
            graph, chip, args.precision, args.policy, frames=args.frames, options=options, in_flight=args.in_flight,
            objective=args.objective, latency_budget_ms=args.latency_budget_ms, deadlines=deadlines, quant=quant, fuse=args.fuse,
            schedule=replay, replay_label=f"replayed ({args.schedule})", mapping=mapping,
        )  # fmt: skip
    except UnplaceableError as exc:
        raise UnplaceableError(f"{args.model} on {args.chip}: {exc}") from None
    except BudgetError as exc:
        print(f"hwsim: error: {args.model} on {chip.name}: {exc}", file=sys.stderr)
        return None
    return result


def _assumed_range(
    args: argparse.Namespace, chip: Chip, at_hi_ms: float, replayed: ScheduleFile | None
) -> AssumedRange | None:
    """Latency at a few points of the ``--assume NAME=LO..HI`` range (None: no range given);
    the HI point is the run already made (``at_hi_ms``)."""
    from graph_ir.dynamic import parse_assume, range_points
    from graph_ir.onnx_import import load_onnx
    from hwsim.commands.common import assume_counts, parse_input_shapes
    from hwsim.report.summary import AssumedRange

    ranged = [(n, lo, hi) for n, lo, hi in (parse_assume(t) for t in args.assume) if lo != hi]
    if not ranged:
        return None
    name, lo, hi = ranged[0]
    points = []
    for value in range_points(lo, hi):
        ms = at_hi_ms
        if value != hi:
            graph = load_onnx(args.model, parse_input_shapes(args.input_shape), assume_counts(args.assume, value))
            result = _run(args, chip, graph, replayed)
            ms = result.analysis.latency_ms if result is not None else float("nan")
        points.append((value, round(ms, 6)))
    return AssumedRange(name, lo, hi, tuple(points))


def _replay(
    args: argparse.Namespace, chip: Chip, sf: ScheduleFile
) -> tuple[Callable[[ModelGraph, CostTable], Schedule], dict[str, OpMapping]]:
    """The schedule file of ``--schedule`` turned into a schedule for the graph and cost table of
    the run, and the mapping signatures it records (applied again)."""
    from hwsim.report.provenance import file_sha256
    from hwsim.report.schedule_file import ScheduleFileError, mapping_of, to_schedule

    model_sha = file_sha256(args.model)
    try:
        mapping = mapping_of(sf)
    except ScheduleFileError as exc:
        raise ScheduleFileError(f"{args.schedule}: {exc}") from None
    return (lambda graph, table: to_schedule(sf, graph, chip, table, model_sha, str(args.schedule))), mapping


#: ``run`` options that do not change what is simulated, left out of the provenance.
NOT_PROVENANCE = ("command", "out", "json", "no_plots", "debug", "export_schedule")


def provenance(args: argparse.Namespace, result: RunResult) -> Provenance:
    """The run's provenance: hwsim version, chip and model sha256, the options that shape it
    (a replay: the schedule file and its sha256 too, kept out of ``summary.json``)."""
    from hwsim.report.provenance import Provenance, chip_sha256, file_sha256, hwsim_version

    options = {k: v for k, v in vars(args).items() if k not in NOT_PROVENANCE}
    replayed = (str(args.schedule), file_sha256(args.schedule)) if args.schedule is not None else (None, None)
    return Provenance(hwsim_version(), chip_sha256(result.chip), file_sha256(args.model), options, *replayed)


def _load_replay(args: argparse.Namespace) -> ScheduleFile | None:
    """The ``--schedule`` file, read, migrated and validated (None: no replay)."""
    from hwsim.report.schedule_file import load_schedule_file

    return load_schedule_file(args.schedule) if args.schedule is not None else None


def _restore(summary: Summary, replayed: ScheduleFile | None) -> Summary:
    """A replay's summary with the original run's schedule choice written back, when the file
    records it (:mod:`hwsim.report.replay`)."""
    from hwsim.report.replay import restore

    if replayed is None or replayed.original is None:
        return summary
    where = summary.provenance.replayed_from if summary.provenance is not None else "the schedule file"
    log.info("replayed %s: summary.json reports how its original run chose the schedule", where)
    return restore(summary, replayed.original)


def _export(path: Path, result: RunResult, summary: Summary) -> None:
    from hwsim.report.outdir import ReportError
    from hwsim.report.replay import original_run
    from hwsim.report.schedule_file import schedule_file, schedule_file_json

    prov = summary.provenance
    assert prov is not None  # a run's summary always has it
    origin = original_run(summary, prov.replayed_from, prov.replayed_sha256)
    data = schedule_file_json(schedule_file(result, prov.chip_sha256, prov.model_sha256, origin))
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ReportError(f"{path}: cannot write the schedule file: {exc.strerror}") from None


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim run``; returns the exit code."""
    from hwsim.report.files import write_reports
    from hwsim.report.summary import build_summary, dtype_fallback_ops
    from hwsim.report.terminal import format_summary

    if getattr(args, "workload", None) is not None:
        from hwsim.commands import workload

        return workload.main(args)
    if args.model is None:
        raise UsageError("give MODEL or --workload W.yaml")
    check_usage(args)
    replayed = _load_replay(args)
    done = _simulate(args, replayed)
    if done is None:
        return 1
    result, out = done
    over = result.memory.overcommitted() if result.memory is not None else None
    if over is not None:
        words = f"{args.model} on {result.chip.name}: {over.overflow_words()}"
        if not args.allow_overcommit:
            print(f"hwsim: error: {words} (--allow-overcommit reports it instead)", file=sys.stderr)
            return 1
        log.warning("%s (allowed by --allow-overcommit)", words)
    if result.graph.unknown_ops:
        log.warning("no cost formula for op types %s: costed as memory copies", ", ".join(result.graph.unknown_ops))
    for fallback, count in dtype_fallback_ops(result).items():
        dtype, _, unit = fallback.partition(":")
        deployed, _, asked = dtype.partition("<-")
        log.warning("%d op(s) on %s run in %s: the unit has no %s for them", count, unit, deployed, asked)
    prov = provenance(args, result)
    summary = _restore(replace(build_summary(result), provenance=prov), replayed)
    if result.graph.assumed:
        dims = ", ".join(f"{d.tensor}={d.value}" for d in result.graph.assumed)
        log.warning("data-dependent dimensions assumed: %s (see assumed_dims in summary.json)", dims)
    for line in result.graph.warnings:
        log.warning("%s", line)
    ranged = _assumed_range(args, result.chip, summary.latency_ms, replayed)
    if ranged is not None:
        summary = replace(summary, assumed_range=ranged)
    write_reports(result, out, plots=not args.no_plots, summary=summary)
    if args.export_schedule is not None:
        _export(args.export_schedule, result, summary)
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))
    else:
        print(format_summary(summary, out))
    missed = result.choice.missed if result.choice is not None else ()
    if missed:
        worst = min(missed, key=lambda d: d.slack_ms)
        print(
            f"hwsim: deadline missed: {args.model}: {worst.name} finishes at {worst.finish_ms:.6g} ms, "
            f"{-worst.slack_ms:.6g} ms after its deadline of {worst.deadline_ms:g} ms "
            f"({len(missed)} deadline(s) missed; reports in {out}/ marked deadline_missed)",
            file=sys.stderr,
        )
        return 1
    return 0
