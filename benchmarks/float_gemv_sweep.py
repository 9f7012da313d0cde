#!/usr/bin/env python3
"""One-row float Gemm/MatMul layers (batch 1, constant weights) over K x N: hwsim against onnxruntime.

    python benchmarks/float_gemv_sweep.py CHIP.yaml [CHIP2.yaml] [--rounds 5]

``CHIP.yaml`` is a fingerprinted host (``hwsim fingerprint -o``). Each case is four layers of the
same shape reading one row (``x -> 4 x Gemm``, ``transB`` and a bias as PyTorch exports a Linear
layer, or ``4 x MatMul``); what one layer adds to a timed run is (the four-layer run - an Identity
run) / 4, both the 10th percentile of 200 runs, the best of ``--rounds`` interleaved rounds (the
fingerprint's own method, :func:`hwsim.host.kernels.float_gemv_times`). Each chip file's prediction
is taken the same way, from ``hwsim validate``'s whole-run predictions of the two models. The
fingerprint's probes are the Gemms of 256 x 16 and 256 x 1024; the rest are held out.
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

#: (op type, K, N): the probes' two Gemms, then held-out shapes (MLP layers, a classifier head,
#: square ones from 64 KiB to 4 MiB, and MatMuls).
CASES = (("Gemm", 256, 16), ("Gemm", 256, 1024), ("Gemm", 784, 256), ("Gemm", 256, 256), ("Gemm", 256, 10),
         ("Gemm", 128, 128), ("Gemm", 512, 512), ("Gemm", 784, 512), ("Gemm", 1024, 1000), ("Gemm", 64, 256),
         ("MatMul", 512, 512), ("MatMul", 256, 64), ("MatMul", 768, 768))  # fmt: skip
LAYERS = 4


def layers_model(op_type: str, k: int, n: int, layers: int) -> onnx.ModelProto:
    """``layers`` one-row ``op_type`` s of ``K x N`` reading the same row (0: an Identity alone)."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    for i in range(layers):
        shape = (n, k) if op_type == "Gemm" else (k, n)
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), f"w{i}"))
        ins = ["x", f"w{i}"]
        if op_type == "Gemm":
            inits.append(numpy_helper.from_array(np.zeros(n, np.float32), f"b{i}"))
            ins.append(f"b{i}")
        nodes.append(helper.make_node(op_type, ins, [f"y{i}"], **({"transB": 1} if op_type == "Gemm" else {})))
    nodes = nodes or [helper.make_node("Identity", ["x"], ["y0"])]
    graph = helper.make_graph(nodes, "layers", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info(nd.output[0], TensorProto.FLOAT, None) for nd in nodes],
                              inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chips", nargs="+", help="fingerprinted host chip files")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from chips.schema import load_chip
    from hwsim.host.measure import best_run_ns
    from hwsim.host.validate import validate_model

    chips = [load_chip(c) for c in args.chips]
    models = {(case, layers): layers_model(*case, layers) for case in CASES for layers in (0, LAYERS)}
    best = best_run_ns({key: (m, np.ones((1, key[0][1]), np.float32)) for key, m in models.items()}, args.rounds)
    predicted: dict[tuple[tuple[str, int, int], int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for (case, layers), model in models.items():
            path = Path(tmp) / f"{case[0]}_{case[1]}_{case[2]}_{layers}.onnx"
            onnx.save(model, path)
            predicted[case, layers] = [validate_model(c, path, runs=10, min_total_s=0.0).predicted_ns for c in chips]
    heads = " | ".join(f"{Path(c).name} predicted us | error" for c in args.chips)
    print(f"| layer | weights KiB | measured us | {heads} |")
    print("|---|---:|---:|" + "---:|---:|" * len(chips))
    for case in CASES:
        meas = (best[case, LAYERS] - best[case, 0]) / LAYERS
        preds = [(a - b) / LAYERS for a, b in zip(predicted[case, LAYERS], predicted[case, 0], strict=True)]
        cells = " | ".join(f"{p / 1e3:.2f} | {100 * (p / meas - 1):+.1f}%" for p in preds)
        print(f"| {case[0]} {case[1]} x {case[2]} | {4 * case[1] * case[2] / 1024:.0f} | {meas / 1e3:.2f} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
