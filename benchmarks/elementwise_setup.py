#!/usr/bin/env python3
"""Small elementwise kernels (10 to 10,000 values) one after another: hwsim against onnxruntime.

    python benchmarks/elementwise_setup.py CHIP.yaml [CHIP2.yaml] [--rounds 4]

``CHIP.yaml`` is a fingerprinted host (``hwsim fingerprint -o``). Each case is a chain of eight ops
of one type over ``[1, n]`` floats (a binary one with a constant of that shape); what one op adds to
a timed run is (the chain's run - an Identity run) / 8, both the 10th percentile of 200 runs, the
best of ``--rounds`` interleaved rounds. Each chip file's prediction is taken the same way, from
``hwsim validate``'s whole-run predictions of the two models. The fingerprint's set-up probes
(``kernel_setup_ns``) are chains of 16 values; the other sizes are held out.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OP_TYPES = ("Add", "Mul", "Sigmoid", "Tanh")
SIZES = (10, 1_000, 10_000)
LAYERS = 8


def chain(op_type: str, n: int, layers: int) -> onnx.ModelProto:
    """``layers`` ``op_type`` s in a chain over ``[1, n]`` floats (0: an Identity alone)."""
    binary = op_type in ("Add", "Sub", "Mul", "Div")
    inits, nodes, x = [], [], "x"
    for i in range(layers):
        if binary:
            inits.append(numpy_helper.from_array(np.full((1, n), 0.5, np.float32), f"c{i}"))
        nodes.append(helper.make_node(op_type, [x, f"c{i}"] if binary else [x], [f"y{i}"]))
        x = f"y{i}"
    nodes = nodes or [helper.make_node("Identity", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chips", nargs="+", help="fingerprinted host chip files")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    from chips.schema import load_chip
    from hwsim.host.measure import best_run_ns
    from hwsim.host.validate import validate_model

    chips = [load_chip(c) for c in args.chips]
    cases = [(t, n) for t in OP_TYPES for n in SIZES]
    models = {(case, layers): chain(*case, layers) for case in cases for layers in (0, LAYERS)}
    best = best_run_ns({key: (m, np.full((1, key[0][1]), 0.5, np.float32)) for key, m in models.items()}, args.rounds)
    predicted: dict[tuple[tuple[str, int], int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for (case, layers), model in models.items():
            path = Path(tmp) / f"{case[0]}_{case[1]}_{layers}.onnx"
            onnx.save(model, path)
            predicted[case, layers] = [validate_model(c, path, runs=10, min_total_s=0.0).predicted_ns for c in chips]
    heads = " | ".join(f"{Path(c).name} predicted us | error" for c in args.chips)
    print(f"| op, values | measured us | {heads} |")
    print("|---|---:|" + "---:|---:|" * len(chips))
    for case in cases:
        meas = (best[case, LAYERS] - best[case, 0]) / LAYERS
        preds = [(a - b) / LAYERS for a, b in zip(predicted[case, LAYERS], predicted[case, 0], strict=True)]
        cells = " | ".join(f"{p / 1e3:.2f} | {100 * (p / meas - 1):+.0f}%" for p in preds)
        print(f"| {case[0]}, {case[1]:,} | {meas / 1e3:.2f} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
