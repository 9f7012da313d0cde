"""``hwsim sensitivity CHIP MODEL``: vary each chip parameter, find the bottleneck.

Writes ``sensitivity.json`` and ``sensitivity.png`` atomically into ``--out`` (default
``reports/sensitivity-<chip>-<model>/``) and prints a table (``--json``: the JSON instead).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hwsim.commands.common import (
    add_chip_model_arguments,
    add_debug,
    add_model_options,
    load_target,
)

__all__ = ["SENSITIVITY_FILES", "add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from hwsim.studies.sensitivity import SensitivityError

    return (SensitivityError,)


#: The files ``hwsim sensitivity`` writes into its folder.
SENSITIVITY_FILES = ("sensitivity.json", "sensitivity.png")


def add_parser(sub: Any) -> None:
    """Add the ``sensitivity`` subcommand to an ``add_subparsers`` object."""
    s = sub.add_parser(
        "sensitivity",
        help="vary each chip parameter over a range and find the bottleneck",
        description="Scale each parameter (UNIT.FIELD, DOMAIN.FIELD, dram.FIELD or link.SRC<->DST.FIELD) by each "
        "factor, simulate, plot latency against it and name the parameter the latency is most elastic to.",
    )
    add_chip_model_arguments(s)
    s.add_argument(
        "--param", action="append", default=[], metavar="NAME", dest="params",
        help="a parameter to vary (repeatable; default: every unit's clock, NPU array width and SRAM, GPU "
        "compute units, DSP SRAM, DRAM/SRAM/link bandwidths), e.g. npu.clock_mhz, link.cpu<->npu.bandwidth_gbps",
    )  # fmt: skip
    s.add_argument(
        "--factors",
        default="0.5,0.7071,1,1.4142,2",
        help="multipliers, comma-separated (default 0.5x..2x)",
    )
    add_model_options(s)
    s.add_argument("--out", type=Path, help="folder (default reports/sensitivity-<chip>-<model>/)")
    s.add_argument(
        "--json", action="store_true", help="print sensitivity.json instead of the table"
    )
    add_debug(s)


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim sensitivity``; returns the exit code."""
    from cost_models.table import UnplaceableError
    from hwsim.report.outdir import check_own_dir, write_dir
    from hwsim.studies.sensitivity import format_table, parse_factors, sensitivity, to_json

    factors = parse_factors(args.factors)
    chip, graph = load_target(args)
    out = (
        args.out
        if args.out is not None
        else Path("reports") / f"sensitivity-{chip.name}-{graph.name}"
    )
    check_own_dir(out, SENSITIVITY_FILES)  # refuse before simulating
    try:
        study = sensitivity(graph, chip, args.params or None, factors, args.precision, args.policy)
    except UnplaceableError as exc:
        raise UnplaceableError(f"{args.model} on {args.chip}: {exc}") from None
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
