"""Command line: ``hwsim run``, ``hwsim chips``, ``hwsim schema``.

Exit codes: 0 success, 1 simulation or internal failure, 2 bad input or usage. Bad input
gets one line naming the file and the field or node (``--debug`` shows the traceback) and
nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import NoReturn

__all__ = ["build_parser", "main"]

log = logging.getLogger("hwsim")

#: Subcommands that live in modules of their own: command name -> module. Each module has
#: ``add_parser(sub)`` (adds its subparser to the ``add_subparsers`` object), ``main(args) -> int``
#: and ``INPUT_ERRORS``, the exception types that mean bad input (one line, exit 2). Modules keep
#: heavy imports inside ``main`` so that ``hwsim --help`` stays fast.
COMMAND_MODULES: dict[str, str] = {
    "compare": "hwsim.commands.compare",
    "sensitivity": "hwsim.commands.sensitivity",
    "schedule": "hwsim.commands.schedule",
    "fingerprint": "hwsim.commands.fingerprint",
    "validate": "hwsim.commands.validate",
}


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMAND_MODULES[name])


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
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


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``hwsim run: error: ...``), exit 2.

    Subparsers are made with the same class, so every subcommand behaves alike.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from cost_models.table import PRECISIONS
    from scheduler import POLICIES

    p = _Parser(
        prog="hwsim",
        description="Simulate an ONNX model on a heterogeneous SoC described in YAML.",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="simulate MODEL on CHIP and write reports")
    r.add_argument("chip", help="chip YAML file or bundled chip name (see `hwsim chips`)")
    r.add_argument("model", help="ONNX model file (weights may be absent)")
    r.add_argument("--out", type=Path, help="report folder (default: reports/<chip>-<model>/)")
    r.add_argument(
        "--precision", choices=PRECISIONS, default="int8",
        help="deployment precision of float tensors; 'model' keeps the file's dtypes (default: int8)",
    )  # fmt: skip
    r.add_argument("--policy", choices=sorted(POLICIES), default="affinity-locality", help="scheduling policy")
    r.add_argument(
        "--input-shape", action="append", default=[], metavar="NAME=D1xD2x...",
        help="pin a graph input's shape (repeatable), e.g. images=1x3x640x640",
    )  # fmt: skip
    r.add_argument(
        "--units", metavar="UNIT[:CORES],...",
        help="simulate only these units of the chip, e.g. npu:1 for one NPU core",
    )  # fmt: skip
    r.add_argument(
        "--set", action="append", default=[], metavar="TARGET.FIELD=VALUE", dest="overrides",
        help="override a chip field without editing the YAML (repeatable), e.g. npu.clock_mhz=600",
    )  # fmt: skip
    r.add_argument(
        "--frames", type=_positive_int, default=1, metavar="N",
        help="stream N inputs through the schedule: throughput, initiation interval, per-frame latency",
    )  # fmt: skip
    r.add_argument(
        "--in-flight", type=_positive_int, metavar="K",
        help="with --frames: admit a frame when the one K frames earlier is done (default: all at once)",
    )  # fmt: skip
    r.add_argument(
        "--frame-order", choices=("interleaved", "frame-major"), default="interleaved",
        help="with --frames: a core runs a later frame's op while an earlier frame's next op waits "
        "(interleaved, default), or finishes each frame's ops before the next frame's (frame-major)",
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
    r.add_argument("--no-double-buffer", action="store_true", help="tiled ops load, compute, store in turn")
    r.add_argument("--no-split", action="store_true", help="never split an op across the cores of a unit")
    r.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the summary")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots (faster)")
    r.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    c = sub.add_parser("chips", help="list the bundled chips")
    c.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    s = sub.add_parser("schema", help="print the JSON Schema of chip files")
    s.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for name in COMMAND_MODULES:
        _command_module(name).add_parser(sub)
    return p


def _cmd_chips() -> int:
    from chips.schema import bundled_chips, load_chip

    for name, path in bundled_chips().items():
        chip = load_chip(path)
        kinds = ", ".join(f"{u.name} ({u.kind} x{u.cores})" for u in chip.units)
        print(f"{name:<18} {chip.description}")
        print(f"{'':<18} units: {kinds}; DRAM {chip.dram.bandwidth_gbps:g} GB/s")
    return 0


def _cmd_schema() -> int:
    from chips.schema import chip_json_schema

    print(json.dumps(chip_json_schema(), indent=2))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from chips.schema import load_chip
    from chips.variants import override, restrict
    from cost_models.table import UnplaceableError
    from graph_ir.onnx_import import load_onnx, parse_input_shape
    from hwsim.pipeline import run_graph
    from hwsim.policy_check import BudgetError, resolve_deadlines
    from hwsim.report.files import check_out_dir, write_reports
    from hwsim.report.summary import build_summary
    from hwsim.report.terminal import format_summary
    from hwsim.sim.engine import EngineOptions

    if args.objective == "energy" and (args.latency_budget_ms is None or not args.latency_budget_ms > 0):
        print("hwsim: error: --objective energy needs --latency-budget-ms MS (a positive number)", file=sys.stderr)
        return 2

    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    chip = load_chip(args.chip)
    if args.overrides:
        chip = override(chip, args.overrides)
    if args.units:
        chip = restrict(chip, args.units)
    graph = load_onnx(args.model, shapes)
    out = args.out if args.out is not None else Path("reports") / f"{chip.name}-{graph.name}"
    check_out_dir(out)
    deadlines = resolve_deadlines(graph, args.deadline, str(args.model))
    try:
        options = EngineOptions(
            double_buffer=not args.no_double_buffer, split=not args.no_split, frame_order=args.frame_order
        )
        result = run_graph(
            graph, chip, args.precision, args.policy, frames=args.frames, options=options, in_flight=args.in_flight,
            objective=args.objective, latency_budget_ms=args.latency_budget_ms, deadlines=deadlines,
        )  # fmt: skip
    except UnplaceableError as exc:
        raise UnplaceableError(f"{args.model}: {exc}") from None
    except BudgetError as exc:
        print(f"hwsim: error: {args.model} on {chip.name}: {exc}", file=sys.stderr)
        return 1
    if graph.unknown_ops:
        log.warning("no cost formula for op types %s: costed as memory copies", ", ".join(graph.unknown_ops))
    summary = build_summary(result)
    write_reports(result, out, plots=not args.no_plots, summary=summary)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    from chips.schema import ChipError
    from cost_models.table import UnplaceableError
    from graph_ir.ir import ModelError
    from hwsim.report.files import ReportError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code) if isinstance(exc.code, int) else 2
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.INFO,
        format="hwsim: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    input_errors: tuple[type[BaseException], ...] = (ChipError, ModelError, UnplaceableError, ReportError)
    for name in COMMAND_MODULES:
        input_errors += tuple(_command_module(name).INPUT_ERRORS)
    try:
        if args.command in COMMAND_MODULES:
            return int(_command_module(args.command).main(args))
        if args.command == "chips":
            return _cmd_chips()
        if args.command == "schema":
            return _cmd_schema()
        return _cmd_run(args)
    except input_errors as exc:
        if args.debug:
            traceback.print_exc()
        print(f"hwsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hwsim: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence: one line, exit 1
        if args.debug:
            traceback.print_exc()
        print(f"hwsim: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return 1
