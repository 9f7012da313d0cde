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
    from layer_chains import per_layer_ns, print_table

    models = {(case, layers): layers_model(*case, layers) for case in CASES for layers in (0, LAYERS)}
    feeds = {case: np.ones((1, case[1]), np.float32) for case in CASES}
    got = per_layer_ns(models, feeds, LAYERS, args.chips, args.rounds)
    print_table("layer (weights KiB)", {f"{t} {k} x {n} ({4 * k * n / 1024:.0f})": got[t, k, n] for t, k, n in CASES}, args.chips)
    return 0


if __name__ == "__main__":
    sys.exit(main())
