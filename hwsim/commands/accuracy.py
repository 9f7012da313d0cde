"""``hwsim accuracy REFERENCE CANDIDATE --data VAL.npz``: the accuracy gate; with
``--sensitivity`` (no candidate), each quantizable layer of REFERENCE quantized alone, ranked.

Exit codes: 0 within ``--max-drop`` (or a sensitivity study done), 1 the relative drop exceeds
it, 2 bad input (a weightless model, data that does not fit, the same data for calibration and
validation, a model onnxruntime cannot load; one line, nothing written). In a sensitivity study
a layer that onnxruntime cannot quantize alone, or whose quantized model it cannot load, is
listed as not measured (its reason given) and kept wide by ``--binding-out``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hwsim.commands.common import UsageError, add_debug

__all__ = ["add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from graph_ir.quant_binding import BindingError
    from hwsim.studies.quantize import DataError

    return (BindingError, DataError)


def add_parser(sub: Any) -> None:
    """Add the ``accuracy`` subcommand to an ``add_subparsers`` object."""
    from hwsim.studies.accuracy import DEFAULT_MAX_DROP

    a = sub.add_parser("accuracy", help="compare a candidate model with its reference on validation data")
    a.add_argument("reference", type=Path, help="reference ONNX model (with weights)")
    a.add_argument("candidate", type=Path, nargs="?", help="candidate ONNX model (omit with --sensitivity)")
    a.add_argument("--data", type=Path, required=True, metavar="VAL.npz", help="validation arrays (+ 'labels')")
    a.add_argument(
        "--max-drop", type=float, default=DEFAULT_MAX_DROP, metavar="FRACTION",
        help="largest relative drop that passes (default: %(default)s, Intel Neural Compressor's)",
    )  # fmt: skip
    a.add_argument("--calib", type=Path, metavar="CALIB.npz", help="calibration arrays (refused if equal to --data)")
    a.add_argument("--sensitivity", action="store_true", help="rank the layers of REFERENCE quantized one at a time")
    a.add_argument("--dtype", choices=("int8", "int4"), default="int4", help="with --sensitivity (default: int4)")
    a.add_argument("--keep", type=int, default=1, metavar="K", help="with --binding-out: layers kept wide (default 1)")
    a.add_argument(
        "--keep-dtype", choices=("int8", "fp16", "bf16", "fp32"), default="fp32", help="their dtype (default: fp32)"
    )
    a.add_argument("--binding-out", type=Path, metavar="FILE.yaml", help="with --sensitivity: write the binding")
    a.add_argument("--json", action="store_true", help="print JSON instead of the table")
    add_debug(a)


def _check_usage(args: argparse.Namespace) -> None:
    if args.sensitivity and args.candidate is not None:
        raise UsageError("--sensitivity takes one model (the reference), not a candidate")
    if args.sensitivity and args.calib is None:
        raise UsageError("--sensitivity needs --calib CALIB.npz to quantize each layer")
    if not args.sensitivity and args.candidate is None:
        raise UsageError("give REFERENCE and CANDIDATE, or REFERENCE with --sensitivity")
    if args.binding_out is not None and not args.sensitivity:
        raise UsageError("--binding-out applies only with --sensitivity")
    if not 0 <= args.max_drop < 1:
        raise UsageError(f"--max-drop is a fraction in [0, 1), got {args.max_drop}")


def _sensitivity(args: argparse.Namespace) -> int:
    import yaml

    from hwsim.studies.accuracy import binding_keeping, layer_sensitivity

    work = args.binding_out.parent if args.binding_out is not None else Path(args.reference).parent
    ranking = layer_sensitivity(args.reference, args.calib, args.data, args.dtype, work)
    if args.binding_out is not None:
        binding = binding_keeping(ranking, args.keep, args.dtype, args.keep_dtype)
        args.binding_out.write_text(yaml.safe_dump(binding.model_dump(mode="json", exclude_none=True), sort_keys=False))
    if args.json:
        print(json.dumps([asdict(r) for r in ranking], indent=2))
        return 0
    print(f"hwsim accuracy: sensitivity of {args.reference} per layer quantized alone to {args.dtype}")
    print(f"  {'rank':>4} {'layer':<24} {'op':<8} {'score':>8} {'drop':>8}")
    for i, r in enumerate(ranking, 1):
        if r.score is None or r.relative_drop is None:
            print(f"  {'-':>4} {r.layer:<24} {r.op_type:<8} not measured: {r.error}")
            continue
        print(f"  {i:>4} {r.layer:<24} {r.op_type:<8} {r.score:>8.4f} {100 * r.relative_drop:>7.2f}%")
    if args.binding_out is not None:
        failed = sum(r.error is not None for r in ranking)
        also = f" and the {failed} not measured" if failed else ""
        kept = min(args.keep, len(ranking) - failed)
        print(f"  wrote {args.binding_out}: the {kept} most sensitive layer(s){also} in {args.keep_dtype}")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim accuracy``; returns the exit code."""
    from hwsim.studies.accuracy import compare_models, format_report

    _check_usage(args)
    if args.sensitivity:
        return _sensitivity(args)
    r = compare_models(args.reference, args.candidate, args.data, args.max_drop, args.calib)
    if args.json:
        print(json.dumps({**asdict(r), "relative_drop": r.relative_drop, "passed": r.passed}, indent=2))
    else:
        print(format_report(r))
    return 0 if r.passed else 1
