"""``hwsim quantize MODEL --calib DATA.npz [--binding FILE] -o OUT.onnx``: a QDQ model by
onnxruntime's static quantization, per node as the binding says (default: int8 per-channel).

Exit codes: 0 written, 2 bad input (a weightless model, data that does not fit, a binding rule
that matches nothing, a model onnxruntime's quantizer fails on or whose quantized result
onnxruntime cannot load; one line, nothing written). Nodes without a name are named
``<op_type>_<index>`` as ``hwsim run`` names them, in the binding's rules and in the output.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug

__all__ = ["add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from graph_ir.quant_binding import BindingError
    from hwsim.studies.quantize import DataError

    return (BindingError, DataError)


def add_parser(sub: Any) -> None:
    """Add the ``quantize`` subcommand to an ``add_subparsers`` object."""
    q = sub.add_parser("quantize", help="write a QDQ model (onnxruntime static quantization) per a binding")
    q.add_argument("model", type=Path, help="ONNX model with its weights")
    q.add_argument("--calib", type=Path, required=True, metavar="DATA.npz", help="calibration arrays keyed by input name")
    q.add_argument(
        "--binding", type=Path, metavar="FILE.yaml",
        help="per-op dtype and granularity (default: every op int8, per-channel); see docs/quantization.md",
    )  # fmt: skip
    q.add_argument("-o", "--out", type=Path, required=True, metavar="OUT.onnx", help="the QDQ model to write")
    add_debug(q)


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim quantize``; returns the exit code."""
    from graph_ir.quant_binding import QuantBinding, load_binding
    from hwsim.studies.quantize import load_data, load_weighted, quantize_model

    binding = (
        load_binding(args.binding)
        if args.binding is not None
        else QuantBinding.model_validate({"default": "int8", "granularity": "per-channel"})
    )
    model = load_weighted(args.model)
    calib = load_data(args.calib, model, args.model)
    source = str(args.binding) if args.binding is not None else "<default binding>"
    r = quantize_model(args.model, calib, binding, args.out, source)
    for dtype, nodes in r.nodes_per_dtype.items():
        print(f"hwsim quantize: {len(nodes)} node(s) in {dtype}: {', '.join(nodes[:8])}{' ...' if len(nodes) > 8 else ''}")
    if r.excluded:
        print(f"hwsim quantize: {len(r.excluded)} node(s) left in float (fp32 in the file): {', '.join(r.excluded[:8])}")
    if r.int4_note:
        print(f"hwsim quantize: int4: {r.int4_note}")
    print(f"hwsim quantize: wrote {r.out}")
    return 0
