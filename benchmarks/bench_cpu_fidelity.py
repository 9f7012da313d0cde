#!/usr/bin/env python3
"""CPU fidelity: hwsim's prediction against onnxruntime on this machine, before and after
calibration, with a held-out set that calibration never sees.

    python benchmarks/bench_cpu_fidelity.py                     # fingerprint afresh, all models
    python benchmarks/bench_cpu_fidelity.py --chip examples/host/host_ci.yaml   # reuse a fingerprint
    python benchmarks/bench_cpu_fidelity.py --out docs/cpu_fidelity_tables.md

One thread, onnxruntime default optimizations (``all``). Every model in ``examples/models/`` is
validated; those in ``CALIBRATION`` (present ones) are the calibration set, all others are held
out. ``--rounds N`` measures everything N times and reports, per model, the median over rounds
and the range of the round medians (the machine is shared: noise is part of the answer).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chips.schema import chip_from_dict, load_chip
from hwsim.calibration import apply, fit, write_calibration
from hwsim.fingerprint import measure_host, write_chip
from hwsim.validate import Validation, op_type_rows, repredict, validate_model

#: Models calibration is fit on: a plain CNN, a detector, a transformer, RNNs, an MLP.
CALIBRATION = ("resnet18", "yolov8n", "bert_base", "lstm_gru", "mlp_mnist")


def _row(name: str, vs: list[Validation], held: bool) -> str:
    meas = [v.measured.median_ns for v in vs]
    m = statistics.median(meas)
    p = vs[0].predicted_ns
    rng = (max(meas) - min(meas)) / 2 / m if len(meas) > 1 else 0.0
    spread = statistics.median(v.measured.spread for v in vs)
    tag = "held-out" if held else "calib"
    return (f"| {name} | {tag} | {p / 1e6:.2f} | {m / 1e6:.2f} | ±{spread:.0%} | ±{rng:.0%} | "
            f"{p / m - 1:+.1%} |")  # fmt: skip


def _model_table(title: str, rows: dict[str, list[Validation]], held: set[str]) -> list[str]:
    out = [f"### {title}", "", ("| model | set | predicted ms | measured ms (median) | spread (IQR/2) | "
           "round-to-round | error |"), "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for name, vs in rows.items():
        out.append(_row(name, vs, name in held))
    errs = [abs(vs[0].predicted_ns / statistics.median(v.measured.median_ns for v in vs) - 1) for vs in rows.values()]
    within = sum(e <= 0.10 for e in errs)
    out += ["", (f"{within}/{len(errs)} models within ±10 %; median |error| {statistics.median(errs):.1%}, "
            f"max {max(errs):.1%}."), ""]  # fmt: skip
    return out


def _op_table(title: str, vs: list[Validation]) -> list[str]:
    out = [f"### {title}", "", "| op type | kernels | predicted ms | measured ms | median node |error| |",
           "|---|---:|---:|---:|---:|"]  # fmt: skip
    rows = op_type_rows(vs, min_ns=2000.0)
    for r in rows:
        out.append(f"| {r.op_type} | {r.nodes} | {r.predicted_ns / 1e6:.3f} | {r.measured_ns / 1e6:.3f} | "
                   f"{r.median_abs_error:.1%} |")  # fmt: skip
    big = [r for r in rows if r.measured_ns > 0.01 * sum(x.measured_ns for x in rows)]
    if big:
        med = statistics.median(r.median_abs_error for r in big)
        out += ["", (f"median over op types with >1 % of the time: {med:.1%} "
                f"({sum(r.median_abs_error <= 0.15 for r in big)}/{len(big)} within 15 %).")]  # fmt: skip
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", type=Path, help="reuse this fingerprint chip file instead of measuring afresh")
    ap.add_argument("--models", nargs="*", help="model names (default: every file in examples/models/)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", type=Path, help="also write the markdown tables here")
    ap.add_argument("--calibration-out", type=Path, help="write the fitted calibration file here")
    args = ap.parse_args(argv)

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        chip_path = args.chip
        if chip_path is None:
            chip_path = Path(tmp) / "host.yaml"
            write_chip(measure_host(), chip_path, "host")
            print(f"fingerprinted this machine in {time.time() - t0:.0f} s")
        chip = load_chip(chip_path)
        if chip.calibration is not None:
            data = chip.model_dump()
            for u in data["units"]:
                u["efficiency"] = {}
            chip = chip_from_dict(data, source=str(chip_path))
            print(f"note: {chip_path} includes a calibration; the 'before' table ignores its efficiencies")
        names = args.models or sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.onnx"))
        paths = {n: ROOT / "examples" / "models" / f"{n}.onnx" for n in names}
        held = {n for n in names if n not in CALIBRATION}
        before: dict[str, list[Validation]] = {n: [] for n in names}
        for r in range(args.rounds):
            for n in names:
                before[n].append(validate_model(chip, paths[n], 1, "all", args.runs))
                print(f"round {r + 1}: {n} measured", flush=True)
        calib = [vs[0] for n, vs in before.items() if n not in held]
        f = fit(calib, chip.units[0].name)
        cal_chip = apply(chip, f)
        if args.calibration_out:
            write_calibration(f, chip.name, args.calibration_out)
        after = {n: [repredict(v, cal_chip, paths[n]) for v in vs] for n, vs in before.items()}

    lines = [(f"Machine: {chip.description}; chip file {chip_path}; 1 thread, onnxruntime optimizations 'all', "
             f"{args.runs}+ timed runs per model, {args.rounds} round(s)."), ""]  # fmt: skip
    lines += _model_table("Before calibration", before, held)
    lines += _model_table("After calibration (fit on the calib set only)", after, held)
    lines += _op_table("Per op type, before calibration (all models)", [v for vs in before.values() for v in vs])
    lines += _op_table("Per op type, after calibration, calibration set",
                       [v for n, vs in after.items() if n not in held for v in vs])  # fmt: skip
    lines += _op_table("Per op type, after calibration, held-out set",
                       [v for n, vs in after.items() if n in held for v in vs])  # fmt: skip
    lines += [f"Calibration: op_overhead_ns {f.op_overhead_ns:.0f}; efficiencies "
              + ", ".join(f"{t} {e:.3f}" for t, e in f.efficiency.items())
              + (f"; faster than roofline: {', '.join(f.faster_than_roofline)}" if f.faster_than_roofline else ""),
              "", f"Total benchmark time {time.time() - t0:.0f} s."]  # fmt: skip
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
