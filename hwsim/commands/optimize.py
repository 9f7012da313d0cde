"""``hwsim optimize CHIP MODEL``: a staged search of graph rewrites and per-op mappings.

Every trial goes into the experience database at once (``--db URL``; default
``~/.cache/hwsim/experience.sqlite`` or ``HWSIM_DB``), so a rerun with the same database
resumes: stored candidates are not simulated again. Ctrl-C stops the search and still writes
every output for the best found so far (exit 130). Bad input (the search file, the database, the
output folder) is one line and exit 2, with nothing written.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwsim.commands.common import UsageError, add_debug, whole_number_at_least

if TYPE_CHECKING:
    from hwsim.studies.optimize.search import Search, SearchInputs

__all__ = ["add_parser", "input_errors", "main"]

log = logging.getLogger("hwsim")


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from hwsim.studies.optimize.config import SearchConfigError
    from hwsim.studies.optimize.db import DbError
    from hwsim.studies.sweep import SweepError

    return (SearchConfigError, SweepError, DbError)


def add_parser(sub: Any) -> None:
    """Add the ``optimize`` subcommand to an ``add_subparsers`` object."""
    from cost_models.table import PRECISIONS

    p = sub.add_parser(
        "optimize",
        help="search graph rewrites and per-op mappings that make MODEL faster on CHIP",
        description="A staged search (graph rewrites, then per-op mapping signatures of the bottleneck ops), "
        "every trial remembered in an experience database; see docs/optimize.md.",
    )
    p.add_argument("chip", help="chip YAML file or bundled chip name (see `hwsim chips`)")
    p.add_argument("model", type=Path, help="ONNX model file (weights may be absent)")
    p.add_argument("-o", "--out", type=Path, required=True, metavar="OUTDIR", help="output folder")
    p.add_argument("--config", type=Path, metavar="SEARCH.yaml", help="search file (default: the documented defaults)")
    limit = p.add_mutually_exclusive_group()
    limit.add_argument("--budget", type=whole_number_at_least(1), metavar="N", help="trials in all, split by the stage budgets")
    limit.add_argument("--time", type=float, metavar="S", help="seconds in all, split by the stage budgets")
    p.add_argument("--db", metavar="URL", help="experience database: a path or SQLAlchemy URL (default: HWSIM_DB or the user cache)")
    p.add_argument(
        "--transfer-from", nargs="+", metavar="auto|CHIP", default=[],
        help="start stage 2 from the best signatures of the nearest chips in the database (auto) or of the named ones",
    )  # fmt: skip
    p.add_argument("--workers", type=whole_number_at_least(1), default=2, help="worker processes (default: %(default)s)")
    p.add_argument("--dask", metavar="local|tcp://HOST:PORT", help="evaluate on Dask instead of a process pool")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default: %(default)s)")
    p.add_argument(
        "--precision", choices=PRECISIONS, default="int8",
        help="deployment precision of float tensors; 'model' keeps the file's dtypes (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--input-shape", action="append", default=[], metavar="NAME=D1xD2x...",
        help="pin a dynamic model input (repeatable); the searched and written model carries these shapes",
    )  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_debug(p)


def _inputs(args: argparse.Namespace) -> SearchInputs:
    import onnx

    from chips.schema import load_chip
    from graph_ir.ir import ModelError
    from hwsim.report.provenance import file_sha256
    from hwsim.studies.optimize.config import load_config
    from hwsim.studies.optimize.search import SearchInputs

    config = load_config(args.config)
    chip = load_chip(args.chip)
    if not args.model.is_file():
        raise ModelError(f"{args.model}: file not found")
    try:
        model = onnx.load(str(args.model), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - onnx raises DecodeError and others for a bad file
        raise ModelError(f"{args.model}: not a readable ONNX file ({type(exc).__name__})") from None
    if args.transfer_from and "auto" in args.transfer_from and len(args.transfer_from) > 1:
        raise UsageError("--transfer-from: give auto or chip names, not both")
    model = _pinned(model, str(args.model), args.input_shape)
    return SearchInputs(chip, model, args.model.stem, file_sha256(args.model), config, args.precision, args.seed,
                        tuple(args.transfer_from), args.model.resolve().parent)  # fmt: skip


def _pinned(model: Any, source: str, input_shapes: list[str]) -> Any:
    """``model`` with its inputs pinned to ``--input-shape``, once imported here so that a model
    the search cannot simulate is refused now, naming ``source``, not in every trial. A
    data-dependent dimension is refused too: the search's rewrites and trials need shapes ONNX
    can infer (``hwsim run --assume`` costs such a model; ``optimize`` has no ``--assume``)."""
    from graph_ir.ir import FlagAdvice, ModelError
    from graph_ir.onnx_import import from_model_proto
    from hwsim.commands.common import parse_input_shapes

    shapes = parse_input_shapes(input_shapes)
    try:
        from_model_proto(model, source, input_shapes=shapes)
    except FlagAdvice as exc:
        if exc.flag != "--assume":
            raise
        raise ModelError(f"{exc.problem}: `hwsim optimize` needs shapes ONNX can infer "
                         "(`hwsim run --assume` costs such a model)") from None  # fmt: skip
    for vi in model.graph.input:
        if vi.name in shapes:
            dims = vi.type.tensor_type.shape
            dims.Clear()
            for d in shapes[vi.name]:
                dims.dim.add().dim_value = d
    return model


def _progress(total: int | None, quiet: bool) -> Any:
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: the process pool forks after this
    off = quiet or not sys.stderr.isatty()
    return tqdm(total=total, file=sys.stderr, unit="trial", desc="optimize", disable=off, dynamic_ncols=True)


def _budget(args: argparse.Namespace, inputs: SearchInputs) -> Any:
    from hwsim.studies.optimize.search import Budget

    g, k = inputs.config.stage_graph.budget, inputs.config.stage_kernel.budget
    share = g / (g + k) if g + k > 0 else 0.0
    if args.time is None:
        return Budget(args.budget, share)
    now = time.monotonic()
    return Budget(None, share, now + args.time, now + args.time * share)


def _search(args: argparse.Namespace, inputs: SearchInputs) -> Search:
    from hwsim.studies.optimize.db import ExperienceDB, default_db_url
    from hwsim.studies.optimize.driver import run_search
    from hwsim.studies.optimize.measure import backfill
    from hwsim.studies.optimize.search import Search
    from hwsim.studies.sweep import open_executor

    budget = _budget(args, inputs)
    start = time.monotonic()
    with ExitStack() as stack:
        executor = stack.enter_context(open_executor(args.workers, args.dask))  # refused: no database made
        db = ExperienceDB.open(args.db if args.db is not None else default_db_url())
        stack.callback(db.close)
        bar = stack.enter_context(_progress(args.budget, args.quiet) if not args.quiet else nullcontext(None))
        s = Search(inputs, db, executor, budget, bar.update if bar is not None else (lambda n: None))
        run_search(s)
        if s.result.records and not s.result.interrupted:
            backfill(s, args.chip)
    s.result.seconds = time.monotonic() - start
    return s


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim optimize``; returns the exit code (130 after Ctrl-C, outputs written)."""
    from hwsim.report.outdir import check_own_dir
    from hwsim.studies.optimize.outputs import OPTIMIZE_FILES, write_outputs

    if args.time is not None and not 0 < args.time < math.inf:
        raise UsageError(f"--time {args.time}: expected a positive number of seconds")
    inputs = _inputs(args)
    check_own_dir(args.out, OPTIMIZE_FILES)
    s = _search(args, inputs)
    if not s.result.records:
        print("hwsim optimize: interrupted before the baseline was simulated; nothing written", file=sys.stderr)
        return 130
    written = write_outputs(args.out, inputs, s.result, s.bytes_of)
    for note in s.result.notes:
        log.info("%s", note)
    hits, tried = s.result.transfer_hits
    print(f"hwsim optimize: {inputs.model_name} on {inputs.chip.name}: {written.baseline_latency_ms:.6g} ms -> "
          f"{written.best_latency_ms:.6g} ms in {len(s.result.records)} trials "
          f"({sum(r.reused for r in s.result.records)} reused), {s.result.seconds:.1f} s"
          + (f"; transfer hits {hits}/{tried}" if tried else ""))  # fmt: skip
    print(f"  outputs       {args.out}/")
    return 130 if s.result.interrupted else 0
