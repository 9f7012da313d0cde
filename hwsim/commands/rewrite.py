"""``hwsim rewrite``: apply graph rewrite passes to a model, with their predicted effect on a chip.

``--passes auto`` tries every registered pass in registry order and keeps each whose simulated
effect on the chip is a gain (lower latency, or the same latency and fewer DRAM bytes), going on
from the result; ``--passes NAME,...`` applies those. Per pass it prints how many sites it
rewrote, how many it skipped and why, and the predicted change in latency and DRAM bytes.

``--check`` proves the result the way onnxsim does (:mod:`graph_ir.rewrites.check`): the kept
passes are applied again to the model with seeded random weights (a weightless file has none),
each step run in onnxruntime on random inputs, and a result that differs is not written (exit 1,
one line naming the pass and the output). The output is written atomically (a temporary file,
then ``os.replace``): nothing is written on any error.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwsim.commands.common import (
    add_chip_model_arguments,
    add_debug,
    add_model_options,
    load_chip_variant,
)

if TYPE_CHECKING:
    import onnx

    from hwsim.studies.rewrite import PassOutcome

__all__ = ["RewriteError", "add_parser", "input_errors", "main"]


class RewriteError(ValueError):
    """Bad arguments for ``rewrite`` (exit 2, nothing written)."""


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    from graph_ir.rewrites import UnknownPassError
    from hwsim.studies.rewrite import PassError

    return (RewriteError, UnknownPassError, PassError)


def add_parser(sub: Any) -> None:
    """Add the ``rewrite`` subcommand to an ``add_subparsers`` object."""
    p = sub.add_parser(
        "rewrite",
        help="apply graph rewrite passes (fold_bn, const_fold, ...) and predict their effect on a chip",
        description="Rewrite MODEL with graph passes, report each pass's sites and its simulated effect on CHIP, "
        "and write the result to -o.",
    )
    add_chip_model_arguments(p)
    p.add_argument(
        "--passes", default="auto", metavar="auto|NAME,...",
        help="'auto' (every registered pass whose predicted effect on the chip is a gain) or a comma list "
        "of pass names (default: %(default)s)",
    )  # fmt: skip
    p.add_argument("-o", "--out", type=Path, required=True, help="the rewritten ONNX file to write")
    p.add_argument("--check", action="store_true", help="prove the result in onnxruntime on random inputs; refuse to write one that differs")
    p.add_argument("--json", action="store_true", help="print the per-pass outcome as JSON")
    add_model_options(p)
    add_debug(p)


def main(args: argparse.Namespace) -> int:
    from graph_ir.rewrites import PASSES, get_pass
    from hwsim.commands.common import assume_counts, load_model, parse_input_shapes
    from hwsim.studies.rewrite import apply_passes

    auto = args.passes.strip() == "auto"
    names = list(PASSES) if auto else [n.strip() for n in args.passes.split(",") if n.strip()]
    for n in names:
        get_pass(n)  # an unknown name: one line listing the registered ones
    if not names:
        raise RewriteError("--passes names no pass")
    if not args.out.parent.is_dir():
        raise RewriteError(f"{args.out}: folder {args.out.parent} does not exist")
    shapes, assume = parse_input_shapes(args.input_shape), assume_counts(args.assume)
    load_model(args.model, args.input_shape, args.assume)  # the model errors every command gives, one line
    chip = load_chip_variant(args.chip, args.overrides, args.units)
    model = _load(args.model)
    final, outcomes = apply_passes(
        model, names, chip, auto=auto, precision=args.precision, policy=args.policy, input_shapes=shapes,
        assume=assume, source=args.model,
    )  # fmt: skip
    verdict = _check(model, outcomes, shapes, args.model) if args.check else None
    _print(outcomes, args, verdict)
    if verdict is not None and verdict[0]:
        return 1
    _write(final, args.out)
    if not args.json:
        print(f"wrote {args.out}")
    return 0


def _load(path: str) -> onnx.ModelProto:
    """The model at ``path`` as the passes take it: its sparse initializers made dense the way the
    importer makes them (:func:`graph_ir.onnx_import.densify_sparse`), its external weights read
    from beside it where they are there (a weightless file's stay absent).

    Raises
    ------
    RewriteError
        A sparse initializer with inline values that cannot be made dense (too many elements, or
        indices outside its dims): the rewritten file would lose its values.
    """
    import onnx

    from graph_ir.materialize import fill_absent_weights
    from graph_ir.onnx_import import MAX_DENSE_ELEMENTS, densify_sparse

    model = onnx.load(path, load_external_data=False)
    lost = densify_sparse(model.graph)
    if lost:
        raise RewriteError(
            f"{path}: sparse initializer {lost[0]!r} cannot be made dense (over {MAX_DENSE_ELEMENTS} elements, "
            "or indices outside its dims); rewrite would lose its values"
        )
    return fill_absent_weights(model, Path(path).resolve().parent, random=False)


def _check(
    model: onnx.ModelProto, outcomes: tuple[PassOutcome, ...], shapes: dict[str, tuple[int, ...]], source: str
) -> tuple[str, list[str]]:
    """Prove the kept passes step by step on ``model`` with weights: ("", lines) when every step
    is equal, else (the one line naming the pass and output at fault, lines)."""
    from graph_ir.materialize import fill_absent_weights
    from graph_ir.rewrites import get_pass
    from graph_ir.rewrites.check import CheckError, equivalent
    from hwsim.studies.rewrite import run_pass

    current = fill_absent_weights(model, None, seed=0)
    lines: list[str] = []
    for o in outcomes:
        if not o.kept:
            continue
        candidate = run_pass(get_pass(o.name), current, source=source).model
        try:
            eq = equivalent(current, candidate, input_shapes=shapes)
        except CheckError as exc:
            return f"check: pass {o.name}: {exc}", lines
        lines.append(f"check {o.name}: {eq.line()}")
        if not eq.equal:
            return f"check: pass {o.name} changes the result: {eq.line()}", lines
        current = candidate
    return "", lines


def _print(outcomes: tuple[PassOutcome, ...], args: argparse.Namespace, verdict: tuple[str, list[str]] | None) -> None:
    import sys

    if args.json:
        doc: dict[str, Any] = {"chip": args.chip, "model": args.model, "passes": [_outcome_json(o) for o in outcomes]}
        if verdict is not None:
            doc["check"] = {"equal": not verdict[0], "error": verdict[0] or None, "steps": verdict[1]}
        print(json.dumps(doc, indent=2))
    else:
        for o in outcomes:
            print(_outcome_line(o))
            for reason, count in o.skipped_reasons():
                print(f"    skipped {count}: {reason}")
        for line in (verdict[1] if verdict is not None else []):
            print(line)
    if verdict is not None and verdict[0]:
        print(f"hwsim rewrite: {verdict[0]}; nothing written", file=sys.stderr)


def _outcome_line(o: PassOutcome) -> str:
    head = f"{o.name}: applied {len(o.result.applied)}, skipped {len(o.result.skipped)}"
    if o.effect is None:
        return head
    e = o.effect
    return (
        f"{head}; latency {e.before.latency_ms:.3f} -> {e.after.latency_ms:.3f} ms ({e.latency_change_ms:+.3f}), "
        f"DRAM {e.before.dram_bytes / 1e6:.2f} -> {e.after.dram_bytes / 1e6:.2f} MB ({e.dram_change_bytes / 1e6:+.2f}); "
        f"{'kept' if o.kept else 'not kept: no gain'}"
    )


def _outcome_json(o: PassOutcome) -> dict[str, Any]:
    e = o.effect
    return {
        "pass": o.name,
        "applied": len(o.result.applied),
        "skipped": len(o.result.skipped),
        "skipped_reasons": [{"reason": r, "sites": c} for r, c in o.skipped_reasons()],
        "kept": o.kept,
        "effect": None if e is None else {
            "latency_ms": [e.before.latency_ms, e.after.latency_ms], "latency_change_ms": e.latency_change_ms,
            "energy_mj": [e.before.energy_mj, e.after.energy_mj], "energy_change_mj": e.energy_change_mj,
            "dram_bytes": [e.before.dram_bytes, e.after.dram_bytes], "dram_change_bytes": e.dram_change_bytes,
        },
    }  # fmt: skip


def _write(model: onnx.ModelProto, out: Path) -> None:
    """Write ``model`` to ``out`` atomically (nothing there if anything fails)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        Path(tmp).write_bytes(model.SerializeToString())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
