#!/usr/bin/env python3
"""Microbenchmarks of single onnxruntime CPU kernels: the physics behind ``cost_models/cpu.py``'s
recurrent and STFT rules and the ``--threads 2`` split.

    python benchmarks/micro_cpu_kernels.py rnn       # LSTM/GRU time per step vs hidden size
    python benchmarks/micro_cpu_kernels.py stft      # STFT time vs frame length
    python benchmarks/micro_cpu_kernels.py threads   # 1 vs 2 threads per kernel type
    python benchmarks/micro_cpu_kernels.py retention --threads 1 --rounds 8   # L2 kept by a cyclic stream
    python benchmarks/micro_cpu_kernels.py depthwise --threads 1   # NCHWc depthwise ns per output, k and fused activation
    python benchmarks/micro_cpu_kernels.py conv1d --threads 1      # 1-D convs (im2col + SGEMM) against their FMAs
    python benchmarks/micro_cpu_kernels.py conv3d --threads 1      # 3x3x3 convs (vol2col + SGEMM): per element and per run
    python benchmarks/micro_cpu_kernels.py edges --threads 1       # depthwise border outputs: ns per output vs edge share
    python benchmarks/micro_cpu_kernels.py grouped --threads 1 --rounds 4   # grouped 3x3 convs: one im2col + SGEMM per group
    python benchmarks/micro_cpu_kernels.py dwplain --threads 1 --rounds 4   # depthwise convs on the plain kernel (1-D; 2-D of c % 4 != 0)
    python benchmarks/micro_cpu_kernels.py gap --threads 1 --rounds 5       # GlobalAveragePool per node (profiled), by producer
    python benchmarks/micro_cpu_kernels.py einsum --threads 1 --rounds 4    # Einsum equations against their MACs
    python benchmarks/micro_cpu_kernels.py gap --save DIR                   # ... or write the models for `hwsim validate`

Every case is a one-node model; threads 1 and 2 and the cases are interleaved over ``--rounds``
rounds, and a case's figure is its fastest run, best round (on a shared machine other
processes only add time; ``--stat p25`` for the 25th percentile).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cost_models.cpu import RECURRENT_GATE_NS, RECURRENT_STEP_NS, cyclic_capacity_bytes
from hwsim.host.measure import make_session, profile_nodes, time_session

Case = tuple[str, onnx.ModelProto, dict[str, np.ndarray]]


def _model(node: onnx.NodeProto, inputs: dict[str, np.ndarray], inits: dict[str, np.ndarray], out_rank: int) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in inputs.items()]
    out = helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, [None] * out_rank)
    g = helper.make_graph([node], "micro", ins, [out], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def rnn_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for op, gates in (("LSTM", 4), ("GRU", 3)):
        for hidden in (32, 64, 128, 256, 384, 512, 768):
            for seq in (4, 64):
                for dirs in (1, 2):
                    x = rng.standard_normal((seq, 1, hidden)).astype(np.float32)
                    w = {n: (rng.standard_normal((dirs, gates * hidden, hidden)) * 0.1).astype(np.float32) for n in "WR"}
                    attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
                    node = helper.make_node(op, ["x", "W", "R"], ["y"], **attrs)
                    cases.append((f"{op} h{hidden} s{seq} d{dirs}", _model(node, {"x": x}, w, 4), {"x": x}))
    return cases


def stft_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for frame in (64, 100, 128, 200, 255, 256, 320, 400, 480, 512, 1000, 1024):
        sig = rng.standard_normal((1, 16000, 1)).astype(np.float32)
        inits = {"hop": np.array(160, np.int64), "win": np.hanning(frame).astype(np.float32), "flen": np.array(frame, np.int64)}
        node = helper.make_node("STFT", ["sig", "hop", "win", "flen"], ["y"], onesided=1)
        m = _model(node, {"sig": sig}, {}, 4)
        m.graph.initializer.extend([numpy_helper.from_array(v, k) for k, v in inits.items()])
        cases.append((f"STFT n{frame} frames{(16000 - frame) // 160 + 1}", m, {"sig": sig}))
    return cases


def thread_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for n in (256, 4096, 65536, 1 << 20):
        a = rng.standard_normal((1, n)).astype(np.float32)
        for op in ("Add", "Softmax", "Sigmoid"):
            ins = ["a", "a"] if op == "Add" else ["a"]
            cases.append((f"{op} {n}", _model(helper.make_node(op, ins, ["y"]), {"a": a}, {}, 2), {"a": a}))
    for m_, k, n in ((1, 768, 768), (16, 256, 256), (128, 768, 768), (128, 768, 3072), (512, 512, 512)):
        a = rng.standard_normal((m_, k)).astype(np.float32)
        w = {"B": rng.standard_normal((k, n)).astype(np.float32)}
        cases.append((f"MatMul {m_}x{k}x{n}", _model(helper.make_node("MatMul", ["a", "B"], ["y"]), {"a": a}, w, 2), {"a": a}))
    for c, hw in ((16, 56), (64, 56), (256, 14)):
        x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
        w = {"W": (rng.standard_normal((c, c, 3, 3)) * 0.1).astype(np.float32)}
        node = helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])
        cases.append((f"Conv {c}x{hw}x{hw} 3x3", _model(node, {"x": x}, w, 4), {"x": x}))
    return [*cases, *rnn_cases()[::4], *stft_cases()[::3]]


#: Hidden sizes of the retention suite's one-feature LSTM steps: ``R`` (16 hidden² bytes) from 1 MiB
#: (all in L2: the near rate) to 16 MiB; 704 (7.6 MiB, four times a 1.9 MiB L2) is the fingerprint's
#: far point (``gemv_far_gbps``). No held-out shape (hidden 512) among them.
RETENTION_HIDDEN = (256, 352, 384, 416, 448, 480, 496, 528, 576, 640, 704, 1024)
RETENTION_STEPS = (8, 40)
RETENTION_NEAR, RETENTION_FAR = 256, 704


def retention_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for hidden in RETENTION_HIDDEN:
        w = {"W": (rng.standard_normal((1, 4 * hidden, 1)) * 0.1).astype(np.float32),
             "R": (rng.standard_normal((1, 4 * hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)}  # fmt: skip
        for seq in RETENTION_STEPS:
            x = np.ones((seq, 1, 1), np.float32)
            node = helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=hidden)
            cases.append((f"LSTM h{hidden} s{seq}", _model(node, {"x": x}, w, 4), {"x": x}))
    return cases


def retention_rows(step_ns: dict[int, float], threads: int = 1) -> list[tuple[int, float, float, float]]:
    """Per hidden size of :data:`RETENTION_HIDDEN`: (hidden, ``R`` bytes per core, GB/s, bytes the
    core's L2 kept of a pass), from each size's time per step (``step_ns``, the two sequence
    lengths' difference) less the step's fixed and gate costs (``cost_models.cpu``'s constants):
    the kept bytes ``h`` solve ``t = h / near + (S - h) / far`` with the near rate from
    :data:`RETENTION_NEAR` (all in L2) and the far rate from :data:`RETENTION_FAR`
    (``cost_models.cpu.cyclic_capacity_bytes``, clipped to ``[0, S]``). On ``threads`` cores each
    streams ``1 / threads`` of ``R``.

    >>> fixed = lambda h: RECURRENT_STEP_NS + RECURRENT_GATE_NS["LSTM"] * 4 * h
    >>> ns = {h: 16 * h * h / gbps + fixed(h) for h, gbps in ((256, 100.0), (480, 40.0), (704, 25.0))}
    >>> [(h, round(s / 2**20, 2), round(g), round(k / 2**20, 2)) for h, s, g, k in retention_rows(ns)][1]  # half kept
    (480, 3.52, 40, 1.76)
    """
    def stream_ns(hidden: int) -> float:
        return step_ns[hidden] - RECURRENT_STEP_NS - RECURRENT_GATE_NS["LSTM"] * 4 * hidden

    def nbytes(hidden: int) -> float:
        return 16.0 * hidden * hidden / threads

    near = nbytes(RETENTION_NEAR) / stream_ns(RETENTION_NEAR)
    far = nbytes(RETENTION_FAR) / stream_ns(RETENTION_FAR)
    rows = []
    for hidden in sorted(step_ns):
        s, gbps = nbytes(hidden), nbytes(hidden) / stream_ns(hidden)
        cap = cyclic_capacity_bytes(s, gbps, near, far)
        rows.append((hidden, s, gbps, s if cap is None else min(s, 2 * cap - s)))
    return rows


#: The depthwise suite's chains: (channels, side, k) and the two chain lengths whose difference
#: cancels the reorders in and out of the NCHWc layout.
DEPTHWISE_SHAPES = ((32, 56, 3), (128, 28, 3), (512, 14, 3), (96, 32, 5), (48, 32, 7), (192, 8, 7))
DEPTHWISE_CHAIN = (2, 8)


def _depthwise_chain(c: int, hw: int, k: int, n: int, act: str) -> onnx.ModelProto:
    """``n`` chained ``k x k`` depthwise convs over ``c`` channels, each followed by ``act``."""
    rng = np.random.default_rng(0)
    inits = {"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
    nodes, x = [], "x"
    for i in range(n):
        inits[f"w{i}"] = (rng.random((c, 1, k, k)) * 0.1).astype(np.float32)
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"y{i}"], group=c, pads=[(k - 1) // 2] * 4))
        x = f"y{i}"
        if act != "none":
            nodes.append(helper.make_node(act, [x, "lo", "hi"] if act == "Clip" else [x], [f"a{i}"]))
            x = f"a{i}"
    g = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, n_) for n_, v in inits.items()])  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def depthwise_cases() -> list[Case]:
    cases = []
    for c, hw, k in DEPTHWISE_SHAPES:
        x = np.random.default_rng(0).random((1, c, hw, hw)).astype(np.float32)
        for act in ("none", "Relu", "Clip"):
            for n in DEPTHWISE_CHAIN:
                cases.append((f"dw c{c} {hw}x{hw} k{k} {act} x{n}", _depthwise_chain(c, hw, k, n, act), {"x": x}))
    return cases


def depthwise_rows(best: dict[str, float]) -> list[tuple[str, float]]:
    """Per depthwise shape and activation: ns per output of one conv, from the two chain lengths'
    difference (``best``: case name -> ns)."""
    lo, hi = DEPTHWISE_CHAIN
    rows = []
    for c, hw, k in DEPTHWISE_SHAPES:
        for act in ("none", "Relu", "Clip"):
            key = f"dw c{c} {hw}x{hw} k{k} {act}"
            rows.append((key, (best[f"{key} x{hi}"] - best[f"{key} x{lo}"]) / (hi - lo) / (c * hw * hw)))
    return rows


#: The depthwise edge suite: k x k depthwise convs (stride 1, same padding) over planes from 64 to
#: 8 wide at the same output count: the share of outputs whose window crosses the left or right
#: border (MLAS's ``OutputCountLeftPad``/``RightPad``, one output at a time) grows 8x.
EDGE_SHAPES = tuple((65536 // (hw * hw), hw, k) for k in (3, 7) for hw in (64, 32, 16, 8))


def depthwise_edge_cases() -> list[Case]:
    cases = []
    for c, hw, k in EDGE_SHAPES:
        x = np.random.default_rng(0).random((1, c, hw, hw)).astype(np.float32)
        for n in DEPTHWISE_CHAIN:
            cases.append((f"dw c{c} {hw}x{hw} k{k} none x{n}", _depthwise_chain(c, hw, k, n, "none"), {"x": x}))
    return cases


def edge_share(side: int, k: int) -> float:
    """Share of a ``side``-wide plane's outputs (stride 1, same padding) on the left/right border
    path: ``k - 1`` per row, at most all.

    >>> edge_share(32, 7), edge_share(4, 7)
    (0.1875, 1.0)
    """
    return min(1.0, (k - 1) / side)


def edge_rows(best: dict[str, float]) -> list[tuple[int, int, float, float]]:
    """Per edge shape: ``(k, side, edge share, ns per output)`` from the chains' difference."""
    lo, hi = DEPTHWISE_CHAIN
    rows = []
    for c, hw, k in EDGE_SHAPES:
        key = f"dw c{c} {hw}x{hw} k{k} none"
        rows.append((k, hw, edge_share(hw, k), (best[f"{key} x{hi}"] - best[f"{key} x{lo}"]) / (hi - lo) / (c * hw * hw)))
    return rows


def edge_fit(rows: Sequence[tuple[int, int, float, float]], k: int) -> tuple[float, float]:
    """Least squares ``ns per output = interior + extra x edge share`` over ``rows`` of kernel ``k``:
    ``(interior ns, extra ns per edge output)``.

    >>> edge_fit([(7, 32, 0.25, 1.0), (7, 16, 0.5, 1.5)], 7)
    (0.5, 2.0)
    """
    pts = [(f, ns) for kk, _hw, f, ns in rows if kk == k]
    fx, fy = sum(f for f, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    slope = sum((f - fx) * (y - fy) for f, y in pts) / sum((f - fx) ** 2 for f, _ in pts)
    return fy - slope * fx, slope


#: The conv1d suite: (input channels, output channels, k, length); the TCN's shapes.
CONV1D_SHAPES = ((64, 64, 3, 4000), (64, 64, 1, 4000), (1, 64, 7, 4000), (32, 32, 3, 2000), (128, 128, 3, 1000))


def conv1d_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for cin, cout, k, length in CONV1D_SHAPES:
        x = rng.standard_normal((1, cin, length)).astype(np.float32)
        w = {"W": (rng.standard_normal((cout, cin, k)) * 0.1).astype(np.float32)}
        node = helper.make_node("Conv", ["x", "W"], ["y"], pads=[(k - 1) // 2] * 2)
        cases.append((f"conv1d {cin}->{cout} k{k} L{length}", _model(node, {"x": x}, w, 3), {"x": x}))
    return cases


#: The grouped suite: (channels, groups, plane, stride), 3x3 convs of 2-8 channels per group (ResNeXt's);
#: the fit behind ``cost_models.cpu.GROUPED_CONV_ROW_NS``, ``STRIDED_IM2COL_NS`` and ``SMALL_M_FMA_NS``.
GROUPED_SHAPES = ((128, 32, 28, 1), (256, 32, 14, 1), (256, 32, 28, 2), (128, 32, 56, 1), (64, 32, 56, 1),
                  (128, 16, 28, 1), (128, 64, 28, 1), (256, 32, 7, 1), (96, 32, 28, 1), (128, 32, 28, 2),
                  (256, 64, 14, 1), (128, 32, 56, 2), (64, 16, 28, 1), (256, 32, 14, 2))  # fmt: skip


def grouped_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for c, g, hw, s in GROUPED_SHAPES:
        x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
        w = {"W": (rng.standard_normal((c, c // g, 3, 3)) * 0.1).astype(np.float32)}
        node = helper.make_node("Conv", ["x", "W"], ["y"], pads=[1] * 4, strides=[s, s], group=g)
        cases.append((f"grouped c{c} g{g} {hw}x{hw} s{s}", _model(node, {"x": x}, w, 4), {"x": x}))
    return cases


#: The conv3d suite: (input channels, output channels, (frames, height, width)) of 3x3x3 convs
#: (vol2col + SGEMM); the first five keep B (channels x taps x outputs) at 1.5 M elements and
#: vary the width, the runs the vol2col copies.
CONV3D_SHAPES = ((24, 48, (8, 48, 6)), (24, 48, (8, 24, 12)), (24, 48, (8, 12, 24)), (24, 48, (8, 6, 48)),
                 (24, 48, (8, 4, 72)), (48, 96, (8, 12, 12)), (3, 24, (16, 48, 48)))  # fmt: skip
#: The square MatMul the conv3d suite takes its FMA rate from (MLAS's SGEMM, B constant).
CONV3D_PEAK_N = 768


def conv3d_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((CONV3D_PEAK_N, CONV3D_PEAK_N)).astype(np.float32)
    node = helper.make_node("MatMul", ["x", "W"], ["y"])
    cases = [(f"matmul {CONV3D_PEAK_N}", _model(node, {"x": a}, {"W": a.copy()}, 2), {"x": a})]
    for cin, cout, dhw in CONV3D_SHAPES:
        x = rng.standard_normal((1, cin, *dhw)).astype(np.float32)
        w = {"W": (rng.standard_normal((cout, cin, 3, 3, 3)) * 0.1).astype(np.float32)}
        node = helper.make_node("Conv", ["x", "W"], ["y"], pads=[1] * 6)
        cases.append((f"conv3d {cin}->{cout} {'x'.join(map(str, dhw))}", _model(node, {"x": x}, w, 5), {"x": x}))
    return cases


def conv3d_rows(best: Mapping[str, float]) -> list[tuple[str, int, float]]:
    """Per conv3d case: (name, output width, ns per element of B beyond its FMAs at the MatMul's rate)."""
    rate = 2 * CONV3D_PEAK_N**3 / best[f"matmul {CONV3D_PEAK_N}"]  # FLOP per ns
    rows = []
    for cin, cout, dhw in CONV3D_SHAPES:
        name = f"conv3d {cin}->{cout} {'x'.join(map(str, dhw))}"
        b_elements = cin * 27 * math.prod(dhw)
        rows.append((name, dhw[2], (best[name] - 2 * cout * b_elements / rate) / b_elements))
    return rows


#: The plain-kernel depthwise suite: (channels, length or side, k, 2-D), depthwise convs onnxruntime
#: runs on its plain kernel (1-D ones, and 2-D ones whose channels are no multiple of 4): one
#: im2col + one-row product per channel.
DEPTHWISE_PLAIN_SHAPES = ((144, 128, 31, False), (144, 256, 31, False), (256, 512, 31, False), (512, 128, 15, False),
                          (256, 1000, 3, False), (768, 256, 4, False), (64, 2000, 9, False), (1024, 64, 4, False),
                          (30, 28, 3, True), (6, 56, 3, True), (90, 14, 5, True), (18, 112, 3, True))  # fmt: skip


def depthwise_plain_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for c, n, k, two_d in DEPTHWISE_PLAIN_SHAPES:
        shape, kernel = ((1, c, n, n), (c, 1, k, k)) if two_d else ((1, c, n), (c, 1, k))
        x = rng.standard_normal(shape).astype(np.float32)
        w = {"W": (rng.standard_normal(kernel) * 0.1).astype(np.float32)}
        node = helper.make_node("Conv", ["x", "W"], ["y"], pads=[k // 2] * (4 if two_d else 2), group=c)
        cases.append((f"dwplain c{c} n{n} k{k} {'2d' if two_d else '1d'}", _model(node, {"x": x}, w, len(shape)), {"x": x}))
    return cases


#: Einsum cases: (equation, operand shapes, second operand a weight). The last two were left out
#: of the development of ``cost_models.cpu_layout.einsum_moves``.
EINSUM_CASES = (("bqhd,bkhd->bhqk", ((1, 128, 4, 64), (1, 128, 4, 64)), False),
                ("bhqk,bkhd->bqhd", ((1, 4, 128, 128), (1, 128, 4, 64)), False),
                ("bhqd,bhkd->bhqk", ((1, 8, 128, 64), (1, 8, 128, 64)), False),
                ("bhqk,bhkd->bhqd", ((1, 8, 128, 128), (1, 8, 128, 64)), False),
                ("ij,jk->ik", ((256, 256), (256, 256)), False),
                ("bij,bjk->bik", ((8, 128, 64), (8, 64, 128)), False),
                ("bsd,de->bse", ((1, 256, 256), (256, 512)), True),
                ("bsd,ed->bse", ((1, 256, 256), (512, 256)), True),
                ("bnd,bmd->bnm", ((4, 196, 32), (4, 196, 32)), False),
                ("bqhd,bkhd->bhqk", ((1, 256, 8, 32), (1, 256, 8, 32)), False),
                ("bhqk,bkhd->bqhd", ((1, 8, 256, 256), (1, 256, 8, 32)), False))  # fmt: skip


def einsum_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = []
    for eq, (sa, sb), weight in EINSUM_CASES:
        a, b = (rng.standard_normal(s).astype(np.float32) for s in (sa, sb))
        node = helper.make_node("Einsum", ["a", "b"], ["y"], equation=eq)
        feeds, inits = ({"a": a}, {"b": b}) if weight else ({"a": a, "b": b}, {})
        shapes = "x".join(map(str, sa)) + "_" + "x".join(map(str, sb))
        rank = len(eq.split("->")[1])
        cases.append((f"einsum {eq.replace(',', '_').replace('->', '_to_')} {shapes}", _model(node, feeds, inits, rank), feeds))
    return cases


#: The GAP suite: (channels, side, producer's input channels, producer's kernel), 0 input channels
#: for a GAP on the graph input (onnxruntime puts a ReorderInput before it). The producer is a conv
#: with a fused Relu whose weights (``cin x c x k²`` floats) stream through the L2 while it writes
#: the GAP's input; a 1x1 conv follows the GAP (squeeze-and-excitation), or a Flatten
#: (:data:`GAP_FLATTEN`, a classifier head). The shapes in :data:`GAP_HELD_OUT` were left out of
#: the fit of ``cost_models.cpu``'s GAP law.
GAP_SHAPES = ((16, 56, 0, 1), (64, 56, 0, 1), (256, 28, 0, 1), (512, 14, 0, 1), (1024, 7, 0, 1), (1280, 7, 0, 1),
              (256, 1, 0, 1), (1000, 13, 0, 1), (30, 28, 0, 1),
              (16, 56, 16, 1), (64, 40, 64, 1), (96, 20, 96, 1), (256, 14, 256, 1), (512, 7, 512, 1), (640, 10, 640, 1),
              (1280, 7, 320, 1), (1024, 7, 64, 1), (1024, 7, 1024, 1), (2048, 7, 512, 1), (1280, 7, 1280, 1),
              (512, 7, 512, 3), (256, 14, 256, 3), (1000, 13, 512, 1))  # fmt: skip
GAP_FLATTEN = ((512, 7, 512, 3), (1024, 7, 1024, 1), (1280, 7, 320, 1), (1000, 13, 512, 1), (512, 14, 0, 1))
GAP_HELD_OUT = ((96, 20, 96, 1), (1280, 7, 1280, 1), (256, 14, 256, 3), (1280, 7, 0, 1))


def gap_name(c: int, hw: int, cin: int, k: int) -> str:
    """A GAP case's name: ``gap c512 7x7 after conv512 k3`` (``on input`` without a producer)."""
    return f"gap c{c} {hw}x{hw} " + (f"after conv{cin} k{k}" if cin else "on input") + (
        " flatten" if (c, hw, cin, k) in GAP_FLATTEN else "")


def gap_model(c: int, hw: int, cin: int, k: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One GAP case of :data:`GAP_SHAPES`: the model and its feeds."""
    rng = np.random.default_rng(0)
    inits: dict[str, np.ndarray] = {}
    nodes, x = [], "x"
    if cin:
        inits["W"] = (rng.standard_normal((c, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        nodes += [helper.make_node("Conv", ["x", "W"], ["y"], pads=[(k - 1) // 2] * 4, name="conv"),
                  helper.make_node("Relu", ["y"], ["r"], name="relu")]  # fmt: skip
        x = "r"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["g"], name="gap"))
    if (c, hw, cin, k) in GAP_FLATTEN:
        nodes.append(helper.make_node("Flatten", ["g"], ["o"], name="flatten"))
    else:
        inits["W2"] = (rng.standard_normal((16, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
        nodes.append(helper.make_node("Conv", ["g", "W2"], ["o"], name="squeeze"))
    shape = [1, cin or c, hw, hw]
    g = helper.make_graph(nodes, "gap", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, n) for n, v in inits.items()])  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m, {"x": rng.standard_normal(shape).astype(np.float32)}


#: The GAP suite's code re-fetch cases: a 1x1 conv ``C -> C`` over 7x7 (``4 C²`` bytes of weights,
#: 0 for none) on a branch of its own runs between two calls of a GAP whose input a small conv
#: has just written (:data:`GAP_STREAM_GAPS`: channels, side): what the GAP takes beyond the
#: case without the branch is its code coming back. 2896 (32 MiB) was held out of the fit of
#: ``cost_models.cpu.CODE_REFETCH_NS``.
GAP_STREAM_CHANNELS = (0, 512, 724, 1024, 1448, 2048, 2896, 4096)
GAP_STREAM_GAPS = ((512, 7), (64, 28))
GAP_STREAM_HELD_OUT = (2896,)


def gap_stream_model(big: int, c: int, hw: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One code re-fetch case (:data:`GAP_STREAM_CHANNELS`): the model and its feeds."""
    rng = np.random.default_rng(0)
    inits = {"W": (rng.standard_normal((c, c, 1, 1)) / np.sqrt(c)).astype(np.float32)}
    feeds = {"x": rng.standard_normal((1, c, hw, hw)).astype(np.float32)}
    ins, outs, nodes = ["x"], ["o"], []
    if big:
        inits["Wb"] = (rng.standard_normal((big, big, 1, 1)) / np.sqrt(big)).astype(np.float32)
        feeds["xb"] = rng.standard_normal((1, big, 7, 7)).astype(np.float32)
        nodes.append(helper.make_node("Conv", ["xb", "Wb"], ["ob"], name="stream"))
        ins, outs = [*ins, "xb"], [*outs, "ob"]
    nodes += [helper.make_node("Conv", ["x", "W"], ["y"], name="small"), helper.make_node("Relu", ["y"], ["r"], name="relu"),
              helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"), helper.make_node("Flatten", ["g"], ["o"], name="flatten")]  # fmt: skip
    g = helper.make_graph(nodes, "gap_stream", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(feeds[n].shape)) for n in ins],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs],
                          [numpy_helper.from_array(v, n) for n, v in inits.items()])  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds


def gap_cases() -> list[Case]:
    shapes = [(gap_name(*s), *gap_model(*s)) for s in GAP_SHAPES]
    return shapes + [(f"gap c{c} {hw}x{hw} stream {big}", *gap_stream_model(big, c, hw))
                     for big in GAP_STREAM_CHANNELS for c, hw in GAP_STREAM_GAPS]  # fmt: skip


def code_refetch_fit(extra_us: Mapping[tuple[int, float], float], l2_bytes: float) -> float:
    """Least squares through 0 of ``extra = k log2(streamed / L2)`` (0 within the L2) over
    ``extra_us`` (``(stream channels, bytes streamed between two calls)`` -> us a GAP took beyond
    the case without a stream), the held-out sizes (:data:`GAP_STREAM_HELD_OUT`) left out: ``k``, us.

    >>> round(code_refetch_fit({(1024, 8.0): 3.0, (2048, 16.0): 4.0, (2896, 32.0): 9.0}, 2.0), 3)  # 2 and 3 doublings
    1.385
    """
    pts = [(max(0.0, math.log2(d / l2_bytes)), e) for (big, d), e in extra_us.items() if big not in GAP_STREAM_HELD_OUT]
    return sum(x * e for x, e in pts) / sum(x * x for x, _ in pts)


def profile_rounds(cases: Sequence[Case], threads: int, rounds: int, runs: int) -> dict[tuple[str, str], list[float]]:
    """Per case and profiled kernel (onnxruntime's profiler, ``hwsim.host.measure.profile_nodes``):
    its time in each of ``rounds`` rounds, the cases interleaved, ns."""
    out: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for name, m, feeds in cases:
            for kernel, (kind, ns) in profile_nodes(m, feeds, threads, runs=runs).items():
                out.setdefault((name, f"{kind} {kernel}"), []).append(ns)
    return out


def gap_stream_report(gap_ns: Mapping[tuple[str, str], float], l2_bytes: float = 1838.6 * 1024) -> None:
    """Print the code re-fetch cases' extra time and the fitted ``k`` (:func:`code_refetch_fit`);
    ``l2_bytes``: the CI Xeon's L2 as its fingerprint kept it."""
    by_name = {name: ns for (name, _kernel), ns in gap_ns.items()}
    extra: dict[tuple[int, float], float] = {}
    print("\nGAP | streamed between calls, MiB | us beyond no stream")
    for c, hw in GAP_STREAM_GAPS:
        base = by_name.get(f"gap c{c} {hw}x{hw} stream 0")
        for big in GAP_STREAM_CHANNELS[1:]:
            ns = by_name.get(f"gap c{c} {hw}x{hw} stream {big}")
            if base is None or ns is None:
                continue
            streamed = 4.0 * (big * big + 2 * big * 49 + c * c + 3 * c * hw * hw)  # weights, the branch's I/O, the small conv's
            extra[(big, streamed)] = extra.get((big, streamed), 0.0) + (ns - base) / 1e3
            print(f"c{c} {hw}x{hw} | {streamed / 2**20:.1f} | {(ns - base) / 1e3:.2f}" + (" (held out)" if big in GAP_STREAM_HELD_OUT else ""))
    if extra:
        print(f"k = {code_refetch_fit(extra, l2_bytes):.3f} us per doubling beyond the L2 (fit without {GAP_STREAM_HELD_OUT})")


SUITES: dict[str, Callable[[], list[Case]]] = {
    "conv1d": conv1d_cases, "conv3d": conv3d_cases, "depthwise": depthwise_cases, "dwplain": depthwise_plain_cases, "edges": depthwise_edge_cases, "gap": gap_cases, "grouped": grouped_cases,
    "einsum": einsum_cases, "retention": retention_cases, "rnn": rnn_cases,
    "stft": stft_cases, "threads": thread_cases,
}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--stat", choices=("min", "p25"), default="min",
                    help="a case's figure per round: fastest run (default; kernels this short fit in one time slice) or 25th percentile")
    ap.add_argument("--only", help="only cases whose name contains this")
    ap.add_argument("--save", type=Path, help="write the cases as ONNX files here (for `hwsim validate`) and stop")
    args = ap.parse_args(argv)
    cases = [c for c in SUITES[args.suite]() if args.only is None or args.only in c[0]]
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        for name, m, _f in cases:
            onnx.save(m, str(args.save / (name.replace(" ", "_") + ".onnx")))
        return 0
    if args.suite == "gap":  # per kernel, from the profiler: median of the rounds and their spread
        got = profile_rounds(cases, args.threads[0], args.rounds, args.runs)
        for (name, kernel), ns in got.items():
            print(f"{name} | {kernel} | {np.median(ns) / 1e3:.2f} us [{min(ns) / 1e3:.2f}-{max(ns) / 1e3:.2f}]")
        gap_stream_report({k: float(np.median(v)) for k, v in got.items() if k[1].startswith("GlobalAveragePool")})
        return 0
    sessions = {(name, t): make_session(m, t, "all") for name, m, _ in cases for t in args.threads}
    best: dict[tuple[str, int], float] = {}
    for _ in range(args.rounds):
        for name, _m, feeds in cases:
            for t in args.threads:
                timing = time_session(sessions[(name, t)], feeds, runs=args.runs, warmup=3, min_total_s=0.05)
                low = timing.min_ns if args.stat == "min" else timing.low_ns
                best[(name, t)] = min(best.get((name, t), low), low)
    print("case | " + " | ".join(f"{t} thr us" for t in args.threads) + " | speed-up")
    for name, _m, _f in cases:
        us = [best[(name, t)] / 1e3 for t in args.threads]
        print(f"{name} | " + " | ".join(f"{u:.2f}" for u in us) + f" | {us[0] / us[-1]:.2f}")
    if args.suite == "depthwise" and args.only is None:
        print("\nshape, activation | ns per output")
        for key, ns in depthwise_rows({name: best[(name, args.threads[0])] for name, _m, _f in cases}):
            print(f"{key} | {ns:.3f}")
    if args.suite == "edges" and args.only is None:
        rows = edge_rows({name: best[(name, args.threads[0])] for name, _m, _f in cases})
        print("\nk | side | edge share | ns per output")
        print("\n".join(f"{k} | {hw} | {f:.3f} | {ns:.3f}" for k, hw, f, ns in rows))
        for k in sorted({r[0] for r in rows}):
            interior, extra = edge_fit(rows, k)
            print(f"k{k}: interior {interior:.3f} ns per output, an edge output {extra:.3f} ns more ({extra / k**2:.4f} per tap)")
    if args.suite == "conv3d" and args.only is None:
        rows = conv3d_rows({name: best[(name, args.threads[0])] for name, _m, _f in cases})
        print("\ncase | width | ns per element of B beyond the FMAs")
        print("\n".join(f"{n} | {w} | {ns:.3f}" for n, w, ns in rows))
        x, y = np.array([1.0 / w for _n, w, _ in rows]), np.array([ns for _n, _w, ns in rows])
        slope, icpt = np.polyfit(x, y, 1)
        print(f"fit: {icpt:.3f} ns per element + {slope:.2f} ns per run (one output row of a tap)")
    if args.suite == "retention" and args.only is None:
        lo, hi = RETENTION_STEPS
        for t in args.threads:
            steps = {h: (best[(f"LSTM h{h} s{hi}", t)] - best[(f"LSTM h{h} s{lo}", t)]) / (hi - lo) for h in RETENTION_HIDDEN}
            print(f"\n{t} thread(s): hidden | R MiB per core | GB/s | kept in L2, MiB")
            for h, s, g, k in retention_rows(steps, t):
                print(f"{h} | {s / 2**20:.2f} | {g:.1f} | {k / 2**20:+.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
