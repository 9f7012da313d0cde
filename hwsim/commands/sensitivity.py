"""``hwsim sensitivity CHIP MODEL``: vary each chip parameter, find the bottleneck.

Writes ``sensitivity.json`` and ``sensitivity.png`` atomically into ``--out`` (default
``reports/sensitivity-<chip>-<model>/``) and prints a table (``--json``: the JSON instead).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hwsim.studies.sensitivity import SensitivityError

__all__ = ["INPUT_ERRORS", "SENSITIVITY_FILES", "add_parser", "main"]

INPUT_ERRORS: tuple[type[BaseException], ...] = (SensitivityError,)

#: The files ``hwsim sensitivity`` writes into its folder.
SENSITIVITY_FILES = ("sensitivity.json", "sensitivity.png")


def add_parser(sub: Any) -> None:
    """Add the ``sensitivity`` subcommand to an ``add_subparsers`` object."""
    from cost_models.table import PRECISIONS
    from scheduler import POLICIES

    s = sub.add_parser(
        "sensitivity",
        help="vary each chip parameter over a range and find the bottleneck",
        description="Scale each parameter (UNIT.FIELD, DOMAIN.FIELD, dram.FIELD or link.SRC-DST.FIELD) by each "
        "factor, simulate, plot latency against it and name the parameter the latency is most elastic to.",
    )
    s.add_argument("chip", help="chip YAML file or bundled chip name")
    s.add_argument("model", help="ONNX model file")
    s.add_argument(
        "--param", action="append", default=[], metavar="NAME", dest="params",
        help="a parameter to vary (repeatable; default: every unit's clock, NPU array width and SRAM, GPU "
        "compute units, DSP SRAM, DRAM/SRAM/link bandwidths), e.g. npu.clock_mhz, link.cpu-npu.bandwidth_gbps",
    )  # fmt: skip
    s.add_argument(
        "--factors",
        default="0.5,0.7071,1,1.4142,2",
        help="multipliers, comma-separated (default 0.5x..2x)",
    )
    s.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="int8",
        help="deployment precision (default int8)",
    )
    s.add_argument(
        "--policy", choices=sorted(POLICIES), default="affinity-locality", help="scheduling policy"
    )
    s.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D1xD2x...",
        help="pin an input shape",
    )
    s.add_argument("--units", metavar="UNIT[:CORES],...", help="simulate only these units")
    s.add_argument(
        "--set", action="append", default=[], metavar="TARGET.FIELD=VALUE", dest="overrides",
        help="override a chip field before varying (repeatable)",
    )  # fmt: skip
    s.add_argument("--out", type=Path, help="folder (default reports/sensitivity-<chip>-<model>/)")
    s.add_argument(
        "--json", action="store_true", help="print sensitivity.json instead of the table"
    )
    s.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim sensitivity``; returns the exit code."""
    from chips.schema import load_chip
    from chips.variants import override, restrict
    from cost_models.table import UnplaceableError
    from graph_ir.onnx_import import load_onnx, parse_input_shape
    from hwsim.report.outdir import check_own_dir, write_dir
    from hwsim.studies.sensitivity import format_table, parse_factors, sensitivity, to_json

    factors = parse_factors(args.factors)
    chip = load_chip(args.chip)
    if args.overrides:
        chip = override(chip, args.overrides)
    if args.units:
        chip = restrict(chip, args.units)
    graph = load_onnx(args.model, dict(parse_input_shape(s) for s in args.input_shape))
    out = (
        args.out
        if args.out is not None
        else Path("reports") / f"sensitivity-{chip.name}-{graph.name}"
    )
    check_own_dir(out, SENSITIVITY_FILES)  # refuse before simulating
    try:
        study = sensitivity(graph, chip, args.params or None, factors, args.precision, args.policy)
    except UnplaceableError as exc:
        raise UnplaceableError(f"{args.model}: {exc}") from None
    data = to_json(study)

    def write(tmp: Path) -> None:
        from hwsim.report.plots import sensitivity_png

        (tmp / "sensitivity.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        sensitivity_png(data, tmp / "sensitivity.png")

    write_dir(out, SENSITIVITY_FILES, write)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(format_table(study))
        print(f"  reports       {out}/")
    return 0
