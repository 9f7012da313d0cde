#!/usr/bin/env python3
"""onnxruntime's ReorderInput (NCHW to NCHWc) per element, by tensor size and by what made its input.

    python benchmarks/reorder_rates.py [--runs 30]

Each case is a two-node model, ``x -> Sigmoid -> Conv 1x1 (C -> C)`` (``act``) or ``x -> Split ->
Conv`` (``split``, the second half a graph output), at ``C`` channels and ``H x H``; onnxruntime's
NCHWc transformer puts a ReorderInput before the conv. The table gives the profiled kernel time
(the 25th percentile of the runs after five warm-ups) and the time per element, one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHANNELS = (16, 32, 64, 128)
SIDES = (20, 40, 80, 160)


def reorder_us(channels: int, side: int, source: str, runs: int, folder: str) -> float | None:
    """The profiled ReorderInput time of one case, us (None when onnxruntime inserted none)."""
    from onnx import TensorProto, helper, numpy_helper

    from hwsim.host.measure import make_session

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
    sess = make_session(model, profile_prefix=os.path.join(folder, "reorder"))
    feeds = {"x": rng.standard_normal((1, cin, side, side)).astype(np.float32)}
    for _ in range(runs + 5):
        sess.run(None, feeds)
    path = sess.end_profiling()
    events = json.loads(Path(path).read_text(encoding="utf-8"))
    os.remove(path)
    times = [e["dur"] for e in events if e.get("cat") == "Node" and e.get("args", {}).get("op_name") == "ReorderInput"]
    return float(np.percentile(times[5:], 25)) if len(times) > 5 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    print("| input made by | channels | side | KiB | ReorderInput us | ns per element |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for source in ("act", "split"):
            for c in CHANNELS:
                for side in SIDES:
                    t = reorder_us(c, side, source, args.runs, folder)
                    n = c * side * side
                    per = "-" if t is None else f"{t * 1e3 / n:.3f}"
                    print(f"| {source} | {c} | {side} | {n * 4 // 1024} | {t if t is not None else '-'} | {per} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
