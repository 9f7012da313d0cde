"""Grouped convs alone, priced by the law the fingerprint measures (``grouped_run_ns``,
``grouped_element_ns``, ``grouped_small_m_ns``: :func:`cost_models.cpu.measured_grouped_ns`) and
by the CI Xeon's law per row of B (the same chip without those fields).

``python benchmarks/grouped_conv_law.py --chip FP.yaml [--rounds 3]`` (a fingerprinted host chip
file): one line per conv, 1 thread, each a one-``Conv`` model validated ``--rounds`` times (15 runs
each, the rounds merged as ``bench_cpu_fidelity.py`` merges them), then the counts within 10 %
for the convs on the plain kernel, those of stride 1 and the strided ones; the ones whose groups
are whole NCHWc blocks run blocked and are listed apart. Four of the shapes are the fingerprint's
probes (``hwsim.host.grouped_probe.GROUPED_PROBES``); the rest were never fit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (input channels a group, groups, input side, stride, kernel side); output channels as many as input.
SHAPES = ((2, 32, 28, 1, 3), (4, 32, 28, 1, 3), (8, 32, 28, 1, 3), (16, 32, 28, 1, 3), (32, 16, 28, 1, 3),
          (4, 16, 56, 1, 3), (4, 64, 14, 1, 3), (4, 128, 7, 1, 3), (8, 64, 14, 1, 3), (8, 16, 56, 1, 3),
          (2, 64, 56, 1, 3), (2, 128, 14, 1, 3), (16, 16, 14, 1, 3), (32, 8, 56, 1, 3), (64, 8, 14, 1, 3),
          (4, 32, 28, 2, 3), (8, 32, 28, 2, 3), (4, 64, 56, 2, 3), (16, 16, 56, 2, 3), (2, 64, 14, 2, 3),
          (4, 32, 28, 1, 5), (8, 16, 28, 1, 5), (4, 32, 28, 2, 1), (8, 32, 14, 2, 1), (4, 32, 100, 1, 3),
          (4, 32, 9, 1, 3), (24, 8, 28, 1, 3), (12, 16, 28, 1, 3), (8, 8, 112, 1, 3), (6, 32, 20, 1, 3),
          (4, 8, 28, 1, 3), (16, 4, 28, 1, 3), (48, 4, 14, 1, 3), (8, 32, 30, 1, 3), (8, 32, 31, 1, 3),
          (8, 32, 29, 1, 3), (8, 32, 32, 1, 3), (8, 32, 33, 1, 3), (4, 32, 31, 1, 3), (4, 32, 27, 1, 3),
          (12, 32, 14, 1, 3), (20, 16, 14, 1, 3), (4, 64, 112, 2, 3), (2, 32, 7, 1, 3), (8, 64, 7, 1, 3))  # fmt: skip
#: The chip fields whose law is checked; without them a chip prices by the row law.
FIELDS = ("grouped_run_ns", "grouped_element_ns", "grouped_small_m_ns")


def grouped_conv(per_group: int, groups: int, side: int, stride: int, k: int) -> onnx.ModelProto:
    """x (1 x C x side x side) -> a grouped ``k`` x ``k`` conv of ``per_group`` channels in and out a group."""
    c = per_group * groups
    w = (np.random.default_rng(0).standard_normal((c, per_group, k, k)) * 0.1).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=groups, pads=[k // 2] * 4, strides=[stride] * 2, name="conv")
    graph = helper.make_graph([node], "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def summary(label: str, errors: list[tuple[float, float]]) -> str:
    """``label``: how many of the (before, after) errors lie within 10 %, and their median."""
    if not errors:
        return f"{label}: none"
    parts = []
    for name, es in (("row law", [b for b, _ in errors]), ("measured law", [a for _, a in errors])):
        within = sum(abs(e) <= 0.1 for e in es)
        parts.append(f"{name} {within} of {len(es)}, median {statistics.median(abs(e) for e in es) * 100:.1f} %")
    return f"{label}: " + "; ".join(parts)


def main() -> int:
    from chips import chip_from_dict, load_chip
    from graph_ir.onnx_import import load_onnx
    from hwsim.host.fingerprint import read_dispatch, reference_gflops
    from hwsim.host.measure import nchwc_block
    from hwsim.host.validate import grouped_conv_kernels, merge_rounds, repredict, validate_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", type=Path, required=True, help="a fingerprinted host chip file with the grouped fields")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    chip, ref, disp = load_chip(args.chip), reference_gflops(args.chip, 1), read_dispatch(args.chip)
    data = chip.model_dump()
    data["units"] = [{k: v for k, v in u.items() if k not in FIELDS} for u in data["units"]]
    row_law = chip_from_dict(data)
    print("| channels a group | groups | input | stride | kernel | onnxruntime's kernel | measured us | row law | measured law |")
    print("|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    groups_of: dict[str, list[tuple[float, float]]] = {"plain, stride 1": [], "plain, strided": [], "blocked": []}
    with tempfile.TemporaryDirectory() as tmp:
        for per, g, side, stride, k in SHAPES:
            path = Path(tmp) / f"g{per}_{g}_{side}_s{stride}_k{k}.onnx"
            onnx.save(grouped_conv(per, g, side, stride, k), str(path))
            v = merge_rounds([validate_model(chip, path, 1, "all", 15, reference=ref, dispatch=disp) for _ in range(args.rounds)])
            after, before = repredict(v, chip, path).error, repredict(v, row_law, path).error
            plain = bool(grouped_conv_kernels(load_onnx(path), nchwc_block()))
            key = "blocked" if not plain else "plain, stride 1" if stride == 1 else "plain, strided"
            groups_of[key].append((before, after))
            print(f"| {per} | {g} | {side}x{side} | {stride} | {k}x{k} | {'plain' if plain else 'NCHWc'} | {v.measured_ns / 1e3:.1f} "
                  f"| {before * 100:+.1f} % | {after * 100:+.1f} % |", flush=True)  # fmt: skip
    print()
    for label, errors in groups_of.items():
        print(summary(label, errors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
