#!/usr/bin/env python3
"""Small kernels that read a split conv's output, on one and on two threads.

    python benchmarks/handoff_kernels.py [--runs 200] [--repeats 3]

Each case is ``x -> Conv 1x1 (C -> C)`` at ``C`` channels and ``H x W``, its output read by a
``GlobalAveragePool`` and by a ``Relu`` (onnxruntime runs the conv, and with it the pool, on
NCHWc blocks). On two threads the conv is split over both cores, so each reader finds half of
its input in the other core's cache. The table gives each kernel's profiled time (onnxruntime's
profile, the low quantile of the runs; its resolution is 1 us) on 1 and 2 intra-op threads,
measured alternately ``--repeats`` times, the lowest of each. What it showed on the Intel Xeon
of 2026-12-06 (``docs/fidelity_cpu.md``, "Two threads and the integer GEMMs"): the readers run
no faster on two threads and mostly slower (16:28, idle: the pools 0.84-2.1x and the Relus
1.1-2.3x their one-thread time, a Relu of 67,200 values after the 672-channel conv 7 -> 16 us),
which hwsim does not model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (channels, height, width): the last maps of ResNet-18 and MobileNetV1, and squeeze-and-excitation
#: inputs of EfficientNet-like blocks.
CASES = ((512, 7, 7), (1024, 7, 7), (32, 56, 56), (16, 80, 80), (96, 28, 28), (144, 40, 40), (240, 20, 20), (672, 10, 10))
#: The reader op types the table reports.
READERS = ("GlobalAveragePool", "Relu")


def _model(channels: int, height: int, width: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((channels, channels, 1, 1)) * 0.1).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("GlobalAveragePool", ["c"], ["g"], name="gap"),
             helper.make_node("Relu", ["c"], ["r"], name="relu")]  # fmt: skip
    shape = [1, channels, height, width]
    g = helper.make_graph(nodes, "handoff", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for y in ("g", "r")], [w])  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), {"x": rng.standard_normal(shape).astype(np.float32)}


def reader_us(channels: int, height: int, width: int, threads: int, runs: int) -> dict[str, float]:
    """The profiled time of each reader kernel (:data:`READERS`, by the op type it ran as), us."""
    from hwsim.host.measure import profile_nodes

    model, feeds = _model(channels, height, width)
    out: dict[str, float] = {}
    for kind, ns in profile_nodes(model, feeds, threads=threads, runs=runs).values():
        if kind in READERS:
            out[kind] = out.get(kind, 0.0) + ns / 1e3
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| channels | H x W | values | " + " | ".join(f"{r} 1 thread us | {r} 2 threads us" for r in READERS) + " |")
    print("|---:|---|---:|" + "---:|---:|" * len(READERS))
    for c, h, w in CASES:
        best: dict[tuple[str, int], float] = {}
        for _ in range(args.repeats):  # interleaved
            for threads in (1, 2):
                for kind, us in reader_us(c, h, w, threads, args.runs).items():
                    best[(kind, threads)] = min(best.get((kind, threads), us), us)
        cells = " | ".join(f"{best.get((r, 1), float('nan')):.1f} | {best.get((r, 2), float('nan')):.1f}" for r in READERS)
        print(f"| {c} | {h} x {w} | {c * h * w:,} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
