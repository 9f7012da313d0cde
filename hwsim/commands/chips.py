"""``hwsim chips``: list the bundled chips, their units and DRAM bandwidth."""

from __future__ import annotations

import argparse
from typing import Any

from hwsim.commands.common import add_debug

__all__ = ["add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return ()


def add_parser(sub: Any) -> None:
    """Add the ``chips`` subcommand to an ``add_subparsers`` object."""
    add_debug(sub.add_parser("chips", help="list the bundled chips"))


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim chips``; returns the exit code."""
    from chips.schema import bundled_chips, load_chip

    del args
    for name, path in bundled_chips().items():
        chip = load_chip(path)
        kinds = ", ".join(f"{u.name} ({u.kind} x{u.cores})" for u in chip.units)
        print(f"{name:<18} {chip.description}")
        print(f"{'':<18} units: {kinds}; DRAM {chip.dram.bandwidth_gbps:g} GB/s")
    return 0
