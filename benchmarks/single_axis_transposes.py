#!/usr/bin/env python3
"""onnxruntime's Transposes that move one axis (NCHW <-> NHWC), measured against hwsim's price
(``docs/fidelity_cpu.md``, "A Transpose that moves one axis").

    python benchmarks/single_axis_transposes.py --chip FP.yaml [--rounds 3] [--cases u8:3x480x640,f32:32x56x56]

Each case ``DTYPE:CxHxW`` is moved both ways: ``(1, C, H, W)`` to NHWC (the axis moves inwards)
and ``(1, H, W, C)`` to NCHW (outwards). Each time is the kernel's (the profiler's, the fastest of
11 runs, 1 thread, less the profiler's own cost as ``hwsim validate`` takes it where the chip file
has the fingerprint's dispatch figures), the cases' rounds interleaved; the table gives the lowest and highest over the
rounds beside hwsim's price of the same node on ``--chip`` (a fingerprinted host with
``transpose_block_ns``, ``transpose_byte_block_ns``, ``transpose_edge_ns`` and
``transpose_outward_factor``). The fingerprint probes 32 channels of floats of 28 x 28 and 56 x 56,
128 channels of bytes of 40 x 40 and 56 x 56, and 3 channels of bytes of 112 x 112 and 224 x 224;
the default cases are other shapes. The summary counts the
cases whose input and output fit the chip's L2 apart from those that do not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op_kernels import kernel_ns, parser, price_ns  # the one-op benchmarks share it

#: (dtype, channels, height, width): camera frames, feature maps in and beyond L2, channel counts
#: off MLAS's blocks.
CASES = (("u8", 3, 224, 224), ("u8", 3, 480, 640), ("u8", 4, 224, 224), ("u8", 5, 224, 224), ("u8", 9, 112, 112),
         ("u8", 24, 80, 80), ("u8", 64, 112, 112), ("f16", 8, 112, 112), ("f32", 2, 224, 224), ("f32", 3, 224, 224),
         ("f32", 3, 480, 640), ("f32", 5, 224, 224), ("f32", 8, 56, 56), ("f32", 24, 40, 40), ("f32", 64, 28, 28),
         ("f32", 96, 56, 56), ("f32", 256, 28, 28), ("f32", 32, 224, 224), ("f32", 64, 112, 112))  # fmt: skip
DTYPES = {"u8": (onnx.TensorProto.UINT8, np.uint8), "f16": (onnx.TensorProto.FLOAT16, np.float16),
          "f32": (onnx.TensorProto.FLOAT, np.float32), "i64": (onnx.TensorProto.INT64, np.int64)}  # fmt: skip
K = TypeVar("K")


def transpose_model(dtype: str, shape: tuple[int, ...], perm: tuple[int, ...]) -> onnx.ModelProto:
    """One Transpose of a ``dtype`` tensor of ``shape`` by ``perm``."""
    from onnx import helper

    kind = DTYPES[dtype][0]
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm), name="t")], "t",
                              [helper.make_tensor_value_info("x", kind, list(shape))],
                              [helper.make_tensor_value_info("y", kind, [shape[a] for a in perm])])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def measured_ns(model: onnx.ModelProto, dtype: str) -> float:
    """The Transpose kernel's time, the fastest of 11 profiled runs, 1 thread."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return kernel_ns(model, {"x": np.random.default_rng(0).integers(0, 100, shape).astype(DTYPES[dtype][1])})


def _cases(text: str | None) -> tuple[tuple[str, int, int, int], ...]:
    if not text:
        return CASES
    out = []
    for item in text.split(","):
        dtype, dims = item.split(":")
        c, h, w = (int(v) for v in dims.split("x"))
        out.append((dtype, c, h, w))
    return tuple(out)


def timed_rounds(models: dict[K, onnx.ModelProto], dtype_of: Callable[[K], str], chip: str, rounds: int) -> dict[K, list[float]]:
    """Each model's Transpose kernel time per round, ns, the rounds interleaved, the profiler's own
    cost off as ``hwsim validate`` takes it where the chip file has the fingerprint's dispatch."""
    from hwsim.host.fingerprint import read_dispatch

    dispatch = read_dispatch(Path(chip))
    got: dict[K, list[float]] = {k: [] for k in models}
    for _ in range(rounds):
        for key, model in models.items():
            ns = measured_ns(model, dtype_of(key))
            got[key].append(dispatch.kernel_time(ns) if dispatch else ns)
    return got


def priced_cells(model: onnx.ModelProto, chip: str, times: list[float]) -> tuple[str, float]:
    """The table cells ``measured | predicted | error`` of one case (us; the lowest and highest over
    the rounds) and the error of the round closest to the price."""
    pred = price_ns(model, chip)
    err = [pred / t - 1 for t in times]
    cells = f"{min(times) / 1e3:.1f}-{max(times) / 1e3:.1f} | {pred / 1e3:.1f} | {100 * min(err):+.0f}..{100 * max(err):+.0f} % |"
    return cells, min(err, key=abs)


def _summary(label: str, errors: list[float]) -> str:
    if not errors:
        return f"{label}: none"
    return (f"{label}: {sum(abs(e) <= 0.10 for e in errors)} of {len(errors)} within 10 %, "
            f"{sum(abs(e) <= 0.25 for e in errors)} within 25 %; median of the best rounds' errors "
            f"{100 * float(np.median(np.abs(errors))):.1f} %")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--cases", help="DTYPE:CxHxW,... (u8, f16, f32, i64; default: 19 shapes the probes do not run)")
    args = ap.parse_args(argv)
    from chips import load_chip

    l2 = load_chip(args.chip).units[0].l2_kib * 1024  # type: ignore[union-attr]
    models = {}
    for dtype, c, h, w in _cases(args.cases):
        models[dtype, c, h, w, "in"] = transpose_model(dtype, (1, c, h, w), (0, 2, 3, 1))
        models[dtype, c, h, w, "out"] = transpose_model(dtype, (1, h, w, c), (0, 3, 1, 2))
    got = timed_rounds(models, lambda key: key[0], args.chip, args.rounds)
    print(f"Transpose kernel, us: lowest-highest of {args.rounds} rounds; hwsim on {args.chip}\n")
    print("| dtype | C x H x W | moved | measured | predicted | error |")
    print("|---|---|---|---:|---:|---:|")
    within, beyond = [], []
    for (dtype, c, h, w, way), times in got.items():
        cells, err = priced_cells(models[dtype, c, h, w, way], args.chip, times)
        size = 2 * c * h * w * np.dtype(DTYPES[dtype][1]).itemsize
        (within if size <= l2 else beyond).append(err)
        print(f"| {dtype} | {c} x {h} x {w} | {'NCHW -> NHWC' if way == 'in' else 'NHWC -> NCHW'} | {cells}")
    print("\n" + _summary("in and out within L2", within) + "\n" + _summary("beyond L2", beyond))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
