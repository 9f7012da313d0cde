"""``hwsim fingerprint``: measure this machine's CPU and write it as a chip YAML."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug
from hwsim.host.errors import MeasureError

__all__ = ["add_parser", "input_errors", "main"]


#: ``--calibrate`` runs at least this many rounds (a merged estimate that has not moved with a
#: second round may only mean the second was the more disturbed: ``docs/fidelity_cpu.md``).
MIN_ROUNDS = 3


class FingerprintError(ValueError):
    """Bad arguments for ``fingerprint`` (exit 2)."""


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return (FingerprintError, MeasureError)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("fingerprint", help="measure this machine's CPU and write a chip YAML")
    p.add_argument("-o", "--out", type=Path, default=Path("chips/host.yaml"), help="chip file to write (default: chips/host.yaml)")
    p.add_argument("--threads", type=int, help="threads for the multi-thread figures and the chip's cores (default: all)")
    p.add_argument("--name", default="host", help="chip name in the file (default: host)")
    p.add_argument("--quick", action="store_true", help="small sizes, a few seconds (a smoke test, noisy figures)")
    p.add_argument("--calibrate", action="store_true",
                   help="also fit the calibration on the bundled models, in rounds merged until the merged "
                        "estimate is steady; the chip file includes it")  # fmt: skip
    p.add_argument("--models", nargs="+", type=Path, metavar="MODEL",
                   help="with --calibrate: ONNX models to fit on (default: the bundled calibration set)")  # fmt: skip
    p.add_argument("--max-seconds", type=float,
                   help="with --calibrate: start no round that would end past this (default 300; three rounds always run)")  # fmt: skip
    p.add_argument("--target-spread", type=float,
                   help="with --calibrate: stop when a round moves the merged predictions by at most this (default 0.05)")  # fmt: skip
    add_debug(p)


def main(args: argparse.Namespace) -> int:
    import os

    from hwsim.host.fingerprint import chip_yaml, measure_host, write_chip
    if args.threads is not None and not 1 <= args.threads <= (os.cpu_count() or 1):
        raise FingerprintError(f"--threads {args.threads}: this machine has {os.cpu_count()} logical CPUs")
    if not args.out.parent.is_dir():
        raise FingerprintError(f"{args.out}: folder {args.out.parent} does not exist")
    if args.calibrate:
        return _calibrate(args)
    for option, value in (("--models", args.models), ("--max-seconds", args.max_seconds),
                          ("--target-spread", args.target_spread)):  # fmt: skip
        if value is not None:
            raise FingerprintError(f"{option}: only with --calibrate")
    try:
        fp = measure_host(args.threads, quick=args.quick)
    except MeasureError as exc:
        raise FingerprintError(f"fingerprint: {exc}") from None
    write_chip(fp, args.out, args.name)
    print("\n".join(line for line in chip_yaml(fp, args.name).splitlines()
                    if line.startswith("#") and "fingerprint-json" not in line))  # fmt: skip
    print(f"wrote {args.out}")
    return 0


def _calibrate_models(args: argparse.Namespace) -> list[Path]:
    from hwsim.host.calibrate_host import bundled_models

    args.max_seconds = 300.0 if args.max_seconds is None else args.max_seconds
    args.target_spread = 0.05 if args.target_spread is None else args.target_spread
    if not args.max_seconds > 0:
        raise FingerprintError(f"--max-seconds {args.max_seconds}: must be positive")
    if not 0 < args.target_spread < 1:
        raise FingerprintError(f"--target-spread {args.target_spread}: must be between 0 and 1 (0.05 is 5 %)")
    if args.models is None:
        try:
            return bundled_models(args.quick)
        except FileNotFoundError as exc:
            raise FingerprintError(str(exc)) from None
    for m in args.models:
        if not m.is_file():
            raise FingerprintError(f"{m}: file not found")
    return list(args.models)


def _calibrate(args: argparse.Namespace) -> int:
    """``--calibrate``: rounds of fingerprint + calibration, merged until the estimate is steady."""
    from functools import partial

    from hwsim.host.calibrate_host import (
        HostRound,
        measure_round,
        merge_host_rounds,
        rounds_range,
        run_rounds,
        write_calibrated_chip,
    )
    from hwsim.host.host_merge import DEFAULT_PICK, describe

    models = _calibrate_models(args)
    print(f"fingerprint + calibration on {len(models)} model(s) ({', '.join(m.stem for m in models)}), rounds merged "
          f"until the merged predictions move by at most {args.target_spread:.0%} or {args.max_seconds:.0f} s pass")  # fmt: skip

    def progress(i: int, r: HostRound, seconds: float) -> None:
        preds = ", ".join(f"{m} {ns / 1e6:.2f}" for m, ns in r.predicted_ns.items())
        print(f"round {i}: {seconds:.0f} s, fp32 MatMul {r.fingerprint.matmul_gflops_1t.get('fp32', 0.0):.1f} GFLOP/s, "
              f"op_overhead_ns {r.fit.op_overhead_ns:.0f}; calibrated prediction ms: {preds}", flush=True)  # fmt: skip

    try:
        result = run_rounds(partial(measure_round, models, args.threads, args.quick, args.name), args.max_seconds,
                            args.target_spread, on_round=progress,
                            merge=partial(merge_host_rounds, models=models, name=args.name), min_rounds=MIN_ROUNDS)  # fmt: skip
    except MeasureError as exc:
        raise FingerprintError(f"fingerprint --calibrate: {exc}") from None
    kept = result.kept
    span = rounds_range([r.predicted_ns for r in result.rounds])
    print(f"\nmerged {len(result.rounds)} rounds (each figure and measured time {describe(DEFAULT_PICK)}; one fit on "
          f"the merged measurements); the closest two rounds ({result.best + 1} and {result.runner_up + 1}) differ by up to "
          f"{result.spread:.1%} ({result.worst_model}), median {result.median_spread:.1%}")  # fmt: skip
    print(f"{'model':<16} {'measured':>11} {'predicted':>11} {'rounds span':>12}")
    for m, ns in kept.predicted_ns.items():
        print(f"{m:<16} {kept.measured_ns[m] / 1e6:>8.3f} ms {ns / 1e6:>8.3f} ms {span.get(m, float('nan')):>11.1%}")
    print(f"stopped: {result.reason}")
    write_calibrated_chip(result, args.out, args.name, args.target_spread)
    print(f"wrote {args.out} (fingerprint and calibration in one file)")
    return 0
