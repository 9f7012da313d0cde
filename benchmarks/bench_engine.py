"""Speed of the engine alone: :func:`hwsim.sim.engine.simulate` on fixed schedules.

Run: ``python benchmarks/bench_engine.py [--repeat 5]``. The schedules come from ``run_graph``
once per workload; only ``simulate`` is timed, in CPU seconds of this process (less disturbed
than wall time on a shared machine), the minimum over repeats. Prints a markdown table. Times,
not assertions.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from chips import load_chip
from graph_ir import load_onnx
from graph_ir.synthetic import random_dag
from hwsim.pipeline import run_graph
from hwsim.sim.engine import EngineOptions, simulate

ROOT = Path(__file__).resolve().parents[1]
#: (frames, in_flight, frame order) of each timed run.
RUNS = ((1, None, "interleaved"), (8, None, "interleaved"), (8, 2, "interleaved"), (8, None, "frame-major"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    chip = load_chip("rk3588")
    workloads = [(name, load_onnx(ROOT / "examples" / "models" / f"{name}.onnx")) for name in ("resnet18", "yolov8n", "bert_base")]
    workloads.append(("synthetic DAG 10k", random_dag(10_000, seed=1)))
    print("| workload | ops | frames | in_flight | frame order | simulate ms (CPU, min) |")
    print("|---|---:|---:|---:|---|---:|")
    for name, graph in workloads:
        result = run_graph(graph, chip)
        for frames, in_flight, order in RUNS if len(graph) < 5_000 else RUNS[:1]:
            options = EngineOptions(frame_order=order)
            times = []
            for _ in range(args.repeat):
                t0 = time.process_time()
                simulate(graph, chip, result.table, result.schedule, options, frames, in_flight)
                times.append(time.process_time() - t0)
            print(f"| {name} | {len(graph)} | {frames} | {in_flight or '-'} | {order} | {1000 * min(times):.1f} |")


if __name__ == "__main__":
    main()
