"""Command line: ``hwsim COMMAND ...``, one module per command in :mod:`hwsim.commands`.

Exit codes: 0 success, 1 simulation or internal failure, 2 bad input or usage. Bad input
gets one line naming the file and the field or node (``--debug`` shows the traceback) and
nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

__all__ = ["COMMANDS", "build_parser", "main"]

#: Every subcommand, in the order ``hwsim --help`` lists them: command name -> module. Each
#: module has ``add_parser(sub)`` (adds its subparser to the ``add_subparsers`` object),
#: ``main(args) -> int`` and ``input_errors()``, the exception types beyond the common ones that
#: mean bad input (one line, exit 2). Modules keep heavy imports inside functions so that
#: ``hwsim --help`` stays fast.
COMMANDS: dict[str, str] = {
    "run": "hwsim.commands.run",
    "chips": "hwsim.commands.chips",
    "schema": "hwsim.commands.schema",
    "compare": "hwsim.commands.compare",
    "sensitivity": "hwsim.commands.sensitivity",
    "schedule": "hwsim.commands.schedule",
    "fingerprint": "hwsim.commands.fingerprint",
    "validate": "hwsim.commands.validate",
}


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``hwsim run: error: ...``), exit 2.

    Subparsers are made with the same class, so every subcommand behaves alike.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``hwsim`` parser: the global options and one subparser per entry of :data:`COMMANDS`."""
    p = _Parser(
        prog="hwsim",
        description="Simulate an ONNX model on a heterogeneous SoC described in YAML.",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        _command_module(name).add_parser(sub)
    return p


def _input_errors(command: str) -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input for ``command``: the common ones and its own."""
    from chips.schema import ChipError
    from cost_models.table import UnplaceableError
    from graph_ir.ir import ModelError
    from hwsim.report.files import ReportError

    common: tuple[type[BaseException], ...] = (ChipError, ModelError, UnplaceableError, ReportError)
    return common + tuple(_command_module(command).input_errors())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 simulation failure, 2 bad input or usage)."""
    from hwsim.commands.common import UsageError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code) if isinstance(exc.code, int) else 2
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.INFO,
        format="hwsim: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    input_errors = _input_errors(args.command)
    try:
        return int(_command_module(args.command).main(args))
    except UsageError as exc:
        print(f"hwsim {args.command}: error: {exc} (see `hwsim {args.command} --help`)", file=sys.stderr)
        return 2
    except input_errors as exc:
        if args.debug:
            traceback.print_exc()
        print(f"hwsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hwsim: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence: one line, exit 1
        if args.debug:
            traceback.print_exc()
        print(f"hwsim: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return 1
