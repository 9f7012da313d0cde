"""Grouped convs of 12 to 152 output channels a group, alone: measured against the rule that only
the rows outside MLAS's full 12-row passes pay the few-row FMA cost (``cost_models.cpu.
SGEMM_FULL_PASS_ROWS``), and against every row paying it (the rule before, fit on 2-8 channels a
group on the CI Xeon).

``python benchmarks/grouped_conv_passes.py --chip FP.yaml`` (a fingerprinted host chip file):
one line per shape, 1 thread, each a ``Conv`` + ``Relu`` model validated once (30 runs). None of
these shapes had been run when the rule was written (it was found on ShuffleNet v1).
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

#: (output channels a group, groups, kernel side, plane side); none a whole number of NCHWc blocks
#: a group but 48-channel ones, so each runs on onnxruntime's plain grouped kernel.
SHAPES = ((24, 8, 1, 28), (24, 8, 3, 28), (56, 4, 3, 14), (56, 8, 1, 28), (20, 8, 3, 28), (100, 4, 1, 14),
          (40, 6, 3, 28), (12, 16, 3, 28), (28, 3, 1, 56), (152, 2, 3, 14))  # fmt: skip


def grouped_conv(per_group: int, groups: int, k: int, side: int) -> onnx.ModelProto:
    """x -> a grouped ``k`` x ``k`` conv of ``per_group`` channels in and out per group -> Relu."""
    c = per_group * groups
    w = (np.random.default_rng(0).standard_normal((c, per_group, k, k)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=groups, pads=[k // 2] * 4, name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]  # fmt: skip
    graph = helper.make_graph(nodes, "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, side, side])],
                              [numpy_helper.from_array(w, "w")])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def main() -> int:
    from chips import load_chip
    from cost_models import cpu
    from hwsim.host.fingerprint import read_dispatch, reference_gflops
    from hwsim.host.validate import repredict, validate_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", type=Path, required=True, help="a fingerprinted host chip file")
    args = ap.parse_args()
    chip, ref, disp = load_chip(args.chip), reference_gflops(args.chip, 1), read_dispatch(args.chip)
    rows = cpu.SGEMM_FULL_PASS_ROWS
    print("| channels a group | groups | kernel | plane | measured us | predicted us | error | every row paying | error |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for m, g, k, side in SHAPES:
            path = Path(tmp) / f"g{m}_{g}_{k}_{side}.onnx"
            onnx.save(grouped_conv(m, g, k, side), str(path))
            v = validate_model(chip, path, 1, "all", 30, reference=ref, dispatch=disp)
            cpu.SGEMM_FULL_PASS_ROWS = 10**9  # no full pass: every row pays
            before = repredict(v, chip, path).predicted_ns
            cpu.SGEMM_FULL_PASS_ROWS = rows
            meas = v.measured_ns
            print(f"| {m} | {g} | {k}x{k} | {side}x{side} | {meas / 1e3:.1f} | {v.predicted_ns / 1e3:.1f} | "
                  f"{(v.predicted_ns / meas - 1) * 100:+.1f} % | {before / 1e3:.1f} | {(before / meas - 1) * 100:+.1f} % |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
