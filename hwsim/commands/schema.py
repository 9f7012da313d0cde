"""``hwsim schema``: print the JSON Schema of chip files (``--schedule``: of schedule files)."""

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
    p = sub.add_parser("schema", help="print the JSON Schema of chip files (or of schedule files)")
    p.add_argument("--schedule", action="store_true", help="the schema of schedule files (run --export-schedule)")
    add_debug(p)


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim schema``; returns the exit code."""
    if args.schedule:
        from hwsim.report.schedule_file import ScheduleFile

        print(json.dumps(ScheduleFile.model_json_schema(), indent=2))
        return 0
    from chips.schema import chip_json_schema

    print(json.dumps(chip_json_schema(), indent=2))
    return 0
