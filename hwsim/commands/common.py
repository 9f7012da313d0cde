"""What the commands that simulate a model share: their options and the load sequence.

``run``, ``compare`` and ``sensitivity`` take the same chip and model options (``--precision``,
``--policy``, ``--input-shape``, ``--units``, ``--set``) and load their inputs the same way: the
chip (a YAML path or a bundled name), ``--set`` applied, ``--units`` kept, then the model. Both
are written here once. Imports of the simulator stay inside the functions, so that building the
parser (``hwsim --help``) does not load it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from chips.schema import Chip
    from graph_ir.ir import ModelGraph

__all__ = [
    "UsageError",
    "add_chip_model_arguments",
    "add_debug",
    "add_model_options",
    "assume_counts",
    "load_chip_variant",
    "load_model",
    "load_target",
    "parse_input_shapes",
]


class UsageError(ValueError):
    """Options that do not go together, or one without its partner (exit 2, nothing written)."""


def whole_number_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``minimum``, else a usage error naming it.

    >>> whole_number_at_least(1)("3")
    3
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def add_debug(p: argparse.ArgumentParser) -> None:
    """The hidden ``--debug`` every subcommand accepts after its name, like ``hwsim --debug``."""
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def add_chip_model_arguments(p: argparse.ArgumentParser, *, model_optional: bool = False) -> None:
    """The positional ``chip`` and ``model`` of a command that simulates one model on one chip
    (``model_optional``: MODEL may be left out, another option then names what to run)."""
    p.add_argument("chip", help="chip YAML file or bundled chip name (see `hwsim chips`)")
    if model_optional:
        p.add_argument("model", nargs="?", help="ONNX model file (weights may be absent)")
    else:
        p.add_argument("model", help="ONNX model file (weights may be absent)")


def add_model_options(
    p: argparse.ArgumentParser, *, policies: Literal["one", "many"] = "one", units: bool = True
) -> None:
    """``--precision``, ``--policy``, ``--input-shape``, ``--units`` and ``--set``.

    Parameters
    ----------
    policies
        ``"one"``: ``--policy`` picks one policy (default :data:`scheduler.DEFAULT_POLICY`);
        ``"many"``: it is repeatable and collects a list (empty when not given).
    units
        Whether the command takes ``--units``.
    """
    from cost_models.table import PRECISIONS
    from scheduler import DEFAULT_POLICY, POLICIES

    p.add_argument(
        "--precision", choices=PRECISIONS, default="int8",
        help="deployment precision of float tensors; 'model' keeps the file's dtypes (default: %(default)s)",
    )  # fmt: skip
    if policies == "one":
        p.add_argument(
            "--policy", choices=sorted(POLICIES), default=DEFAULT_POLICY,
            help="scheduling policy (default: %(default)s)",
        )  # fmt: skip
    else:
        p.add_argument(
            "--policy", action="append", default=[], choices=sorted(POLICIES),
            help=f"scheduling policy (repeatable; default: {DEFAULT_POLICY})",
        )  # fmt: skip
    p.add_argument(
        "--input-shape", action="append", default=[], metavar="NAME=D1xD2x...",
        help="pin a graph input's shape (repeatable), e.g. images=1x3x640x640",
    )  # fmt: skip
    p.add_argument(
        "--assume", action="append", default=[], metavar="NAME=COUNT",
        help="size of a data-dependent dimension (output of node or tensor NAME, e.g. after NonMaxSuppression) "
        "or a Loop's trip count (repeatable); NAME=LO..HI (run only) reports latency p50/p99 over the range",
    )  # fmt: skip
    if units:
        p.add_argument(
            "--units", metavar="UNIT[:CORES],...",
            help="simulate only these units of the chip, e.g. npu:1 for one NPU core",
        )  # fmt: skip
    p.add_argument(
        "--set", action="append", default=[], metavar="TARGET.FIELD=VALUE", dest="overrides",
        help="override a chip field without editing the YAML (repeatable), e.g. npu.clock_mhz=600 "
        "or link.cpu<->npu.bandwidth_gbps=8",
    )  # fmt: skip


def load_chip_variant(chip_ref: str, overrides: Sequence[str] = (), units: str | None = None) -> Chip:
    """Load a chip (YAML path or bundled name), apply ``--set`` assignments, keep ``--units``.

    Raises
    ------
    chips.schema.ChipError
        For a chip file, an assignment or a unit list that is not valid.
    """
    from chips.schema import load_chip
    from chips.variants import override, restrict

    chip = load_chip(chip_ref)
    if overrides:
        chip = override(chip, overrides)
    if units:
        chip = restrict(chip, units)
    return chip


def load_model(path: str, input_shapes: Sequence[str] = (), assume: Sequence[str] = ()) -> ModelGraph:
    """Load an ONNX model with ``--input-shape NAME=D1xD2x...`` pins and ``--assume NAME=COUNT``.

    Raises
    ------
    graph_ir.ir.ModelError
        For a file that is not a model this simulator reads, or a bad shape.
    """
    from graph_ir.onnx_import import load_onnx

    return load_onnx(path, parse_input_shapes(input_shapes), assume_counts(assume))


def load_target(args: argparse.Namespace) -> tuple[Chip, ModelGraph]:
    """The chip and the model of a command made with :func:`add_chip_model_arguments` and
    :func:`add_model_options`: the shapes read first, then the chip, then the model."""
    from graph_ir.onnx_import import load_onnx

    shapes = parse_input_shapes(args.input_shape)
    assume = assume_counts(getattr(args, "assume", ()))
    chip = load_chip_variant(args.chip, args.overrides, getattr(args, "units", None))
    return chip, load_onnx(args.model, shapes, assume)


def assume_counts(texts: Sequence[str], at_range: int | None = None) -> dict[str, int]:
    """``--assume`` as name -> count; a ``LO..HI`` range gives ``at_range`` (None: its HI).

    Raises
    ------
    graph_ir.ir.ModelError
        A malformed value, or more than one range.
    """
    from graph_ir.dynamic import parse_assume
    from graph_ir.ir import ModelError

    parsed = [parse_assume(t) for t in texts]
    if sum(1 for _, lo, hi in parsed if lo != hi) > 1:
        raise ModelError("--assume: only one NAME=LO..HI range at a time")
    return {n: (hi if at_range is None or lo == hi else at_range) for n, lo, hi in parsed}


def parse_input_shapes(texts: Sequence[str]) -> dict[str, tuple[int, ...]]:
    from graph_ir.onnx_import import parse_input_shape

    return dict(parse_input_shape(s) for s in texts)
