#!/usr/bin/env python3
"""onnxruntime's ReorderInput (NCHW to NCHWc) per element, by tensor size and by what made its input.

    python benchmarks/reorder_rates.py [--runs 30]

Each case is a two-node model, ``x -> Sigmoid -> Conv 1x1 (C -> C)`` (``act``) or ``x -> Split ->
Conv`` (``split``, the second half a graph output), at ``C`` channels and ``H x H``; onnxruntime's
NCHWc transformer puts a ReorderInput before the conv. The table gives the profiled kernel time
(onnxruntime's profile, the low quantile of the runs after two warm-ups) and the time per element, one thread.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHANNELS = (16, 32, 64, 128)
SIDES = (20, 40, 80, 160)


def reorder_us(channels: int, side: int, source: str, runs: int) -> float | None:
    """The profiled ReorderInput time of one case (:func:`hwsim.host.measure.profile_nodes`), us;
    None when onnxruntime inserted none."""
    from onnx import TensorProto, helper, numpy_helper

    from hwsim.host.measure import profile_nodes

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((channels, channels, 1, 1)) * 0.1).astype(np.float32), "w")
    cin = channels if source == "act" else 2 * channels
    first = (helper.make_node("Sigmoid", ["x"], ["a"]) if source == "act"
             else helper.make_node("Split", ["x"], ["a", "b"], axis=1))  # fmt: skip
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if source != "act":
        outs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, None))
    graph = helper.make_graph([first, helper.make_node("Conv", ["a", "w"], ["y"])], "reorder",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, side, side])], outs, [w])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": rng.standard_normal((1, cin, side, side)).astype(np.float32)}
    times = [ns for kind, ns in profile_nodes(model, feeds, runs=max(runs, 1)).values() if kind == "ReorderInput"]
    return times[0] / 1e3 if times else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    print("| input made by | channels | side | KiB | ReorderInput us | ns per element |")
    print("|---|---:|---:|---:|---:|---:|")
    for source in ("act", "split"):
        for c in CHANNELS:
            for side in SIDES:
                t = reorder_us(c, side, source, args.runs)
                n = c * side * side
                per = "-" if t is None else f"{t * 1e3 / n:.3f}"
                print(f"| {source} | {c} | {side} | {n * 4 // 1024} | {'-' if t is None else f'{t:.1f}'} | {per} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
