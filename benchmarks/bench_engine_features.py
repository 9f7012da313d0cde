"""What the engine's fidelity features change: op splitting, double buffering, streamed frames.

Run: ``python benchmarks/bench_engine_features.py [--frames 8]``. Prints markdown tables of
simulated figures (deterministic: they depend only on the code, the chip files and the models)
and the wall time of the simulation itself (noisy on a shared machine: median of repeats).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from chips import load_chip
from chips.variants import restrict
from graph_ir import load_onnx
from hwsim.engine import EngineOptions, op_time_ns, simulate
from hwsim.pipeline import run_graph

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("yolov8n", "resnet18", "mobilenetv2", "bert_base")


def _model(name: str):
    return load_onnx(ROOT / "examples" / "models" / f"{name}.onnx")


def split_table() -> None:
    chip = load_chip("rk3588")
    others = ",".join(u.name for u in chip.units if u.name != "npu")
    one_core = restrict(chip, f"npu:1,{others}")
    print(
        "| model | NPU 1 core | 3 cores, no split | 3 cores, split | ops split | NPU busy (core-ms) no split / split |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name in MODELS:
        g = _model(name)
        one = run_graph(g, one_core).analysis.latency_ms
        plain = run_graph(g, chip, options=EngineOptions(split=False))
        split = run_graph(g, chip)
        n_split = sum(1 for r in split.trace.ops if r.cores)
        busy = {u.unit: u.busy_ms for u in plain.analysis.units}
        busy_s = {u.unit: u.busy_ms for u in split.analysis.units}
        print(
            f"| {name} | {one:.3f} ms | {plain.analysis.latency_ms:.3f} ms | {split.analysis.latency_ms:.3f} ms "
            f"| {n_split} | {busy['npu']:.2f} / {busy_s['npu']:.2f} |"
        )


def frames_table(frames: int) -> None:
    chip = load_chip("rk3588")
    print(
        f"| model | 1 frame | {frames} frames at once: throughput, II | bottleneck (busy/core/frame) "
        "| frame latency, --in-flight 2: mean / max | energy/frame |"
    )
    print("|---|---:|---:|---|---:|---:|")
    for name in MODELS:
        g = _model(name)
        r = run_graph(g, chip, frames=frames)
        s = r.stream
        w = run_graph(g, chip, frames=frames, in_flight=2).stream
        assert s is not None and w is not None
        print(
            f"| {name} | {r.analysis.latency_ms:.3f} ms | {s.throughput_fps:.1f} fps, {s.initiation_interval_ms:.3f} ms "
            f"| {s.bottleneck_unit} ({s.bottleneck_busy_ms:.3f} ms) "
            f"| {sum(w.frame_latency_ms) / w.frames:.3f} / {max(w.frame_latency_ms):.3f} ms "
            f"| {s.energy_per_frame_mj:.2f} mJ |"
        )


def double_buffer_table() -> None:
    chip = load_chip("rk3588")
    print(
        "| model | tiled ops | latency, double-buffered | latency, tile by tile | largest tiled op: T, ideal / DB / tile by tile |"
    )
    print("|---|---:|---:|---:|---|")
    for name in MODELS:
        g = _model(name)
        db = run_graph(g, chip)
        sb = simulate(g, chip, db.table, db.schedule, EngineOptions(double_buffer=False))
        tiled = [r for r in db.trace.ops if r.tiles > 1]
        big = ""
        if tiled:
            r = max(tiled, key=lambda r: db.table.costs[r.op][r.unit].latency_ns)
            c = db.table.costs[r.op][r.unit]
            big = (
                f"{r.op_type} on {r.unit}: T={c.tiles}, {c.latency_ns / 1e3:.1f} / {op_time_ns(c) / 1e3:.1f} / "
                f"{op_time_ns(c, double_buffer=False) / 1e3:.1f} us"
            )
        print(
            f"| {name} | {len(tiled)} | {db.analysis.latency_ms:.3f} ms | {sb.makespan_ps / 1e9:.3f} ms | {big} |"
        )


def speed_table(repeat: int) -> None:
    chip = load_chip("rk3588")
    print("| model | ops | simulate, 1 frame | simulate, 8 frames |")
    print("|---|---:|---:|---:|")
    for name in MODELS:
        g = _model(name)
        r = run_graph(g, chip)
        times = {}
        for frames in (1, 8):
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                simulate(g, chip, r.table, r.schedule, frames=frames)
                ts.append(time.perf_counter() - t0)
            times[frames] = statistics.median(ts)
        print(f"| {name} | {len(g)} | {times[1]:.3f} s | {times[8]:.3f} s |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print("## Splitting ops across the RK3588 NPU's cores\n")
    split_table()
    print(f"\n## Streaming {args.frames} frames (rk3588)\n")
    frames_table(args.frames)
    print("\n## Double buffering of tiled ops (rk3588)\n")
    double_buffer_table()
    print(f"\n## Simulation wall time (median of {args.repeat})\n")
    speed_table(args.repeat)


if __name__ == "__main__":
    main()
