#!/usr/bin/env python3
"""Integer GEMMs on two threads: how much faster onnxruntime's QLinearMatMul runs on ``--threads``
intra-op threads than on one, against an fp32 MatMul of the same shape, by shape.

    python benchmarks/int8_threads.py [--threads 2] [--rounds 3] [--shapes 128x384x384 ...] [--conv | --quantize | --handoff]

Each case is a chain of eight products ``M x K x N`` (``K == N``: each feeds the next; uint8
activations, int8 weights with zero point 0, as ``quantize_static`` writes them); one product is the
whole run's time / 8, the 10th percentile of 200 runs, the best of ``--rounds`` interleaved rounds
(:func:`hwsim.host.measure.best_run_ns`). ``C KiB`` is the int32 accumulator MLAS fills for one
product before it requantizes it (``M x N x 4`` bytes, one temporary buffer of the kernel).
Nothing here is fitted: it is the measurement behind ``docs/fidelity_cpu.md``, "Two threads and
the integer GEMMs".

``--conv``: instead, chains of eight 3x3 convs (``C`` channels in and out, padded, ``H x W``
pixels): QLinearConv against Conv, at :data:`CONV_SHAPES`.

``--quantize``: instead, eight independent per-tensor QuantizeLinear (DequantizeLinear) kernels
over one input of ``n`` values, one kernel's time on 1 and ``--threads`` threads, at the sizes of
:data:`QUANTIZE_SIZES`: where onnxruntime starts to split them
(:data:`cost_models.cpu.QUANTIZE_PARALLEL_MIN_ELEMENTS`; a DequantizeLinear never does:
:data:`cost_models.cpu.ONE_THREAD_KERNELS`).

``--handoff``: no onnxruntime. Two processes, each pinned to one of the first two CPUs this one may
run on, share a buffer; one fills it, then either the same process or the other copies it out
(``numpy.copyto`` into a buffer of its own), 150 times each, interleaved. The table gives the 25th
percentile of each copy at :data:`HANDOFF_KIB`: how fast one core reads what the other has just
written, against what the writer reads back from its own caches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: ``M x K x N`` with ``K == N``: rows from 64 to 1024 at 384 wide, and three widths at 128 rows.
SHAPES = ("64x384x384", "128x384x384", "192x384x384", "256x384x384", "384x384x384", "512x384x384",
          "1024x384x384", "128x256x256", "128x768x768", "128x1024x1024")  # fmt: skip
CHAIN = 8
#: ``(channels, pixels a side)`` for ``--conv``.
CONV_SHAPES = ((16, 32), (24, 24), (24, 48), (32, 40), (48, 28), (48, 56), (64, 14), (64, 28))
#: Values per kernel for ``--quantize``, around the measured thresholds.
QUANTIZE_SIZES = {"QuantizeLinear": (49_152, 65_536, 69_632, 73_728, 81_920, 131_072),
                  "DequantizeLinear": (131_072, 524_288, 1_048_576, 1_572_864, 2_097_152)}  # fmt: skip


def _chain(kind: str, shape: tuple[int, ...], weight: tuple[int, ...], ops: tuple[str, str],
           seed: int = 0, **attrs: Any) -> tuple[onnx.ModelProto, np.ndarray]:
    """``CHAIN`` kernels one after the other over an input of ``shape``, each with weights of
    ``weight``: ``ops[0]`` (``kind == "int8"``: uint8 activations, int8 weights with zero point 0)
    or ``ops[1]`` (fp32)."""
    rng = np.random.default_rng(seed)
    int8 = kind == "int8"
    inits = [numpy_helper.from_array(np.array(v, dt), n) for n, v, dt in
             (("s", 0.05, np.float32), ("z", 128, np.uint8), ("ws", 0.01, np.float32), ("wz", 0, np.int8))] if int8 else []  # fmt: skip
    nodes, cur = [], "x"
    for i in range(CHAIN):
        if int8:
            inits.append(numpy_helper.from_array(rng.integers(-100, 100, weight).astype(np.int8), f"w{i}"))
            ins = [cur, "s", "z", f"w{i}", "ws", "wz", "s", "z"]
        else:
            inits.append(numpy_helper.from_array((rng.standard_normal(weight) * 0.05).astype(np.float32), f"w{i}"))
            ins = [cur, f"w{i}"]
        nodes.append(helper.make_node(ops[0] if int8 else ops[1], ins, [f"y{i}"], **attrs))
        cur = f"y{i}"
    elem = TensorProto.UINT8 if int8 else TensorProto.FLOAT
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info(cur, elem, shape)], inits)  # fmt: skip
    x = rng.integers(0, 255, shape).astype(np.uint8) if int8 else rng.standard_normal(shape).astype(np.float32)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), x


def chain(kind: str, m: int, k: int) -> tuple[onnx.ModelProto, np.ndarray]:
    """``CHAIN`` products ``m x k x k`` one after the other: QLinearMatMul (``kind == "int8"``) or MatMul."""
    return _chain(kind, (m, k), (k, k), ("QLinearMatMul", "MatMul"))


#: Buffer sizes (KiB) for ``--handoff``: from the L1 to the L2 (2 MiB a core on the Intel Xeon).
HANDOFF_KIB = (64, 128, 256, 384, 512, 768, 1024, 1536, 2048)
HANDOFF_REPEATS = 150


def _handoff_worker(name: str, n: int, cpu: int, orders: Any, times: Any) -> None:
    """One pinned process: ``"w"`` fills the shared buffer, ``"r"`` copies it out and reports the ns."""
    import os
    import time
    from multiprocessing import shared_memory

    os.sched_setaffinity(0, {cpu})
    shm = shared_memory.SharedMemory(name=name)
    shared = np.ndarray((n,), np.float32, buffer=shm.buf)
    own = np.empty_like(shared)
    while (order := orders.get()) is not None:
        if order == "w":
            shared.fill(np.float32(time.perf_counter_ns() % 7))
            times.put(0)
        else:
            t0 = time.perf_counter_ns()
            np.copyto(own, shared)
            times.put(time.perf_counter_ns() - t0)
    del shared
    shm.close()


def _handoff_row(kib: int, cpus: list[int]) -> tuple[float, float]:
    """(own, other) copy times of a ``kib`` KiB buffer just written by the first process, us."""
    import multiprocessing as mp
    from multiprocessing import shared_memory

    n = kib * 1024 // 4
    shm = shared_memory.SharedMemory(create=True, size=n * 4)
    queues: list[tuple[Any, Any]] = [(mp.Queue(), mp.Queue()) for _ in cpus]
    procs = [mp.Process(target=_handoff_worker, args=(shm.name, n, c, q[0], q[1])) for c, q in zip(cpus, queues)]
    for p in procs:
        p.start()
    own: list[int] = []
    other: list[int] = []
    for _ in range(HANDOFF_REPEATS):
        for reader, got in ((0, own), (1, other)):
            queues[0][0].put("w")
            queues[0][1].get()
            queues[reader][0].put("r")
            got.append(queues[reader][1].get())
    for orders, _ in queues:
        orders.put(None)
    for p in procs:
        p.join()
    shm.close()
    shm.unlink()
    return float(np.percentile(own, 25)) / 1e3, float(np.percentile(other, 25)) / 1e3


def _handoff_table(cpus: list[int]) -> None:
    print(f"| KiB | own core us | own GB/s | other core (CPU {cpus[1]}) us | other GB/s |")
    print("|---:|---:|---:|---:|---:|")
    for kib in HANDOFF_KIB:
        own, other = _handoff_row(kib, cpus)
        gb = kib * 1024 / 1e3
        print(f"| {kib} | {own:.1f} | {gb / own:.1f} | {other:.1f} | {gb / other:.1f} |")


def conv_chain(kind: str, c: int, hw: int) -> tuple[onnx.ModelProto, np.ndarray]:
    """``CHAIN`` padded 3x3 convs of ``c`` channels over ``hw x hw`` pixels: QLinearConv (``kind ==
    "int8"``) or Conv."""
    return _chain(kind, (1, c, hw, hw), (c, c, 3, 3), ("QLinearConv", "Conv"), pads=[1] * 4)


def _conv_table(threads: int, rounds: int) -> None:
    from hwsim.host.measure import best_run_ns

    cases = {(c, hw, kind): conv_chain(kind, c, hw) for c, hw in CONV_SHAPES for kind in ("int8", "fp32")}
    one, many = best_run_ns(cases, rounds, 1), best_run_ns(cases, rounds, threads)
    print(f"| C, H x W | MACs (M) | int8 1 thread us | int8 {threads} threads us | int8 speed-up "
          f"| fp32 1 thread us | fp32 {threads} threads us | fp32 speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for c, hw in CONV_SHAPES:
        i1, i2, f1, f2 = (d[(c, hw, kind)] / CHAIN / 1e3 for kind in ("int8", "fp32") for d in (one, many))
        print(f"| {c}, {hw} x {hw} | {c * c * 9 * hw * hw / 1e6:.1f} | {i1:.1f} | {i2:.1f} | x{i1 / i2:.2f} "
              f"| {f1:.1f} | {f2:.1f} | x{f1 / f2:.2f} |")


def quantize_kernels(op_type: str, n: int, seed: int = 0) -> tuple[onnx.ModelProto, np.ndarray]:
    """``CHAIN`` independent ``op_type`` kernels (scale 0.05, zero point 3) over one input of ``n`` values."""
    rng = np.random.default_rng(seed)
    quantize = op_type == "QuantizeLinear"
    src, dst = (TensorProto.FLOAT, TensorProto.UINT8) if quantize else (TensorProto.UINT8, TensorProto.FLOAT)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(3, np.uint8), "z")]
    nodes = [helper.make_node(op_type, ["x", "s", "z"], [f"y{i}"]) for i in range(CHAIN)]
    outs = [helper.make_tensor_value_info(f"y{i}", dst, (n,)) for i in range(CHAIN)]
    graph = helper.make_graph(nodes, "kernels", [helper.make_tensor_value_info("x", src, (n,))], outs, inits)
    x = rng.random(n, dtype=np.float32) if quantize else rng.integers(0, 255, n).astype(np.uint8)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), x


def _quantize_table(threads: int, rounds: int) -> None:
    from hwsim.host.measure import best_run_ns

    cases = {(op, n): quantize_kernels(op, n) for op, sizes in QUANTIZE_SIZES.items() for n in sizes}
    one, many = best_run_ns(cases, rounds, 1), best_run_ns(cases, rounds, threads)
    print(f"| kernel | values | 1 thread us | {threads} threads us | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for op, n in cases:
        a, b = one[(op, n)] / CHAIN / 1e3, many[(op, n)] / CHAIN / 1e3
        print(f"| {op} | {n:,} | {a:.1f} | {b:.1f} | x{a / b:.2f} |")


def _shape(ap: argparse.ArgumentParser, text: str) -> tuple[int, int, int]:
    """``M x K x N`` from ``--shapes``; a malformed one or ``K != N`` is the parser's one-line error (exit 2)."""
    parts = text.split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        ap.error(f"--shapes {text}: expected M x K x N, three positive integers such as 128x384x384")
    m, k, n = (int(p) for p in parts)
    if k != n:
        ap.error(f"--shapes {text}: K and N must be equal (each product feeds the next)")
    return m, k, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), help="M x K x N with K == N, e.g. 128x384x384")
    ap.add_argument("--quantize", action="store_true", help="time the quantize kernels' split instead")
    ap.add_argument("--conv", action="store_true", help="time QLinearConv against Conv chains instead")
    ap.add_argument("--handoff", action="store_true", help="time a buffer read by the core that wrote it and by the other")
    args = ap.parse_args(argv)
    shapes = [_shape(ap, shape) for shape in args.shapes]
    if args.handoff:
        import os

        cpus = sorted(os.sched_getaffinity(0))[:2]
        if len(cpus) < 2:
            ap.error("--handoff: this process may run on one CPU only; it needs two")
        _handoff_table(cpus)
        return 0
    if args.quantize:
        _quantize_table(args.threads, args.rounds)
        return 0
    if args.conv:
        _conv_table(args.threads, args.rounds)
        return 0
    from hwsim.host.measure import best_run_ns

    cases = {(shape, kind): chain(kind, shape[0], shape[1]) for shape in shapes for kind in ("int8", "fp32")}
    one = best_run_ns(cases, args.rounds, 1)
    many = best_run_ns(cases, args.rounds, args.threads)
    print(f"| M x K x N | C KiB | int8 1 thread us | int8 {args.threads} threads us | int8 speed-up "
          f"| fp32 1 thread us | fp32 {args.threads} threads us | fp32 speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m, k, n in shapes:
        i1, i2, f1, f2 = (d[((m, k, n), kind)] / CHAIN / 1e3 for kind in ("int8", "fp32") for d in (one, many))
        print(f"| {m}x{k}x{n} | {m * n * 4 / 1024:.0f} | {i1:.1f} | {i2:.1f} | x{i1 / i2:.2f} | {f1:.1f} | {f2:.1f} | x{f1 / f2:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
