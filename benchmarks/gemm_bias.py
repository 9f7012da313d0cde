#!/usr/bin/env python3
"""What a bias costs a GEMM in onnxruntime, against hwsim's rule (:func:`cost_models.cpu.gemm_bias_ns`).

    python benchmarks/gemm_bias.py --chip HOST.yaml [--runs 30] [--repeats 3]

onnxruntime's ``MatMulAddFusion`` runs ``MatMul`` + ``Add(bias)`` as one ``Gemm``, which first
writes the bias into every row of its output, then accumulates the product onto it. Each case is
``x (M x K) -> Sigmoid -> MatMul (K -> N)``, with and without the bias ``Add``, one thread; the
bias's cost is the difference of the two profiled kernel times (onnxruntime's profile, the low
quantile of the runs). The two models are measured alternately ``--repeats`` times; the table
gives the lowest of each and the spread of the differences. ``rule`` is hwsim's price on the
chip file's cache levels (a fingerprinted host's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (M, K, N): outputs from 192 KiB to 16 MiB, short and long reductions.
CASES = ((1024, 192, 48), (256, 96, 384), (1024, 48, 192), (128, 768, 768), (128, 768, 3072),
         (512, 64, 1024), (4096, 48, 192), (2048, 64, 1024), (4096, 64, 1024))  # fmt: skip


def _model(m: int, k: int, n: int, bias: bool) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((k, n)) * 0.1).astype(np.float32), "w")]
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
             helper.make_node("MatMul", ["s", "w"], ["p" if bias else "y"], name="mm")]  # fmt: skip
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b"))
        nodes.append(helper.make_node("Add", ["p", "b"], ["y"], name="add"))
    g = helper.make_graph(nodes, "bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((m, k)).astype(np.float32)}


def gemm_us(m: int, k: int, n: int, bias: bool, runs: int) -> float:
    """The profiled time of the product's kernel (``MatMul``, or the ``Gemm`` it became), us."""
    from hwsim.host.measure import profile_nodes

    model, feeds = _model(m, k, n, bias)
    return sum((ns for kind, ns in profile_nodes(model, feeds, runs=runs).values() if kind != "Sigmoid"), 0.0) / 1e3


def main() -> int:
    from chips.schema import ChipError, CpuUnit, load_chip
    from cost_models.cpu import gemm_bias_ns

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", required=True, help="a host chip file (hwsim fingerprint -o)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    try:
        chip = load_chip(args.chip)
    except (ChipError, OSError) as exc:
        ap.error(str(exc).splitlines()[0])
    unit = next((u for u in chip.units if isinstance(u, CpuUnit)), None)
    if unit is None:
        ap.error(f"{args.chip}: the chip has no CPU unit to price the bias on")
    print("| M | K | N | output KiB | MatMul us | with bias us | bias us (spread) | ns per element | rule ns per element |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m, k, n in CASES:
        plain, biased = [], []
        for _ in range(args.repeats):  # interleaved
            plain.append(gemm_us(m, k, n, False, args.runs))
            biased.append(gemm_us(m, k, n, True, args.runs))
        diffs = [b - a for a, b in zip(plain, biased, strict=True)]
        bias = min(biased) - min(plain)
        rule = gemm_bias_ns(m * n * 4, unit, chip.dram.bandwidth_gbps, weight_bytes=k * n * 4) / (m * n)
        print(f"| {m} | {k} | {n} | {m * n * 4 / 1024:.0f} | {min(plain):.1f} | {min(biased):.1f} | "
              f"{bias:.1f} ({min(diffs):.1f}-{max(diffs):.1f}) | {bias * 1e3 / (m * n):.3f} | {rule:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
