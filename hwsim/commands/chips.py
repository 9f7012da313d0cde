"""``hwsim chips``: list the bundled chips, their units and DRAM bandwidth; ``hwsim chips new
NAME [--like CHIP] [-o FILE]``: write a commented chip file to start one's own from."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug

__all__ = ["NewChipError", "add_parser", "input_errors", "main"]


class NewChipError(ValueError):
    """``chips new`` cannot write its file: it exists (never overwritten) or is unwritable."""


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return (NewChipError,)


def add_parser(sub: Any) -> None:
    """Add the ``chips`` subcommand (and its ``new``) to an ``add_subparsers`` object."""
    p = sub.add_parser(
        "chips", help="list the bundled chips, or write a new chip file (chips new NAME)"
    )
    add_debug(p)
    actions = p.add_subparsers(dest="chips_action", metavar="new")
    new = actions.add_parser(
        "new",
        help="write a commented chip file to edit",
        description="Write NAME.yaml: a chip file with every field commented (what it means, its "
        "unit), a generic edge SoC's values or, with --like, a bundled chip's. It loads as it is; "
        "an existing file is never overwritten.",
    )
    new.add_argument("name", help="the chip's name (and the file's, NAME.yaml, without -o)")
    new.add_argument("--like", metavar="CHIP", help="start from this chip's values (bundled name or file)")
    new.add_argument("-o", "--output", metavar="FILE", type=Path, help="where to write (default NAME.yaml)")
    add_debug(new)


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim chips`` or ``hwsim chips new``; returns the exit code."""
    if getattr(args, "chips_action", None) == "new":
        return _new(args.name, args.like, args.output)
    from chips.schema import bundled_chips, load_chip

    for name, path in bundled_chips().items():
        chip = load_chip(path)
        kinds = ", ".join(f"{u.name} ({u.kind} x{u.cores})" for u in chip.units)
        print(f"{name:<18} {chip.description}")
        print(f"{'':<18} units: {kinds}; DRAM {chip.dram.bandwidth_gbps:g} GB/s")
    return 0


def _new(name: str, like: str | None, output: Path | None) -> int:
    """Write the new chip file; refuses an existing one (exit 2, nothing written)."""
    from chips.template import new_chip_text

    path = output if output is not None else Path(f"{name}.yaml")
    if path.exists():
        raise NewChipError(f"{path}: exists; `hwsim chips new` never overwrites a file (pass -o FILE)")
    text = new_chip_text(name, like)
    try:
        with path.open("x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise NewChipError(f"{path}: exists; `hwsim chips new` never overwrites a file") from None
    except OSError as exc:
        raise NewChipError(f"{path}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {path}: edit it, then `hwsim run {path} examples/models/resnet18.onnx`")
    return 0
