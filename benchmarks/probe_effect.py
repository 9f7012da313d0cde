#!/usr/bin/env python3
"""What the fingerprint's single-op probes (``hwsim.host.op_probes``) change, on the same
measurements: each model is measured once (``--rounds`` interleaved rounds, the best kept) and
predicted twice, on the chip file as written and on the same file without the efficiencies the
probes wrote (those calibration did not overwrite), so that the VM's run-to-run noise and a
calibration refit do not enter the comparison.

    python benchmarks/heldout_models.py /tmp/ho && python benchmarks/heldout_function_ops.py /tmp/fo
    python benchmarks/probe_effect.py chips/host.yaml /tmp/ho/*.onnx /tmp/fo/*.onnx examples/models/*.onnx

Only models holding a probed op type are measured; a table row per model: error with the
probes, error without, and the probed op types it holds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def without_probes(chip_path: Path):  # type: ignore[no-untyped-def]
    """The chip of ``chip_path``, and the same chip without the efficiencies its fingerprint's
    probes gave (an efficiency equal, to its 4 written digits, to the probe's own)."""
    from chips import load_chip
    from hwsim.host.fingerprint import read_fingerprint
    from hwsim.host.op_probes import probe_efficiencies

    chip = load_chip(chip_path)
    rates = (read_fingerprint(chip_path) or {}).get("kernel_rates", {})
    unit = chip.units[0]
    probed = {k for k, e in probe_efficiencies(chip, rates).items() if abs(unit.efficiency.get(k, -1.0) - round(e, 4)) < 1e-4}
    bare = unit.model_copy(update={"efficiency": {k: v for k, v in unit.efficiency.items() if k not in probed}})
    return chip, chip.model_copy(update={"units": (bare, *chip.units[1:])}), probed


def main() -> int:
    from graph_ir.onnx_import import load_onnx
    from hwsim.host.fingerprint import read_dispatch, reference_gflops
    from hwsim.host.validate import merge_rounds, repredict, validate_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chip", type=Path)
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    chip, bare, probed = without_probes(args.chip)
    held = {}
    for path in args.models:
        types = sorted({op.op_type for op in load_onnx(path).ops()} & probed)
        if types:
            held[path] = types
    ref, dispatch = reference_gflops(args.chip), read_dispatch(args.chip)
    rounds = {p: [validate_model(chip, p, runs=args.runs, reference=ref, dispatch=dispatch) for _ in range(1)] for p in held}
    for _ in range(args.rounds - 1):
        for p in held:
            rounds[p].append(validate_model(chip, p, runs=args.runs, reference=ref, dispatch=dispatch))
    print(f"chip {args.chip}: {len(probed)} efficiencies from the probes; {len(held)} models hold a probed op type\n")
    print("| model | measured ms | predicted ms, probes | error | predicted ms, without | error | probed op types |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for p, types in held.items():
        v = merge_rounds(rounds[p])
        with_, without = repredict(v, chip, p), repredict(v, bare, p)
        ms = v.measured_ns / 1e6
        print(f"| {p.stem} | {ms:.3f} | {with_.predicted_ns / 1e6:.3f} | {with_.predicted_ns / 1e6 / ms - 1:+.1%} | "
              f"{without.predicted_ns / 1e6:.3f} | {without.predicted_ns / 1e6 / ms - 1:+.1%} | {', '.join(types)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
