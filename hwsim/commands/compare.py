"""``hwsim compare``: runs side by side, as a table, ``compare.json``, ``compare.csv`` and ``compare.png``.

Two ways to name the runs:

- report folders of earlier runs: ``hwsim compare reports/a reports/b [...]`` reads their
  ``summary.json``;
- one model and the variants to simulate: ``hwsim compare MODEL --chip rk3588 --chip edge8
  [--policy eft --policy affinity-locality] [--what-if npu.clock_mhz=600,dram.bandwidth_gbps=20]
  [--set TARGET.FIELD=VALUE]``: every chip x policy x (chip as is, then each ``--what-if``),
  ``--set`` applying to all of them.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path
from typing import Any

from hwsim.commands.common import add_debug, add_model_options, load_chip_variant, load_model
from hwsim.studies.compare import CompareError

__all__ = ["COMPARE_FILES", "add_parser", "input_errors", "main"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions of this command that mean bad input (beyond the CLI's common ones)."""
    return (CompareError,)


#: The files ``hwsim compare`` writes into its folder.
COMPARE_FILES = ("compare.json", "compare.csv", "compare.png")


def add_parser(sub: Any) -> None:
    """Add the ``compare`` subcommand to an ``add_subparsers`` object."""
    c = sub.add_parser(
        "compare",
        help="put runs side by side: report folders, or one model on several chips/policies/what-ifs",
        description="Compare report folders of earlier runs (hwsim compare reports/a reports/b), or simulate "
        "one MODEL on every --chip x --policy x (as is, then each --what-if) and compare those.",
    )
    c.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR_OR_MODEL",
        help="two or more report folders, or one ONNX model",
    )
    c.add_argument(
        "--chip",
        action="append",
        default=[],
        help="chip YAML or bundled name (repeatable; default rk3588)",
    )
    c.add_argument(
        "--what-if", action="append", default=[], metavar="T.F=V[,T.F=V...]", dest="what_ifs",
        help="a variant of each chip, e.g. npu.clock_mhz=600,dram.bandwidth_gbps=20 (repeatable)",
    )  # fmt: skip
    add_model_options(c, policies="many", units=False)
    c.add_argument(
        "--out",
        type=Path,
        help="folder for compare.json/.csv/.png (default reports/compare-<model>/)",
    )
    c.add_argument("--json", action="store_true", help="print compare.json instead of the table")
    add_debug(c)


def _simulated(args: argparse.Namespace, model: Path) -> tuple[list[Any], str]:
    """Simulate every variant of one model; returns (variants, model name)."""
    from chips.variants import override
    from cost_models.table import UnplaceableError
    from hwsim.pipeline import run_graph
    from hwsim.report.summary import build_summary
    from hwsim.studies.compare import Variant
    from scheduler import DEFAULT_POLICY

    chips = args.chip or ["rk3588"]
    policies = args.policy or [DEFAULT_POLICY]
    what_ifs: list[list[str]] = [[]]
    for w in args.what_ifs:
        sets = [s.strip() for s in w.split(",") if s.strip()]
        if not sets:
            raise CompareError(f"--what-if {w!r}: names no TARGET.FIELD=VALUE")
        what_ifs.append(sets)
    specs = []  # (label, chip ref, what-if sets, policy), all checked before simulating anything
    for chip_ref in chips:
        for sets in what_ifs:
            for policy in policies:
                parts = [
                    Path(chip_ref).stem if len(chips) > 1 else "",
                    policy if len(policies) > 1 else "",
                    ",".join(sets),
                ]
                label = " ".join(p for p in parts if p) or Path(chip_ref).stem
                specs.append((label, chip_ref, sets, policy))
    labels = [spec[0] for spec in specs]
    if len(specs) < 2:
        raise CompareError(
            "compare needs at least two runs (add a --chip, --policy or --what-if, or more folders)"
        )
    if len(set(labels)) != len(labels):
        raise CompareError(
            f"two variants have the same label ({', '.join(labels)}); name each chip once"
        )
    graph = load_model(str(model), args.input_shape, args.assume)
    bases = {chip_ref: load_chip_variant(chip_ref, args.overrides) for chip_ref in chips}
    chip_of = {
        (c, tuple(w)): override(bases[c], w, "--what-if") if w else bases[c] for c in chips for w in what_ifs
    }
    variants = []
    for label, chip_ref, sets, policy in specs:
        chip = chip_of[(chip_ref, tuple(sets))]
        try:
            result = run_graph(graph, chip, args.precision, policy)
        except UnplaceableError as exc:
            raise UnplaceableError(f"{model} ({label}): {exc}") from None
        variants.append(Variant(label, build_summary(result).to_json()))
    return variants, graph.name


def _from_folders(args: argparse.Namespace) -> list[Any]:
    from hwsim.studies.compare import Variant, load_summary

    given = [
        o for o in ("chip", "policy", "what_ifs", "overrides", "input_shape") if getattr(args, o)
    ]
    if given:
        raise CompareError(
            f"--{given[0].replace('_', '-').rstrip('s')} applies to a MODEL, not to report folders"
        )
    variants = []
    seen: dict[str, int] = {}
    for folder in args.runs:
        s = load_summary(folder)
        name = Path(folder).resolve().name or str(folder)
        seen[name] = seen.get(name, 0) + 1
        variants.append(Variant(name if seen[name] == 1 else f"{name} ({seen[name]})", s))
    return variants


def _csv(data: dict[str, Any]) -> str:
    units: dict[str, None] = {}
    for r in data["runs"]:
        units.update(dict.fromkeys(r["utilization"]))
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    fixed = ["label", "chip", "model", "policy", "precision", "latency_ms", "speedup_vs_first", "energy_mj",
             "critical_path_ms", "cross_domain_bytes", "dram_bytes"]  # fmt: skip
    w.writerow(fixed + [f"utilization_{u}" for u in units])
    for r in data["runs"]:
        w.writerow(
            [r[k] if r[k] is not None else "" for k in fixed]
            + [r["utilization"].get(u, "") for u in units]
        )
    return out.getvalue()


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim compare``; returns the exit code."""
    from hwsim.report.outdir import check_own_dir, write_dir
    from hwsim.studies.compare import compare_json, format_table

    paths = [Path(r) for r in args.runs]
    for p in paths:
        if not p.exists():
            raise CompareError(f"{p}: no such report folder or model file")
    if all(p.is_dir() for p in paths):
        variants = _from_folders(args)
        default_out = Path("reports") / "compare"
    elif len(paths) == 1:
        if args.out is not None:
            check_own_dir(args.out, COMPARE_FILES)  # refuse before simulating
        variants, model = _simulated(args, paths[0])
        default_out = Path("reports") / f"compare-{model}"
    else:
        raise CompareError(
            f"{' '.join(map(str, paths))}: give report folders only, or one model file (not {len(paths)} files)"
        )
    if len(variants) < 2:
        raise CompareError(
            "compare needs at least two runs (add a --chip, --policy or --what-if, or more folders)"
        )
    data = compare_json(variants)
    out = args.out if args.out is not None else default_out

    def write(tmp: Path) -> None:
        from hwsim.report.plots import compare_png

        (tmp / "compare.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        (tmp / "compare.csv").write_text(_csv(data), encoding="utf-8")
        compare_png(data, tmp / "compare.png")

    write_dir(out, COMPARE_FILES, write)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(format_table(variants))
        print(f"  reports       {out}/")
    return 0
