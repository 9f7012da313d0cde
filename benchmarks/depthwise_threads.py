#!/usr/bin/env python3
"""onnxruntime's NCHWc depthwise conv on one and on two threads.

    python benchmarks/depthwise_threads.py [--runs 40] [--repeats 4]

Each case is ``x -> Conv 1x1 -> depthwise Conv k x k -> Conv 1x1`` at ``C`` channels and ``H x H``
(the 1x1 convs keep the depthwise one on blocked tensors, as in ConvNeXt and MobileNets). The
table gives the depthwise kernel's profiled time (onnxruntime's profile, the low quantile of the
runs) on 1 and 2 intra-op threads, measured alternately ``--repeats`` times, the lowest of each,
and the speed-up.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (channels, side, kernel): ConvNeXt's 7x7 stages at 128 and 192 pixels, MobileNet-like 3x3 ones.
CASES = ((48, 32, 7), (96, 16, 7), (192, 8, 7), (48, 48, 7), (96, 24, 7), (32, 56, 3), (144, 28, 3))


def _model(channels: int, side: int, k: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)
             for name, shape in (("w1", (channels, channels, 1, 1)), ("wd", (channels, 1, k, k)), ("w2", (channels, channels, 1, 1)))]  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="pw1"),
             helper.make_node("Conv", ["a", "wd"], ["d"], name="dw", group=channels, pads=[k // 2] * 4),
             helper.make_node("Conv", ["d", "w2"], ["y"], name="pw2")]  # fmt: skip
    shape = [1, channels, side, side]
    g = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), {"x": rng.standard_normal(shape).astype(np.float32)}


def depthwise_us(channels: int, side: int, k: int, threads: int, runs: int) -> float | None:
    """The profiled time of the depthwise conv's kernel (named ``d_nchwc``: onnxruntime names an
    NCHWc conv after its output), us; None when onnxruntime ran no NCHWc kernel for it."""
    from hwsim.host.measure import profile_nodes

    model, feeds = _model(channels, side, k)
    times = [ns for name, (_, ns) in profile_nodes(model, feeds, threads=threads, runs=runs).items() if name == "d_nchwc"]
    return times[0] / 1e3 if times else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()
    print("| channels | side | kernel | MACs | 1 thread us | 2 threads us | speed-up |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for c, side, k in CASES:
        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(args.repeats):  # interleaved
            for threads in (1, 2):
                t = depthwise_us(c, side, k, threads, args.runs)
                if t is not None:
                    times[threads].append(t)
        if not times[1] or not times[2]:
            print(f"| {c} | {side} | {k} | - | no NCHWc kernel on this CPU | | |")
            continue
        one, two = min(times[1]), min(times[2])
        print(f"| {c} | {side} | {k} | {c * side * side * k * k:,} | {one:.1f} | {two:.1f} | {one / two:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
