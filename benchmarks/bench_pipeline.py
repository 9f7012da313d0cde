"""Speed of the pipeline (import + cost + schedule + simulate + analyze, no PNGs).

Run: ``python benchmarks/bench_pipeline.py``. ``run_graph`` with the default policy includes
the engine check of four candidate schedules. Prints a markdown table of median wall times
over repeated runs in this process (interpreter start excluded), for the bundled models on
the bundled chips and for synthetic DAGs of 1k and 10k ops. Times, not assertions: these
machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from chips import load_chip
from graph_ir import load_onnx
from graph_ir.synthetic import random_dag
from hwsim.pipeline import run_graph

ROOT = Path(__file__).resolve().parents[1]


def _median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    chip = load_chip("rk3588")
    print("| workload | chip | ops | median s (import + cost + schedule + simulate) |")
    print("|---|---|---:|---:|")
    for name in ("resnet18", "mobilenetv2", "yolov8n", "bert_base", "vit_b16"):
        path = ROOT / "examples" / "models" / f"{name}.onnx"
        n = len(load_onnx(path))
        t = _median_s(lambda path=path: run_graph(load_onnx(path), chip), args.repeat)
        print(f"| {name} | rk3588 | {n} | {t:.3f} |")
    for n in (1_000, 10_000):
        t = _median_s(lambda n=n: run_graph(random_dag(n, seed=1), chip), max(1, args.repeat // 2))
        print(f"| synthetic DAG | rk3588 | {n} | {t:.3f} |")


if __name__ == "__main__":
    main()
