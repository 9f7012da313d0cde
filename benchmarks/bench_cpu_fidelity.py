#!/usr/bin/env python3
"""CPU fidelity: hwsim's prediction against onnxruntime on this machine, before and after
calibration, with a held-out set that calibration never sees.

    python benchmarks/bench_cpu_fidelity.py                     # fingerprint afresh, all models
    python benchmarks/bench_cpu_fidelity.py --chip examples/host/host_ci.yaml   # reuse a fingerprint
    python benchmarks/bench_cpu_fidelity.py --out docs/cpu_fidelity_tables.md
    python benchmarks/heldout_models.py /tmp/heldout && \
        python benchmarks/bench_cpu_fidelity.py --heldout /tmp/heldout   # + generated held-out families (int8 QDQ too)
    python benchmarks/bench_cpu_fidelity.py --threads 2          # onnxruntime and the prediction on 2 threads

One thread unless ``--threads``, onnxruntime default optimizations (``all``). Every model in ``examples/models/`` is
validated; those in ``CALIBRATION`` (present ones) are the calibration set, all others are held
out. ``--rounds N`` measures everything N times, the models interleaved (round 1 of every
model, then round 2, ...), so that a burst of load from other processes hits one round of many
models rather than every round of one. Per round a model's figure is the 25th percentile of its
timed runs (and of each node's profiled durations); over rounds the smallest round figure is
kept (:func:`hwsim.host.validate.merge_rounds`); the tables show half the range of the round figures
as the round-to-round noise. Calibration is fit on the merged rounds of the calibration set.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml

from chips.schema import CpuUnit, chip_from_dict
from hwsim.host.calibrate_host import CALIBRATION_MODELS
from hwsim.host.calibration import (
    CalibrationFit,
    apply,
    core_rate_rounds,
    fit,
    probed_classes,
    write_calibration,
)
from hwsim.host.fingerprint import (
    Dispatch,
    measure_host,
    read_dispatch,
    reference_gflops,
    write_chip,
)
from hwsim.host.int8_check import check_int8, uses_int8_gemm
from hwsim.host.validate import Validation, merge_rounds, op_type_rows, repredict, validate_model

#: The calibration set (why each model is in it: :data:`hwsim.host.calibrate_host.CALIBRATION_MODELS`).
CALIBRATION = CALIBRATION_MODELS
#: Seconds between the extra rounds of models measured only while the other threads lagged (the
#: VM's slow spells of its second vCPU last a minute to half an hour: ``hwsim.host.second_core``).
LAG_PAUSE_S = 20.0


def _row(name: str, v: Validation, held: bool) -> str:
    tag = "held-out" if held else "calib"
    speed = f"x{min(v.speeds):.2f}-{max(v.speeds):.2f}"
    return (f"| {name} | {tag} | {v.predicted_ns / 1e6:.2f} | {v.measured_ns / 1e6:.2f} | "
            f"{v.measured.median_ns / 1e6:.2f} | ±{v.measured.spread:.0%} | ±{v.round_range:.0%} | {speed} | "
            f"{v.error:+.1%}{' (lagged)' if v.lagged else ''} |")  # fmt: skip


def _model_table(title: str, rows: dict[str, Validation], held: set[str]) -> list[str]:
    out = [f"### {title}", "", ("| model | set | predicted ms | measured ms (p25, best round) | median ms (all runs) | "
           "spread (IQR/2) | round-to-round | host speed | error |"), "|---|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    out += [_row(name, v, name in held) for name, v in rows.items()]
    out.append("")
    for label, keep in (("all", lambda n: True), ("held-out", lambda n: n in held)):
        errs = [abs(v.error) for n, v in rows.items() if keep(n)]
        lagged = sum(v.lagged for n, v in rows.items() if keep(n))
        if errs:
            out.append(f"{label}: {sum(e <= 0.10 for e in errs)}/{len(errs)} models within ±10 %; median |error| "
                       f"{statistics.median(errs):.1%}, max {max(errs):.1%}"
                       + (f"; {lagged} measured only while the other threads lagged (marked)" if lagged else "")
                       + ".  ")  # fmt: skip
    return [*out, ""]


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


def family(name: str) -> str:
    """A model's family: a generated file's name up to its size suffix, else the model itself."""
    return name.rsplit("_", 1)[0] if "_" in name else name


def _family_table(before: dict[str, Validation], after: dict[str, Validation], names: list[str]) -> list[str]:
    fams: dict[str, list[str]] = {}
    for n in names:
        fams.setdefault(family(n), []).append(n)
    out = ["### Generated held-out families (benchmarks/heldout_models.py)", "",
           "| family | models | error before | error after (min..max over models) | within ±10 % after |",
           "|---|---|---:|---:|---:|"]  # fmt: skip
    for f, ns in fams.items():
        b = [before[n].error for n in ns]
        a = [after[n].error for n in ns]
        out.append(f"| {f} | {', '.join(ns)} | {min(b):+.1%}..{max(b):+.1%} | {min(a):+.1%}..{max(a):+.1%} | "
                   f"{sum(abs(e) <= 0.10 for e in a)}/{len(a)} |")  # fmt: skip
    return [*out, ""]


def _footer(before: dict[str, Validation], dispatch: Dispatch | None, f: CalibrationFit, t0: float) -> list[str]:
    """The lines after the tables: inserted kernels, dispatch, what calibration fit, the run time."""
    lines: list[str] = []
    ins = {n: v for n, v in before.items() if v.inserted_ns > 0}
    if ins:
        lines += ["Kernels onnxruntime inserts (not predicted), measured: " + ", ".join(
            f"{n} {v.inserted_ns / 1e6:.2f} ms ({v.inserted_ns / v.measured_ns:.1%}: {'/'.join(v.inserted_ops)})"
            for n, v in ins.items()) + ".", ""]  # fmt: skip
    if dispatch:
        lines += [(f"onnxruntime dispatch (fingerprint): {dispatch.kernel_ns:.0f} ns per kernel, {dispatch.run_ns:.0f} ns "
                  f"per run call (predicted on top), profiler's tiny kernel {dispatch.profiled_kernel_ns:.0f} ns."), ""]
    lines += [f"Calibration: op_overhead_ns {f.op_overhead_ns:.0f}; efficiencies "
              + ", ".join(f"{t} {e:.3f}" for t, e in f.efficiency.items())
              + (f"; faster than roofline: {', '.join(f.faster_than_roofline)}" if f.faster_than_roofline else "")
              + (f"; recurrent_section_ns {f.recurrent_section_ns:.0f} (on {f.section_steps} split step products)"
                 if f.recurrent_section_ns is not None else ""),
              "", f"Total benchmark time {time.time() - t0:.0f} s."]  # fmt: skip
    return lines


def _int8_line(chip_path: Path, threads: int, vs: Iterable[Validation]) -> str | None:
    """Whether onnxruntime ran the fingerprint's integer GEMM kernel here (:mod:`hwsim.host.int8_check`),
    for a run with int8 models."""
    if not any(uses_int8_gemm([*(n.op_type for n in v.nodes), *v.inserted_ops]) for v in vs):
        return None
    got = check_int8(chip_path, threads)
    if got is None:
        return None
    verdict = "the same kernel" if got.agrees else "ANOTHER KERNEL: the int8 rows do not hold"
    return (f"int8 GEMM check: the fingerprint's int8 MatMul ran at {got.now_gops:.0f} GOP/s after the models, "
            f"{got.fingerprint_gops:.0f} in the fingerprint (x{got.ratio:.2f}, {verdict}).")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", type=Path, help="reuse this fingerprint chip file instead of measuring afresh")
    ap.add_argument("--models", nargs="*", help="model names (default: every file in examples/models/)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=0.5, help="time each model at least this long per round")
    ap.add_argument("--out", type=Path, help="also write the markdown tables here")
    ap.add_argument("--calibration-out", type=Path, help="write the fitted calibration file here")
    ap.add_argument("--raw-times", action="store_true", help="do not put measurements on the fingerprint's clock")
    ap.add_argument("--heldout", type=Path, help="also validate every *.onnx here as held out (heldout_models.py)")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads, predicted the same (default 1)")
    ap.add_argument("--lag-retry-s", type=float, default=300.0,
                    help="with --threads > 1: measure again, for up to this long, the models whose other threads "
                         "lagged in every round (default 300)")  # fmt: skip
    return ap


def _measured(measure: Callable[[Path], Validation], paths: dict[str, Path], rounds: int,
              retry_s: float) -> dict[str, Validation]:  # fmt: skip
    """Each model measured ``rounds`` times, the models interleaved (a burst of load hits one round
    of many), the rounds merged; then, for up to ``retry_s`` seconds, one more round of each model
    every round of which ran while the other threads lagged (:attr:`Validation.lagged`: the VM's
    other vCPU in a slow spell), :data:`LAG_PAUSE_S` apart."""
    got: dict[str, list[Validation]] = {n: [] for n in paths}
    for r in range(rounds):
        for n, path in paths.items():
            got[n].append(measure(path))
            print(f"round {r + 1}: {n} measured", flush=True)
    merged = {n: merge_rounds(vs) for n, vs in got.items()}
    end = time.time() + retry_s
    while (lagged := [n for n, v in merged.items() if v.lagged]) and time.time() < end:
        print(f"other threads lagged in every round of {len(lagged)} model(s); again in {LAG_PAUSE_S:.0f} s", flush=True)
        time.sleep(LAG_PAUSE_S)
        for n in lagged:
            got[n].append(measure(paths[n]))
            merged[n] = merge_rounds(got[n])
    return merged


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        chip_path = args.chip
        if chip_path is None:
            chip_path = Path(tmp) / "host.yaml"
            write_chip(measure_host(), chip_path, "host")
            print(f"fingerprinted this machine in {time.time() - t0:.0f} s")
        data = yaml.safe_load(chip_path.read_text(encoding="utf-8"))
        if data.pop("calibration", None) is not None:
            print(f"note: {chip_path} includes a calibration; the 'before' table leaves it out")
        chip = chip_from_dict(data, source=str(chip_path))
        reference = None if args.raw_times else reference_gflops(chip_path, args.threads)
        dispatch = read_dispatch(chip_path)
        names = args.models or sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.onnx"))
        paths = {n: ROOT / "examples" / "models" / f"{n}.onnx" for n in names}
        generated = sorted(p.stem for p in args.heldout.glob("*.onnx")) if args.heldout else []
        paths.update((n, args.heldout / f"{n}.onnx") for n in generated)
        names += generated
        cpu = next((u for u in chip.units if isinstance(u, CpuUnit)), None)
        if any("int8" in n for n in generated) and cpu is not None and cpu.requant_ns is None:
            print(f"note: {chip_path} has no int8 kernel figures (requant_ns, QLinearConv, ...: a fingerprint "
                  "before hwsim.host.int8_probe); its int8 models are priced on the category defaults")  # fmt: skip
        held = {n for n in names if n not in CALIBRATION}
        measure = partial(validate_model, chip, threads=args.threads, opt="all", runs=args.runs,
                          min_total_s=args.min_seconds, reference=reference, dispatch=dispatch)  # fmt: skip
        before = _measured(measure, {n: paths[n] for n in names}, args.rounds, args.lag_retry_s)
        int8 = _int8_line(chip_path, args.threads, before.values())
        calib = [n for n in names if n not in held]
        core = [] if args.threads == 1 else core_rate_rounds(
            chip, [paths[n] for n in calib], [before[n] for n in calib], "all", args.runs, args.rounds,
            min_total_s=args.min_seconds, dispatch=dispatch,
            reference=None if reference is None else reference_gflops(chip_path, 1))
        f = fit([before[n] for n in calib], chip.units[0].name, core_rate=core, probed=probed_classes(chip, chip.units[0].name))
        cal_chip = apply(chip, f)
        if args.calibration_out:
            write_calibration(f, chip.name, args.calibration_out)
        after = {n: repredict(v, cal_chip, paths[n]) for n, v in before.items()}

    lines = [(f"Machine: {chip.description}; chip file {chip_path}; {args.threads} thread(s), onnxruntime optimizations 'all', "
             f"{args.runs}+ timed runs (and {args.min_seconds:g}+ s) per model and round, {args.rounds} round(s), "
             "models interleaved; measured = 25th percentile of a round's runs, best round"
             + ("" if reference is None else
                f", on the fingerprint's clock (times x host speed: the fp32 MatMul probe on {args.threads} thread(s) over the "
                f"fingerprint's {reference[0]:.1f} GFLOP/s, per model and round)")
             + "."), ""]  # fmt: skip
    lines += [int8, ""] if int8 else []
    lines += _model_table("Before calibration", before, held)
    lines += _model_table("After calibration (fit on the calib set only)", after, held)
    if generated:
        lines += _family_table(before, after, generated)
    lines += _op_table("Per op type, before calibration (all models)", list(before.values()))
    lines += _op_table("Per op type, after calibration, calibration set",
                       [v for n, v in after.items() if n not in held])  # fmt: skip
    lines += _op_table("Per op type, after calibration, held-out set", [v for n, v in after.items() if n in held])
    lines += _footer(before, dispatch, f, t0)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
