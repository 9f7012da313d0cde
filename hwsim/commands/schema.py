"""``hwsim schema``: print the JSON Schema of chip files."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hwsim.commands.common import add_debug

__all__ = ["add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return ()


def add_parser(sub: Any) -> None:
    """Add the ``schema`` subcommand to an ``add_subparsers`` object."""
    add_debug(sub.add_parser("schema", help="print the JSON Schema of chip files"))


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim schema``; returns the exit code."""
    from chips.schema import chip_json_schema

    del args
    print(json.dumps(chip_json_schema(), indent=2))
    return 0
