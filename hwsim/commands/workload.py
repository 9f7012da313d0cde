"""``hwsim run CHIP --workload W.yaml``: several models at once, by criticality (:mod:`hwsim.studies.workload`).

Writes ``summary.json`` (the ``workload`` section: per model latency p50 / p99, deadline misses,
achieved rate) and ``trace.json`` (every instance: op names ``MODEL#K/op`` with ``args.model``
and ``args.instance``). Exit 0 every deadline met, 1 some missed, 2 bad input (one line naming
the file and the key, nothing written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwsim.commands.common import UsageError

if TYPE_CHECKING:
    from hwsim.studies.workload import WorkloadRun

__all__ = ["WORKLOAD_FILES", "check_usage", "format_workload", "main", "workload_trace"]

#: The files a workload run writes.
WORKLOAD_FILES = ("summary.json", "trace.json")


def check_usage(args: argparse.Namespace) -> None:
    """Refuse options that apply to one model only, together with ``--workload``.

    Raises
    ------
    UsageError
        A MODEL beside ``--workload``, or ``--frames``, ``--in-flight``, ``--frame-order``,
        ``--deadline``, ``--quant``, ``--objective energy``, ``--input-shape``.
    """
    if args.model is not None:
        raise UsageError("give MODEL or --workload W.yaml, not both")
    given = [
        opt for opt, on in (
            ("--frames", args.frames != 1), ("--in-flight", args.in_flight is not None),
            ("--frame-order", args.frame_order is not None), ("--deadline", bool(args.deadline)),
            ("--quant", getattr(args, "quant", None) is not None), ("--objective", args.objective != "latency"),
            ("--input-shape", bool(getattr(args, "input_shape", ()))),
        ) if on
    ]  # fmt: skip
    if given:
        raise UsageError(f"{given[0]} does not apply with --workload (set rates and deadlines in the file)")


def workload_trace(run: WorkloadRun) -> dict[str, Any]:
    """The merged run's Chrome trace, every op and transfer slice with ``args.model`` and ``args.instance``."""
    from hwsim.report.trace import chrome_trace

    trace = chrome_trace(run.merged)
    for e in trace["traceEvents"]:
        name = e.get("name", "")
        if e.get("ph") in ("X", "B") and "#" in name and "/" in name:
            tag = name[: name.index("/")].split(" ")[-1]
            model, _, k = tag.rpartition("#")
            if k.isdigit():
                e.setdefault("args", {}).update({"model": model, "instance": int(k)})
    trace["otherData"]["workload"] = run.to_json()
    return trace


def format_workload(run: WorkloadRun, out: Path) -> str:
    """The terminal summary: one line per model."""
    count = sum(len(m.instances) for m in run.models)
    lines = [f"workload on {run.merged.chip.name}: {count} instances in {run.window_ms:g} ms"]
    for m in run.models:
        lines.append(
            f"  {m.name:<12} crit {m.criticality}  p50 {m.percentile_ms(50):8.3f} ms  p99 {m.percentile_ms(99):8.3f} ms"
            f"  (alone {m.solo_latency_ms:.3f})  {m.achieved_fps:7.2f}/{1000.0 / m.period_ms:.2f} fps"
            f"  misses {len(m.misses)}/{len(m.instances)}"
        )
    lines.append(f"reports in {out}/")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run ``hwsim run CHIP --workload W.yaml``; returns the exit code."""
    from hwsim.commands.common import load_chip_variant
    from hwsim.report.outdir import check_own_dir, write_dir
    from hwsim.sim.engine import EngineOptions
    from hwsim.studies.workload import load_workload, run_workload

    check_usage(args)
    spec = load_workload(args.workload)
    chip = load_chip_variant(args.chip, args.overrides, getattr(args, "units", None))
    out = args.out if args.out is not None else Path("reports") / f"{chip.name}-workload-{Path(args.workload).stem}"
    check_own_dir(out, WORKLOAD_FILES)
    options = EngineOptions(
        double_buffer=not args.no_double_buffer, split=not args.no_split, max_power_w=args.max_power_w
    )
    run = run_workload(spec, chip, args.precision, options, policy=args.policy, source=str(args.workload))
    summary = {"chip": chip.name, "workload": run.to_json()}

    def write(tmp: Path) -> None:
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        (tmp / "trace.json").write_text(json.dumps(workload_trace(run), separators=(",", ":")), encoding="utf-8")

    write_dir(out, WORKLOAD_FILES, write)
    print(json.dumps(summary, indent=2) if args.json else format_workload(run, out))
    missed = [(m.name, k) for m in run.models for k in m.misses]
    if missed:
        print(f"hwsim: deadline missed: {len(missed)} instance(s), first {missed[0][0]}#{missed[0][1]}", file=sys.stderr)
        return 1
    return 0
