"""Command line: ``hwsim COMMAND ...``, one module per command in :mod:`hwsim.commands`.

Exit codes: 0 success, 1 simulation or internal failure, 2 bad input or usage. Bad input
gets one line naming the file and the field or node (``--debug`` shows the traceback) and
nothing is written. A package hwsim needs that is not installed is bad input too: one line
with the ``pip install`` command that fixes it, exit 2.

A reader that stops early (``hwsim chips | head -1``) ends the command quietly with exit 0,
as CPython's documentation of SIGPIPE recommends (stdout is pointed at ``os.devnull`` so that
nothing more is written): the reader chose to stop, that is no failure of hwsim, and a shell
with ``set -o pipefail`` keeps going. Report files are written before anything is printed, so
they are complete; an exit code the command had already decided (a missed deadline, exit 1)
is kept when the pipe closes only at the final flush.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import io
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import NoReturn

__all__ = ["COMMANDS", "PIP_NAMES", "build_parser", "entry", "main", "missing_package_hint"]

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
    "quantize": "hwsim.commands.quantize",
    "accuracy": "hwsim.commands.accuracy",
    "sweep": "hwsim.commands.sweep",
    "rewrite": "hwsim.commands.rewrite",
    "diff": "hwsim.commands.diff",
    "optimize": "hwsim.commands.optimize",
    "db": "hwsim.commands.db",
}

#: The packages hwsim imports that ``pip`` installs (the ``dependencies`` of pyproject.toml):
#: import name -> the name ``pip install`` takes. One that is missing is a broken or partial
#: install, never an internal error: the CLI names the ``pip install`` command that fixes it.
PIP_NAMES: dict[str, str] = {
    "numpy": "numpy",
    "scipy": "scipy",
    "networkx": "networkx",
    "pydantic": "pydantic",
    "matplotlib": "matplotlib",
    "yaml": "pyyaml",
    "onnx": "onnx",
    "ml_dtypes": "ml_dtypes",  # onnx imports it (pinned below 0.7 for its import time)
    "onnxruntime": "onnxruntime",
    "dask": "dask",
    "distributed": "distributed",
    "optuna": "optuna",
    "sqlalchemy": "sqlalchemy",
    "tqdm": "tqdm",
    "ortools": "ortools",
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


def missing_package_hint(exc: ImportError) -> str | None:
    """The one-line message for a failed import of a package of :data:`PIP_NAMES`, else None.

    >>> missing = ModuleNotFoundError("No module named 'onnxruntime'", name="onnxruntime")
    >>> print(missing_package_hint(missing))
    onnxruntime is not installed (No module named 'onnxruntime'); install it with: pip install onnxruntime
    >>> print(missing_package_hint(ModuleNotFoundError("No module named 'hwsim.x'", name="hwsim.x")))
    None
    """
    top = (exc.name or "").partition(".")[0]
    if top not in PIP_NAMES:
        return None
    return f"{top} is not installed ({exc}); install it with: pip install {PIP_NAMES[top]}"


def _quiet_stdout() -> None:
    """Point stdout at ``os.devnull``, so that the interpreter's last flush does not fail again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return  # not a real file (a test's capture): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def printable_lines(message: str) -> str:
    """``message`` with every control character but its line breaks escaped: a name from a file
    (a key holding a carriage return, say) cannot split or overwrite the error's line.

    >>> printable_lines("cal.yaml: units.\\r: no such unit")
    'cal.yaml: units.\\\\r: no such unit'
    """
    from chips.schema import printable

    return "\n".join(printable(line) for line in message.split("\n"))


def _run(args: argparse.Namespace) -> int:
    """Run the command; bad input and usage errors are one line on stderr and exit 2."""
    from hwsim.commands.common import UsageError

    input_errors = _input_errors(args.command)
    try:
        code = int(_command_module(args.command).main(args))
    except UsageError as exc:
        print(f"hwsim {args.command}: error: {exc} (see `hwsim {args.command} --help`)", file=sys.stderr)
        return 2
    except input_errors as exc:
        if args.debug:
            traceback.print_exc()
        print(f"hwsim: error: {printable_lines(str(exc))}", file=sys.stderr)
        return 2
    try:
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except BrokenPipeError:
        _quiet_stdout()
    return code


class _StderrHandler(logging.StreamHandler):
    """The handler :func:`configure_logging` installs (and replaces on the next call)."""


class _QuietRoot(logging.NullHandler):
    """Held by the root logger unless ``--debug``: a library that logs through the root logger
    with none configured (onnxruntime's quantizer calls ``logging.warning``, which would install
    a stderr handler) stays off the command's stderr, where a refusal is one line."""


def configure_logging(debug: bool) -> None:
    """Send the ``hwsim`` loggers to the current ``sys.stderr``, one line per record.

    Replaces the handler an earlier call installed, so a second ``main([...])`` in one process
    (tests, notebooks) writes to the stderr of its own time, not to the first call's.
    """
    logger = logging.getLogger("hwsim")
    for h in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(h)
    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("hwsim: %(levelname)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    logger.propagate = False
    root = logging.getLogger()
    for quiet in [q for q in root.handlers if isinstance(q, _QuietRoot)]:
        root.removeHandler(quiet)
    if not debug and not root.handlers:
        root.addHandler(_QuietRoot())


#: Allocations between young-generation collections during a command (Python's default: 700). A
#: run keeps hundreds of thousands of records alive to its end; at 100k ops the default made the
#: collector take about a sixth of the run's time.
_GC_YOUNG_THRESHOLD = 50_000
#: Young collections between middle-generation ones (Python's default: 10); each of those also
#: counts toward a full collection. At 100k ops the default still left the collector a seventh
#: of the run, half of it in middle and full collections walking the millions of objects the
#: run keeps; at 1,000 a run of that size makes none, and a long command still makes some.
_GC_MIDDLE_THRESHOLD = 1_000


@contextmanager
def _fewer_collections(one_run: bool = False) -> Iterator[None]:
    """Collect garbage less often while a command runs, not at all for a command that makes
    one bounded run (its module's ``ONE_RUN``: at 100k ops the collections left still took a
    twelfth of ``hwsim run``, and found nothing: the run keeps what it makes to its end); the
    caller's thresholds and switch come back after (what such a command made is moved to the
    oldest generation first)."""
    old, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(_GC_YOUNG_THRESHOLD, _GC_MIDDLE_THRESHOLD, *old[2:])
    if one_run:
        gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if one_run and not gc.get_freeze_count():  # (a caller's frozen objects stay frozen)
            gc.freeze()  # what the run made joins the oldest generation: collected as it ages,
            gc.unfreeze()  # not all at once in a young collection the moment the collector is back
        if enabled:
            gc.enable()


def entry() -> NoReturn:
    """The ``hwsim`` console script and ``python -m hwsim``: :func:`main`, then the exit.

    A command that makes one bounded run (its module's ``ONE_RUN``) ends the process without
    the interpreter's teardown once its files are written and its output is flushed: at 100,000
    ops that teardown (a last collection walking about 800,000 objects, then freeing millions,
    all of which die with the process anyway) took 2.6 s after the run's last line. Such a
    command leaves no pool, thread or temporary file behind (its report folder is moved into
    place before it prints), so nothing an exit handler would do is skipped."""
    code = main(exit_now=True)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None, *, exit_now: bool = False) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 simulation failure, 2 bad input or usage).
    ``exit_now`` (:func:`entry`): a ``ONE_RUN`` command that finishes ends the process here."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code) if isinstance(exc.code, int) else 2
    configure_logging(args.debug)
    one_run = bool(getattr(_command_module(args.command), "ONE_RUN", False))
    try:
        with _fewer_collections(one_run):
            code = _run(args)
        if exit_now and one_run:
            _exit_without_teardown(code)
        return code
    except KeyboardInterrupt:
        print("hwsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # hwsim writes to no pipe but stdout and stderr: the reader is gone
        _quiet_stdout()
        return 0
    except ImportError as exc:
        hint = missing_package_hint(exc)
        if hint is None:
            return _internal_error(exc, args.debug)
        if args.debug:
            traceback.print_exc()
        print(f"hwsim {args.command}: error: {hint}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence: one line, exit 1
        return _internal_error(exc, args.debug)


def _exit_without_teardown(code: int) -> NoReturn:
    """End the process with ``code`` once stdout, stderr and the log handlers are flushed."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # (:func:`_run` flushed already; a reader gone since changes nothing)
        pass
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def _internal_error(exc: BaseException, debug: bool) -> int:
    """One line naming ``exc``, exit 1; with ``--debug`` the traceback first and no hint to use it."""
    if debug:
        traceback.print_exc()
    hint = "" if debug else " (rerun with --debug)"
    print(f"hwsim: internal error: {type(exc).__name__}: {exc}{hint}", file=sys.stderr)
    return 1
