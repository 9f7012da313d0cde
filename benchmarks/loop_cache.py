#!/usr/bin/env python3
"""What a loop of onnxruntime runs keeps of this host's last-level cache (``docs/fidelity_cpu.md``,
"What a loop keeps of a shared L3").

    python benchmarks/loop_cache.py [--rounds 3] [--probe 3]

Three measurements, one thread each, their rounds interleaved:

- ``chain``: a chain of 4-row MatMuls over distinct 768 x 768 weights, GB/s a MatMul per footprint
  (each node's median over 30 profiled runs): the kernel's own rate where the loop keeps the
  weights, the DRAM's where it does not;
- ``pause``: one float32 matrix-vector pass over S MiB (numpy's BLAS) after a pause in which this
  process touches nothing: what other tenants of a shared L3 evict in that time;
- ``probe``: the fingerprint's own figure, ``loop_cache_kib``
  (:func:`hwsim.host.weight_cache_probe.loop_cache_rates`), ``--probe`` times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # numpy's BLAS on one thread
    os.environ.setdefault(_var, "1")

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Weights a run of the chain passes over, MB.
CHAIN_MB = (4, 8, 12, 16, 18, 20, 22, 24, 32)
#: Matrix-vector passes: (MiB, pause in ms).
PAUSE_MIB, PAUSE_MS = (4, 8, 16, 24), (0.0, 1.0, 3.0)
SIDE, ROWS = 768, 4


def _chain(mb: int) -> onnx.ModelProto:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    count = max(1, round(mb * 1e6 / (SIDE * SIDE * 4)))
    inits = [numpy_helper.from_array((rng.standard_normal((SIDE, SIDE)) * 0.03).astype(np.float32), f"w{i}")
             for i in range(count)]  # fmt: skip
    nodes, x = [], "x"
    for i in range(count):
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"y{i}"], name=f"mm{i}"))
        x = f"y{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, SIDE])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [ROWS, SIDE])], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def chain_gbps(mb: int) -> float:
    """GB/s a MatMul of the chain over ``mb`` MB of distinct weights streams its weights at."""
    from hwsim.host.measure import profile_nodes

    feeds = {"x": np.ones((ROWS, SIDE), np.float32)}
    times = [ns for _, ns in profile_nodes(_chain(mb), feeds, threads=1, runs=30, opt="disable").values()]
    return SIDE * SIDE * 4 / statistics.median(times)


def pause_gbps(mib: int, pause_ms: float, passes: int = 40) -> float:
    """GB/s of one matrix-vector pass over ``mib`` MiB after ``pause_ms`` of touching nothing."""
    a = np.ones(((mib << 18) // 1024, 1024), np.float32)
    v, out, small = np.ones(1024, np.float32), np.empty(a.shape[0], np.float32), np.ones(2048)
    got = []
    for _ in range(passes):
        end = time.perf_counter_ns() + int(pause_ms * 1e6)
        while time.perf_counter_ns() < end:
            small.sum()
        t = time.perf_counter_ns()
        np.dot(a, v, out=out)
        got.append(time.perf_counter_ns() - t)
    return a.nbytes / statistics.median(sorted(got)[: passes // 2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the chain and the pauses (default 3)")
    ap.add_argument("--probe", type=int, default=3, help="runs of the fingerprint's probe (default 3)")
    args = ap.parse_args(argv)
    chain: dict[int, list[float]] = {mb: [] for mb in CHAIN_MB}
    pause: dict[tuple[int, float], list[float]] = {(s, p): [] for s in PAUSE_MIB for p in PAUSE_MS}
    for _ in range(args.rounds):
        for mb in CHAIN_MB:
            chain[mb].append(chain_gbps(mb))
        for (s, p), got in pause.items():
            got.append(pause_gbps(s, p))
    print(f"chain of {ROWS}-row MatMuls over {SIDE} x {SIDE} weights, GB/s a MatMul (lowest-highest of {args.rounds})\n")
    print("| weights a run | " + " | ".join(f"{mb} MB" for mb in CHAIN_MB) + " |")
    print("|---|" + "---:|" * len(CHAIN_MB))
    print("| GB/s | " + " | ".join(f"{min(v):.0f}-{max(v):.0f}" for v in chain.values()) + " |\n")
    print("matrix-vector pass after a pause, GB/s\n")
    print("| S | " + " | ".join(f"{p:g} ms pause" for p in PAUSE_MS) + " |")
    print("|---|" + "---:|" * len(PAUSE_MS))
    for s in PAUSE_MIB:
        print(f"| {s} MiB | " + " | ".join(f"{min(pause[s, p]):.0f}-{max(pause[s, p]):.0f}" for p in PAUSE_MS) + " |")
    if args.probe:
        from hwsim.host.fingerprint import _os_caches
        from hwsim.host.weight_cache_probe import loop_cache_rates

        llc = _os_caches().get(3, 32 * 1024.0) * 1024  # the OS's L3: the probe's footprints reach 4x it
        notes: list[str] = []
        got = [loop_cache_rates(llc, notes).get("loop_cache_kib") for _ in range(args.probe)]
        print("\nloop_cache_kib (MiB): " + ", ".join("-" if g is None else f"{g / 1024:.1f}" for g in got))
        print(*dict.fromkeys(notes), sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
