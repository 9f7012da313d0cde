"""RK3588 NPU: hwsim's MAC-array cycles per conv layer against RKNN's own estimate of them.

Run: ``python benchmarks/bench_rknn_layer_cycles.py [--write]``. Reads the layers in
``tests/data/rknn/layer_cycles.csv`` (conv layers of YOLOv10-S and YOLOv8-S as the RKNN toolkit
lists them, with its ``Cycles(DDR/NPU/Total)``; sources in that folder's README), builds each as
one ONNX ``Conv`` and prints, per layer, its MACs, RKNN's NPU cycles and hwsim's array cycles on
one core of ``chips/rk3588.yaml`` (:func:`cost_models.npu.array_cycles` of the atom-padded GEMM,
the chip's dataflow) with their ratio, then the ratio per kind of layer. ``--write`` also
replaces the table in ``docs/fidelity_npu.md`` between its ``rknn_cycles`` markers.
Cycle counts, not timings: the figures do not depend on the machine.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import doc_table

from chips import load_chip
from chips.schema import NpuUnit
from cost_models.npu import array_cycles, atom_padded
from graph_ir.gemm import gemm_of
from graph_ir.ir import Op, Tensor

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "rknn" / "layer_cycles.csv"
DOC = ROOT / "docs" / "fidelity_npu.md"


def conv_op(row: dict[str, str]) -> Op:
    """The row's layer as a ``Conv`` (stride 1, "same" padding, int8)."""
    cin, cout, k, group = (int(row[c]) for c in ("in_c", "out_c", "kernel", "group"))
    h, w = int(row["out_h"]), int(row["out_w"])
    x = Tensor("x", (1, cin, h, w), "int8")
    weight = Tensor("w", (cout, cin // group, k, k), "int8", is_weight=True)
    y = Tensor("y", (1, cout, h, w), "int8")
    return Op(
        row["layer"], "Conv", "conv", (x, weight), (y,), {"group": group, "pads": [k // 2] * 4}
    )


def kind(row: dict[str, str]) -> str:
    """``depthwise``, ``1x1, N in`` (N = input channels, under 128) or ``full width``."""
    if int(row["group"]) > 1:
        return "depthwise 3x3"
    if int(row["kernel"]) == 1 and int(row["in_c"]) < 128:
        return f"1x1, {row['in_c']} in"
    return "full width"


def measured() -> list[tuple[dict[str, str], int, int]]:
    """Per layer: the row, its MACs and hwsim's array cycles on one RK3588 NPU core."""
    npu = load_chip("rk3588").unit("npu")
    assert isinstance(npu, NpuUnit)
    with DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for row in rows:
        op = conv_op(row)
        gemm = gemm_of(op)
        assert gemm is not None
        cycles = array_cycles(
            atom_padded(op, gemm, npu.channel_atom), npu.mac_rows, npu.mac_cols, npu.dataflow
        )
        out.append((row, gemm.batch * gemm.m * gemm.n * gemm.k, cycles))
    return out


def table() -> str:
    lines = [
        "| source | row | layer | in, out, k, group | output | MACs (M) | RKNN NPU cycles | MACs per RKNN cycle | hwsim cycles | hwsim / RKNN |",
        "|---|---:|---|---|---|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    by_kind: dict[str, list[float]] = {}
    for row, macs, cycles in measured():
        rk = int(row["rknn_npu_cycles"])
        by_kind.setdefault(kind(row), []).append(cycles / rk)
        lines.append(
            f"| {row['source']} | {row['row']} | `{row['layer']}` | {row['in_c']}, {row['out_c']}, {row['kernel']}, "
            f"{row['group']} | {row['out_h']}x{row['out_w']} | {macs / 1e6:.2f} | {rk} | {macs / rk:.0f} | "
            f"{cycles} | {cycles / rk:.2f} |"
        )
    lines.append("")
    lines += [
        f"{name}: hwsim / RKNN median {statistics.median(r):.2f} (min {min(r):.2f}, max {max(r):.2f}, {len(r)} layers).  "
        for name, r in sorted(by_kind.items())
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    doc_table.main(__doc__, DOC, "rknn_cycles", table)
