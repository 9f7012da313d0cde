"""``hwsim validate``: predicted against measured on this machine's CPU (onnxruntime)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug
from hwsim.host.errors import MeasureError, ValidateError

__all__ = ["add_parser", "input_errors", "main"]

log = logging.getLogger("hwsim")


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return (ValidateError, MeasureError)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="run MODEL with onnxruntime here and compare with the CHIP's CPU prediction")
    p.add_argument("chip", help="chip YAML (e.g. one written by `hwsim fingerprint`) or bundled chip name")
    p.add_argument("models", nargs="+", metavar="MODEL", help="ONNX model file(s); weightless files get random weights")
    p.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads = CPU cores predicted (default 1)")
    p.add_argument("--opt", choices=["all", "extended", "basic", "disable"], default="all",
                   help="onnxruntime graph optimization level (default: all, onnxruntime's default)")  # fmt: skip
    p.add_argument("--runs", type=int, default=20, help="timed runs per model, at least 10 (default 20)")
    p.add_argument("--rounds", type=int, default=1,
                   help="measure every model this many times, interleaved; the best round counts (default 1)")  # fmt: skip
    p.add_argument(
        "--input-shape", action="append", default=[], metavar="NAME=D1xD2x...",
        help="pin a graph input's shape (repeatable)",
    )  # fmt: skip
    p.add_argument("--calibrate", action="store_true", help="fit efficiencies and overhead and write a calibration file")
    p.add_argument("--raw-times", action="store_true",
                   help="do not put measurements on the fingerprint's clock (see `speed` in the output)")
    p.add_argument("--calibration-out", type=Path, help="calibration file (default: <chip>_calibration.yaml beside the chip)")
    p.add_argument("--results", type=Path, default=Path("reports/validations.jsonl"),
                   help="append one JSON record per model here (default: reports/validations.jsonl)")  # fmt: skip
    add_debug(p)


def main(args: argparse.Namespace) -> int:
    from chips.schema import load_chip
    from graph_ir.onnx_import import parse_input_shape
    from hwsim.host.calibration import (
        apply,
        core_rate_rounds,
        fit,
        probed_classes,
        write_calibration,
    )
    from hwsim.host.fingerprint import read_dispatch, reference_gflops
    from hwsim.host.validate import (
        append_record,
        cpu_chip,
        format_validation,
        lag_note,
        merge_rounds,
        record,
        repredict,
        validate_model,
    )

    if args.runs < 10:
        raise ValidateError(f"--runs {args.runs}: at least 10 timed runs are needed for a median and a spread")
    if args.rounds < 1:
        raise ValidateError(f"--rounds {args.rounds}: must be at least 1")
    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    chip = load_chip(args.chip)
    unit = cpu_chip(chip, args.threads).units[0].name
    for m in args.models:
        if not Path(m).is_file():
            raise ValidateError(f"{m}: file not found")
    chip_path = Path(args.chip) if Path(args.chip).is_file() else None
    reference = None if args.raw_times or chip_path is None else reference_gflops(chip_path, args.threads)
    dispatch = read_dispatch(chip_path) if chip_path is not None else None
    rounds: list[list[Any]] = [[] for _ in args.models]
    for _ in range(args.rounds):  # interleaved: a burst of other load hits one round of many models
        for i, m in enumerate(args.models):
            rounds[i].append(validate_model(chip, m, args.threads, args.opt, args.runs, shapes=shapes or None,
                                            reference=reference, dispatch=dispatch))  # fmt: skip
    vs = [merge_rounds(r) for r in rounds]
    _warn_if_not_this_host(args.chip, chip.name, unit)
    int8 = _int8_check(vs, chip_path, args.threads)
    for v, m in zip(vs, args.models, strict=True):
        append_record(args.results, record(v, m, chip, chip_path, int8 if _int8_kernels(v) else None))
    print(f"{chip.name} CPU {unit}, {args.threads} thread(s), onnxruntime optimizations '{args.opt}'")
    if reference is not None and args.threads == 1:
        speeds = [x for v in vs for x in v.speeds]
        print(f"measured times are on the fingerprint's clock: this host ran at x{min(speeds):.3f}..x{max(speeds):.3f} "
              f"of its fingerprinted fp32 MatMul rate ({reference[0]:.1f} GFLOP/s); --raw-times to turn off")  # fmt: skip
    print(format_validation(vs))
    if note := lag_note(vs, args.threads):
        print(note)
    if args.calibrate:
        core = [] if args.threads == 1 else core_rate_rounds(
            chip, args.models, vs, args.opt, args.runs, args.rounds, shapes=shapes or None, dispatch=dispatch,
            reference=None if reference is None or chip_path is None else reference_gflops(chip_path, 1))
        f = fit(vs, unit, core_rate=core, probed=probed_classes(chip, unit))
        default = (chip_path.parent if chip_path else Path(".")) / f"{chip.name}_calibration.yaml"
        out = args.calibration_out or default
        write_calibration(f, chip.name, out)
        after = [repredict(v, apply(chip, f), m, shapes or None) for v, m in zip(vs, args.models, strict=True)]
        print(f"\nafter calibration (fit on these models; op_overhead_ns {f.op_overhead_ns:.0f}):")
        print(format_validation(after))
        print(f"\nwrote {out}; the chip YAML includes it with:  calibration: {out.name if chip_path and out.parent.resolve() == chip_path.parent.resolve() else out}")
    print(f"recorded {len(vs)} validation(s) in {args.results}")
    return 0


def _warn_if_not_this_host(chip_ref: str, name: str, unit: str) -> None:
    """A warning where the chip is not this machine (a bundled chip, or a file without this CPU's
    fingerprint record): what validate measures is this machine, what it predicts the chip's CPU,
    so the difference is the two CPUs' and not the model's error."""
    from hwsim.host.fingerprint import not_this_host

    if (why := not_this_host(chip_ref)) is not None:
        log.warning(
            "%s: the times measured are this machine's and the predictions %s's CPU %r, so their difference is "
            "not hwsim's error (validate a chip written by `hwsim fingerprint` here)", why, name, unit,
        )


def _int8_kernels(v: Any) -> bool:
    from hwsim.host.int8_check import uses_int8_gemm

    return uses_int8_gemm([*(n.op_type for n in v.nodes), *v.inserted_ops])


def _int8_check(vs: list[Any], chip_path: Path | None, threads: int) -> Any:
    """Where a model ran integer GEMM kernels, the fingerprint's int8 MatMul timed again in this
    process (:mod:`hwsim.host.int8_check`), with a warning when onnxruntime picked another kernel."""
    from hwsim.host.int8_check import check_int8

    if chip_path is None or not any(_int8_kernels(v) for v in vs):
        return None
    got = check_int8(chip_path, threads)
    if got is not None and not got.agrees:
        log.warning("%s", got.warning(chip_path))
    return got
