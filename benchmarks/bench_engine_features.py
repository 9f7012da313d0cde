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
from hwsim.analysis.frames import frame_stats
from hwsim.pipeline import run_graph
from hwsim.sim.engine import EngineOptions, op_time_ns, simulate

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("yolov8n", "resnet18", "mobilenetv2", "bert_base")
#: Models the schedule spreads over CPU, GPU and NPU (streaming tables only).
EXTRA_MODELS = ("distilbert", "vit_b16", "audio_kws")


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


def _busiest_core_ms(trace, frames: int) -> tuple[str, float]:
    """The core with the most busy time per frame (a lower bound on II for a fixed placement)."""
    busy: dict[str, int] = {}
    for r in trace.ops:
        for c in r.all_cores:
            key = f"{r.unit}/{c}"
            busy[key] = busy.get(key, 0) + r.end_ps - r.start_ps
    core = max(busy, key=lambda k: (busy[k], k))
    return core, busy[core] / frames / 1e9


def frames_table(frames: int) -> None:
    chip = load_chip("rk3588")
    print(
        f"| model (units used) | 1 frame | {frames} frames at once, II: frame-major / interleaved "
        "| throughput (interleaved) | busiest core (busy/frame) "
        "| --in-flight 2, II / latency mean: frame-major / interleaved | energy/frame |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    for name in MODELS + EXTRA_MODELS:
        g = _model(name)
        r = run_graph(g, chip)
        used = sorted({p.unit for p in r.schedule.placements.values()})
        row = {}
        for order in ("frame-major", "interleaved"):
            opts = EngineOptions(frame_order=order)
            s = frame_stats(chip, simulate(g, chip, r.table, r.schedule, opts, frames))
            w = frame_stats(chip, simulate(g, chip, r.table, r.schedule, opts, frames, in_flight=2))
            row[order] = (s, w)
        (fm, fmw), (il, ilw) = row["frame-major"], row["interleaved"]
        core, core_ms = _busiest_core_ms(simulate(g, chip, r.table, r.schedule, frames=frames), frames)
        print(
            f"| {name} ({', '.join(used)}) | {r.analysis.latency_ms:.3f} ms "
            f"| {fm.initiation_interval_ms:.3f} / {il.initiation_interval_ms:.3f} ms "
            f"| {il.throughput_fps:.1f} fps | {core} ({core_ms:.3f} ms) "
            f"| {fmw.initiation_interval_ms:.3f} / {sum(fmw.frame_latency_ms) / frames:.3f} ms; "
            f"{ilw.initiation_interval_ms:.3f} / {sum(ilw.frame_latency_ms) / frames:.3f} ms "
            f"| {il.energy_per_frame_mj:.2f} mJ |"
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
    print("| model | ops | simulate, 1 frame | 8 frames, frame-major | 8 frames, interleaved |")
    print("|---|---:|---:|---:|---:|")
    for name in MODELS:
        g = _model(name)
        r = run_graph(g, chip)
        times = {}
        for frames, order in ((1, "interleaved"), (8, "frame-major"), (8, "interleaved")):
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                simulate(g, chip, r.table, r.schedule, EngineOptions(frame_order=order), frames=frames)
                ts.append(time.perf_counter() - t0)
            times[frames, order] = statistics.median(ts)
        print(
            f"| {name} | {len(g)} | {times[1, 'interleaved']:.3f} s | {times[8, 'frame-major']:.3f} s "
            f"| {times[8, 'interleaved']:.3f} s |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--tables", default="split,frames,double-buffer,speed", help="comma-separated tables to print"
    )
    args = ap.parse_args()
    tables = set(args.tables.split(","))
    if "split" in tables:
        print("## Splitting ops across the RK3588 NPU's cores\n")
        split_table()
    if "frames" in tables:
        print(f"\n## Streaming {args.frames} frames (rk3588)\n")
        frames_table(args.frames)
    if "double-buffer" in tables:
        print("\n## Double buffering of tiled ops (rk3588)\n")
        double_buffer_table()
    if "speed" in tables:
        print(f"\n## Simulation wall time (median of {args.repeat})\n")
        speed_table(args.repeat)


if __name__ == "__main__":
    main()
