"""Measure the CPU of the machine this runs on and describe it as a hwsim chip.

What is measured (each figure a median of repeated runs, with its spread):

- matmul GFLOP/s per dtype with onnxruntime's MLAS kernels (``MatMul`` fp32/fp16,
  ``MatMulInteger`` int8), one thread and ``threads`` threads, and the scaling over 1..threads;
- STREAM-like copy and triad bandwidth (numpy) on arrays well beyond the caches reached;
- a working-set sweep (a numpy reduction over a cache-resident buffer, 16 KiB up) whose bandwidth steps give each cache
  level's capacity and bandwidth;
- pointer-chase latency (a dependent walk over a random cycle) at growing working sets,
  reported over the walk's own cost at an L1-sized set (Python's loop overhead cancels);
- onnxruntime's own costs around the kernels (:func:`measure_dispatch`): the time one more
  tiny kernel adds to a timed run (the slope over chains of 1 to 128 ``Add`` nodes on 16
  floats: the per-kernel dispatch, ``op_overhead_ns`` of the chip), the fixed cost of one
  ``run`` call (the chains' intercept), and what the profiler reports for such a kernel (its
  own bookkeeping, which calibration takes off profiled kernel times).

A figure that cannot be measured (onnxruntime lacks the kernel, a step is not found, the
timer is too coarse) is left out and the reason recorded; nothing is made up. Cache
capacities the sweep cannot resolve fall back to what the OS reports (``/sys``), and the file
says so.
"""

from __future__ import annotations

import array
import datetime as _dt
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from chips.schema import chip_from_dict
from cost_models.cpu import cyclic_capacity_bytes
from hwsim.host.depthwise_probe import DEPTHWISE_PROBES, depthwise_fields
from hwsim.host.gather_probe import GATHER_DRAM_PROBES
from hwsim.host.grouped_probe import GROUPED_DERIVED, GROUPED_PROBES, grouped_fields
from hwsim.host.int8_probe import INT8_PROBES
from hwsim.host.kernels import (
    BROADCAST_PROBES,
    FFT_PROBES,
    FFT_STRIDE_PROBES,
    FLOAT_GEMV_PROBES,
    HANDOFF_PROBES,
    LAYER_NORM_RATE,
    RESIZE_RATES,
    ROW_PACK_PROBES,
    SETUP_PROBES,
    kernel_rates,
    kernel_setups,
    per_element_efficiencies,
    step_handoffs,
)
from hwsim.host.measure import MeasureError, make_session, time_call
from hwsim.host.nchwc_probe import NCHWC_DERIVED, NCHWC_PROBES, nchwc_fields
from hwsim.host.op_probes import PROBE_RATES, SCATTER_FAR_PROBE, scatter_far_from
from hwsim.host.weight_cache_probe import loop_cache_rates, weight_cache_rates

__all__ = ["FINGERPRINT_EFFICIENCY", "Dispatch", "Fingerprint", "cache_bytes", "chip_data", "chip_yaml", "cpu_model", "gemv_dram_gbps", "measure_dispatch",
           "measure_host", "not_this_host", "probe_gflops", "read_dispatch", "read_fingerprint", "reference_gflops",
           "write_chip"]

KIB = 1024


@dataclass(frozen=True, slots=True)
class Dispatch:
    """What onnxruntime spends around its kernels on this host, one thread, in ns.

    ``kernel_ns``: one more tiny kernel in a timed run (a chain's slope); ``run_ns``: one
    ``InferenceSession.run`` call with no kernel (a chain's intercept: feeds, fetches, the
    executor's set-up); ``profiled_kernel_ns``: what the profiler reports for one tiny kernel
    (its own timing and bookkeeping inside the window, whole microseconds).
    """

    kernel_ns: float
    run_ns: float
    profiled_kernel_ns: float

    @property
    def profiler_bias_ns(self) -> float:
        """What a profiled kernel time holds beyond the kernel's real cost (0 or more)."""
        return max(0.0, self.profiled_kernel_ns - self.kernel_ns)

    def kernel_time(self, profiled_ns: float) -> float:
        """What a kernel profiled at ``profiled_ns`` costs a timed run: its time beyond a tiny
        kernel's, plus the dispatch (a tiny kernel: ``kernel_ns``).

        >>> Dispatch(250.0, 3700.0, 2000.0).kernel_time(12_000.0)
        10250.0
        """
        return max(profiled_ns - self.profiled_kernel_ns, 0.0) + self.kernel_ns


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Measured figures of one host CPU; absent figures are ``None`` with a reason in ``notes``."""

    cpu_model: str
    clock_mhz: float
    threads: int
    date: str
    versions: dict[str, str]
    matmul_gflops_1t: dict[str, float]
    matmul_gflops_nt: dict[str, float]
    matmul_spread: dict[str, float]
    scaling: dict[int, float]
    copy_gbps: float | None
    triad_gbps: float | None
    stream_bytes: int
    sweep: list[tuple[int, float]]
    caches: list[dict[str, float | str]]
    chase_ns: list[tuple[int, float]]
    dram_latency_ns: float | None
    notes: list[str] = field(default_factory=list)
    #: Extra time per byte of GEMM weights coming from DRAM rather than cache, as a rate
    #: (``weight_stream_gbps`` of the chip), and the two per-MatMul times it comes from (ms).
    weight_stream_gbps: float | None = None
    weight_stream_ms: dict[str, float] = field(default_factory=dict)
    #: Size of the square MatMul the GFLOP/s figures were measured on (:func:`probe_gflops`).
    matmul_n: int = 768
    #: Rows x K x N of the MatMul the weight stream was measured on.
    weight_stream_shape: tuple[int, int, int] = (128, 768, 3072)
    #: onnxruntime's costs around kernels (:func:`measure_dispatch`); None: not measured
    #: (an older fingerprint), and the chip keeps the 2 us per-op default.
    dispatch: Dispatch | None = None
    #: Chip fields of kernels with a structure of their own (:func:`hwsim.host.kernels.kernel_rates`).
    kernel_rates: dict[str, float] = field(default_factory=dict)
    #: How many CPUs the measuring process was allowed to run on (its affinity mask,
    #: :func:`cpus_allowed`); None: not recorded (an older fingerprint, or no such mask here).
    cpus_allowed: int | None = None


def cpu_model() -> tuple[str, float | None]:
    """This CPU's model name and its clock in MHz where ``/proc/cpuinfo`` tells (else None)."""
    model, mhz = platform.processor() or platform.machine(), None
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "model name" and model in ("", platform.machine(), platform.processor()):
                model = val.strip()
            if key.strip() == "cpu MHz" and mhz is None:
                mhz = float(val)
    except OSError:
        pass
    return model, mhz


def _os_caches() -> dict[int, float]:
    """Data/unified cache sizes per level in KiB as the OS reports them (empty if unavailable)."""
    out: dict[int, float] = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")):
        try:
            if (idx / "type").read_text().strip() == "Instruction":
                continue
            level = int((idx / "level").read_text())
            size = (idx / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        mult = {"K": 1, "M": 1024, "G": 1024 * 1024}.get(size[-1:], 1 / 1024)
        out[level] = float(size.rstrip("KMG")) * mult
    return out


def _matmul_model(n: int, dtype: str) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    if dtype == "int8":
        b = numpy_helper.from_array(rng.integers(-100, 100, (n, n)).astype(np.int8), "B")
        node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"])
        a_t, y_t = TensorProto.UINT8, TensorProto.INT32
    else:
        np_t = np.float16 if dtype == "fp16" else np.float32
        b = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np_t), "B")
        node = helper.make_node("MatMul", ["A", "B"], ["Y"])
        a_t = y_t = TensorProto.FLOAT16 if dtype == "fp16" else TensorProto.FLOAT
    g = helper.make_graph(
        [node], "mm", [helper.make_tensor_value_info("A", a_t, [n, n])],
        [helper.make_tensor_value_info("Y", y_t, [n, n])], [b],
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _matmul_gflops(n: int, dtype: str, threads: int, min_s: float) -> tuple[float, float]:
    sess = make_session(_matmul_model(n, dtype), threads, "all")
    a = (np.random.default_rng(1).integers(0, 200, (n, n)).astype(np.uint8) if dtype == "int8"
         else np.ones((n, n), np.float16 if dtype == "fp16" else np.float32))  # fmt: skip
    t = time_call(lambda: sess.run(None, {"A": a}), runs=5, warmup=2, min_total_s=min_s)
    # best of the runs: on a shared machine the fastest run is the one least disturbed
    return 2.0 * n**3 / t.min_ns, t.spread


def probe_gflops(n: int = 768, threads: int = 1, min_s: float = 0.2, dtype: str = "fp32") -> float:
    """The machine's MatMul rate right now, measured exactly as the fingerprint's
    ``matmul_gflops_1t[dtype]`` was (same ``n``, best of the runs). For fp32 their ratio is how
    much faster or slower the host runs than when it was fingerprinted (turbo, other tenants of
    the physical host), which :func:`hwsim.host.validate.validate_model` uses to put measurements
    back on the fingerprint's clock; for int8 it tells whether onnxruntime picked the same integer
    GEMM kernel as then (:mod:`hwsim.host.int8_check`)."""
    return _matmul_gflops(n, dtype, threads, min_s)[0]


def cpus_allowed() -> int | None:
    """How many CPUs this process may run on (its affinity mask: ``taskset``, a container's
    cpuset), or None where the OS has no such call."""
    get = getattr(os, "sched_getaffinity", None)
    return len(get(0)) if get is not None else None


def _copy_gbps(nbytes: int, min_s: float) -> float:
    src = np.ones(max(nbytes // 8, 1), np.float64)
    dst = np.empty_like(src)
    reps = max(1, int(4 * 1024 * 1024 // max(nbytes, 1)))

    def f() -> None:
        for _ in range(reps):
            np.copyto(dst, src)

    t = time_call(f, runs=5, warmup=1, min_total_s=min_s)
    return 2.0 * src.nbytes * reps / t.median_ns


def _triad_gbps(nbytes: int, min_s: float) -> float:
    n = nbytes // 8
    a, b, c = np.empty(n), np.ones(n), np.ones(n)

    def f() -> None:  # a = b + 3 c in two passes (numpy has no fused triad): 5 n*8 bytes move
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    t = time_call(f, runs=5, warmup=1, min_total_s=min_s)
    return 5.0 * n * 8 / t.median_ns


#: The GEMM the weight stream is measured on: rows x K x N, BERT-base's FFN in at batch x sequence 128.
WEIGHT_STREAM_SHAPE = (128, 768, 3072)
#: ``--quick``: a smaller GEMM, and distinct weights of at most this many bytes in all. A VM can
#: report its host's whole L3 (hundreds of MiB): 4x that in weights took 25-40 s and gigabytes.
QUICK_WEIGHT_STREAM = ((32, 256, 1024), 32 * 1024 * KIB)


def _parallel_matmuls(m: int, k: int, n: int, copies: int, distinct: bool) -> onnx.ModelProto:
    """``copies`` MatMuls of one input by ``k x n`` fp32 weights: each its own weight
    (``distinct``) or all the same one."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32) * 0.01, f"W{i}")
             for i in range(copies if distinct else 1)]  # fmt: skip
    nodes = [helper.make_node("MatMul", ["A", f"W{i if distinct else 0}"], [f"Y{i}"]) for i in range(copies)]
    outs = [helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, [m, n]) for i in range(copies)]
    g = helper.make_graph(nodes, "ws", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def weight_stream_plan(llc_bytes: float, quick: bool) -> tuple[tuple[int, int, int], int]:
    """The weight-stream MatMul's shape and how many distinct copies of its weights run.

    >>> weight_stream_plan(480 * 1024 * KIB, quick=True)  # a VM reporting a 480 MiB L3
    ((32, 256, 1024), 32)
    >>> weight_stream_plan(32 * 1024 * KIB, quick=False)
    ((128, 768, 3072), 15)
    """
    m, k, n = QUICK_WEIGHT_STREAM[0] if quick else WEIGHT_STREAM_SHAPE
    total = min(4 * llc_bytes, QUICK_WEIGHT_STREAM[1]) if quick else 4 * llc_bytes
    return (m, k, n), max(4, math.ceil(total / (k * n * 4)))


#: The least a MatMul must slow down with its weights in DRAM for the fingerprint to call it a
#: stall: the Intel Xeon VM's took 22 % longer (4.67 against 3.83 ms); on the AMD EPYC VM, which
#: hides the stream, one round in three came out 2-2.4 % slower (5.79 against 5.69 ms; 5.50 against
#: 5.37), which gave every GEMM a 42-81 GB/s stall.
WEIGHT_STALL_FLOOR = 0.05


def _weight_stream(
    llc_bytes: float, min_s: float, quick: bool
) -> tuple[float | None, dict[str, float], str | None, tuple[int, int, int]]:
    """How much longer a MatMul takes when its weights come from DRAM instead of cache.

    The same MatMul (:data:`WEIGHT_STREAM_SHAPE`) runs many times per call: once over
    distinct weights that together are 4x the last-level cache (every weight comes from
    DRAM), once over one weight (it stays in cache). The extra time per MatMul, as weight
    bytes over seconds, is the rate the kernel streams weights at *on top of* its compute.
    Per-MatMul times are the low quantile of each call. Returns (rate or None, times in ms,
    the reason when None, the MatMul's shape). ``quick`` uses :data:`QUICK_WEIGHT_STREAM`.
    """
    (m, k, n), copies = weight_stream_plan(llc_bytes, quick)
    w_bytes = k * n * 4
    a = np.ones((m, k), np.float32)
    per: dict[str, float] = {}
    for label, distinct in (("dram", True), ("cache", False)):
        sess = make_session(_parallel_matmuls(m, k, n, copies, distinct), 1, "all")
        t = time_call(partial(sess.run, None, {"A": a}), runs=10, warmup=2, min_total_s=min_s)
        per[label] = t.low_ns / copies / 1e6
    extra_ms = per["dram"] - per["cache"]
    if extra_ms <= WEIGHT_STALL_FLOOR * per["cache"]:
        return None, per, (f"weight stream: a MatMul took {per['dram']:.3f} ms with its weights in DRAM and "
                           f"{per['cache']:.3f} ms in cache, no stall to measure; left out"), (m, k, n)  # fmt: skip
    return w_bytes / (extra_ms * 1e6), per, None, (m, k, n)


def gemv_dram_gbps(llc_bytes: float, min_s: float) -> float | None:
    """The rate at which a one-row float MatMul streams weights no cache holds, GB/s (the chip
    field ``gemv_dram_gbps``, :func:`cost_models.cpu.dram_gemv_gbps`): the weight-stream probe's
    distinct weights (:func:`weight_stream_plan`, 4x the last-level cache in all) read by one row
    each, the time per MatMul the low quantile of each call over their number. On an AMD EPYC
    23-26 GB/s (one such Gemm of 67-151 MB alone: 20), where the read sweep and the triad reach
    38-39 and from L3 the same kernel streams at 61-70. None when no time is measured."""
    _, k, n = WEIGHT_STREAM_SHAPE
    _, copies = weight_stream_plan(llc_bytes, quick=False)
    sess = make_session(_parallel_matmuls(1, k, n, copies, True), 1, "all")
    t = time_call(partial(sess.run, None, {"A": np.ones((1, k), np.float32)}), runs=10, warmup=2, min_total_s=min_s)
    per_ns = t.low_ns / copies
    return k * n * 4 / per_ns if per_ns > 0 else None


#: Chain lengths (kernels) the per-kernel dispatch is fit over.
DISPATCH_CHAINS = (1, 16, 64, 128)


def _add_chain(n: int, elems: int = 16) -> onnx.ModelProto:
    """``n`` dependent ``Add`` nodes on ``elems`` floats (each with its own constant)."""
    nodes, inits, x = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(np.full((elems,), 1e-3, np.float32), f"c{i}"))
        nodes.append(helper.make_node("Add", [x, f"c{i}"], [f"y{i}"], name=f"add{i}"))
        x = f"y{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elems])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [elems])], inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def measure_dispatch(min_s: float = 0.5, rounds: int = 3) -> Dispatch:
    """onnxruntime's per-kernel dispatch, per-run cost and profiled tiny-kernel time (:class:`Dispatch`).

    Each chain of :data:`DISPATCH_CHAINS` ``Add`` kernels is timed (10th percentile of its runs),
    the chains interleaved over ``rounds`` rounds and the best round kept (other processes only
    add time); a least-squares line through (kernels, time) gives the slope (per kernel) and the
    intercept (per run). On the 2-core CI Xeon: ~0.25 us per kernel and ~3.7 us per run, where
    the profiler reports 2 us for the same kernel.
    """
    from hwsim.host.measure import low_quantile, profile_nodes

    feeds = {"x": np.ones(16, np.float32)}
    sessions = {n: make_session(_add_chain(n)) for n in DISPATCH_CHAINS}
    best = {n: math.inf for n in DISPATCH_CHAINS}
    for _ in range(rounds):
        for n, sess in sessions.items():
            t = time_call(partial(sess.run, None, feeds), runs=200, warmup=20, min_total_s=min_s / rounds / 4)
            best[n] = min(best[n], low_quantile(t.samples_ns, 0.1))
    slope, intercept = np.polyfit(list(best), list(best.values()), 1)
    prof = profile_nodes(_add_chain(DISPATCH_CHAINS[-1]), feeds, runs=20)
    profiled = statistics.median(ns for _, ns in prof.values())
    return Dispatch(kernel_ns=round(max(float(slope), 0.0), 1), run_ns=round(max(float(intercept), 0.0), 1),
                    profiled_kernel_ns=round(profiled, 1))  # fmt: skip


def _chase_ns(nbytes: int, hops: int, seed: int) -> float:
    n = max(nbytes // 8, 2)
    perm = np.random.default_rng(seed).permutation(n)
    nxt = np.empty(n, np.int64)
    nxt[perm] = np.roll(perm, -1)  # one cycle through every slot in random order
    walk = array.array("q", nxt.tobytes())
    i = 0
    t0 = time.perf_counter_ns()
    for _ in range(hops):
        i = walk[i]
    return (time.perf_counter_ns() - t0) / hops


def _sweep_gbps(nbytes: int, min_s: float) -> float:
    """Load+store bandwidth with a working set of ``nbytes``: one numpy call adds the same
    ``nbytes / 2`` source into an accumulator of equal size many times (a stride-0 view), so
    the per-call overhead is spread over >= 32 MiB of traffic. Best of the runs. The two arrays
    sit side by side from a page boundary (:func:`_page_aligned_pair`)."""
    n = max(nbytes // 16, 1)
    src, acc = _page_aligned_pair(n)
    reps = max(1, (32 << 20) // (n * 8))
    view = np.broadcast_to(src, (reps, n))
    t = time_call(lambda: np.sum(view, axis=0, out=acc), runs=5, warmup=1, min_total_s=min_s)
    return 3.0 * reps * n * 8 / t.min_ns


def _page_aligned_pair(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two float64 arrays of ``n`` (ones, zeros) in one buffer, the first at a page boundary and
    the second right after it on the next cache line: laid out as an arena (onnxruntime's aligns
    every buffer to 64 bytes) lays out a kernel's tensors. Two plain allocations leave the
    alignment to the heap, which differs from process to process: on the CI Xeon the same sweep
    read 201-213 GB/s at 16 KiB and 134-147 at 256 KiB by process, 290 and 173 in every process
    once aligned (``docs/fidelity_cpu.md``, "The sweep's alignment")."""
    nb = n * 8
    gap = -nb % 64
    buf = np.empty(2 * nb + gap + 4096, np.uint8)
    base = -buf.ctypes.data % 4096
    src = buf[base : base + nb].view(np.float64)
    acc = buf[base + nb + gap : base + 2 * nb + gap].view(np.float64)
    src[:] = 1.0
    acc[:] = 0.0
    return src, acc


def _levels(sweep: list[tuple[int, float]], drop: float = 0.7) -> list[tuple[int, float]]:
    """(capacity bytes, bandwidth) per cache level from a working-set sweep.

    A plateau ends where the bandwidth falls below ``drop`` times its median; one-point
    plateaus are transitions between levels and are skipped. The last plateau is memory (or a
    level larger than the sweep) and is not returned.

    >>> _levels([(1, 100.0), (2, 98.0), (4, 50.0), (8, 49.0), (16, 30.0), (32, 10.0), (64, 10.0)])
    [(2, 99.0), (8, 49.5)]
    """
    levels: list[tuple[int, float]] = []
    plateau: list[tuple[int, float]] = []
    for size, bw in sweep:
        if plateau and bw < drop * statistics.median(b for _, b in plateau):
            if len(plateau) > 1:
                levels.append((plateau[-1][0], statistics.median(b for _, b in plateau)))
            plateau = []
        plateau.append((size, bw))
    return levels


def _cache_levels(
    found: list[tuple[int, float]], sweep: list[tuple[int, float]], os_caches: dict[int, float]
) -> list[dict[str, float | str]]:
    """Cache levels 1-3: capacity (KiB), bandwidth (GB/s) and where the capacity came from.

    Each plateau the sweep found is given to the level the OS reports nearest to it in
    log-capacity (an L1 step lost in noise must not make the L2 plateau "L1: 1536 KiB"); without
    OS figures plateaus are levels 1, 2, 3 in order. A level the OS reports that no plateau
    matched takes the OS capacity and the sweep's bandwidth just below it (source ``/sys``).

    >>> [(c["level"], c["kib"], c["source"]) for c in _cache_levels([(1536 * KIB, 140.0)], [], {1: 48, 2: 2048})]
    [(1, 48, '/sys'), (2, 1536.0, 'sweep')]
    """
    by_level: dict[int, tuple[int, float]] = {}
    for i, (cap, bw) in enumerate(found[:3], start=1):
        level = min(os_caches, key=lambda lv: abs(math.log(cap / (os_caches[lv] * KIB)))) if os_caches else i
        if level not in by_level:
            by_level[level] = (cap, bw)
    caches: list[dict[str, float | str]] = []
    for level in range(1, 4):
        if level in by_level:
            cap, bw = by_level[level]
            caches.append({"level": level, "kib": cap / KIB, "bandwidth_gbps": bw, "source": "sweep"})
        elif level in os_caches:
            plateau = [bw for sz, bw in sweep if sz <= os_caches[level] * KIB]
            caches.append({"level": level, "kib": os_caches[level],
                           "bandwidth_gbps": statistics.median(plateau[-3:]) if plateau else float("nan"),
                           "source": "/sys"})  # fmt: skip
    return caches


def _cyclic_l2(caches: list[dict[str, float | str]], sweep: list[tuple[int, float]], os_caches: dict[int, float]) -> str | None:
    """Set the L2 entry of ``caches`` (found by the sweep, with an L3 after it) to the capacity a
    cyclic stream keeps there, and say so; None when there is nothing to set.

    The sweep reads its working set cyclically, so its point at the OS's L2 size (the first one
    past the L2 plateau where the OS does not say) is :func:`cost_models.cpu.stream_ns`'s cyclic
    rule between the L2 and L3 bandwidths: ``C`` from
    :func:`cost_models.cpu.cyclic_capacity_bytes`, at most that size. On the CI Xeon (OS: 2 MiB)
    2 MiB ran at 95-107 GB/s against plateaus of 138-163 and 38-39: C = 1.81-1.87 MiB in three
    fingerprints, idle and loaded, while the plateau's end moved between 1.5 and 2 MiB; an LSTM
    step streaming ``R`` of 2.25-3.1 MiB (the kernel the rule serves) gave 1.7-1.85 MiB, a
    batch-1 Gemm chain 1.62-1.67 MiB. The plateau's end (1.5 MiB) put the models that stream
    just past it 15-30 % slow, the OS's 2 MiB a 2.7 MB MLP 30 % fast."""
    l2 = next((c for c in caches if int(c["level"]) == 2 and c["source"] == "sweep"), None)
    l3 = next((c for c in caches if int(c["level"]) == 3), None)
    if l2 is None or l3 is None:
        return None
    knee = float(l2["kib"]) * KIB
    at = next(((sz, bw) for sz, bw in sweep if sz >= os_caches[2] * KIB), None) if 2 in os_caches else None
    at = at or next(((sz, bw) for sz, bw in sweep if sz > knee), None)
    if at is None:
        return None
    cap = cyclic_capacity_bytes(at[0], at[1], float(l2["bandwidth_gbps"]), float(l3["bandwidth_gbps"]))
    if cap is None:
        return None
    cap = min(cap, os_caches.get(2, math.inf) * KIB)
    l2.update(kib=round(cap / KIB, 1), source="sweep, cyclic")
    return (f"L2: {cap / KIB:.0f} KiB is what the sweep's cyclic stream kept at {at[0] // KIB} KiB "
            f"({at[1]:.0f} GB/s between the L2's and L3's rates); its plateau ends at {knee / KIB:.0f} KiB"
            + (f", the OS says {os_caches[2]:.0f} KiB" if 2 in os_caches else ""))


def _cyclic_l3(caches: list[dict[str, float | str]], sweep: list[tuple[int, float]], os_caches: dict[int, float]) -> str | None:
    """Set the L3 entry of ``caches`` (found by the sweep) to the capacity a cyclic stream keeps at
    the OS's L3 size, as :func:`_cyclic_l2` does for the L2, between the L3 plateau's rate and the
    sweep's last (DRAM) rate; None when the OS gives no L3 within the sweep or the rates do not
    tell. On an AMD EPYC VM (OS: 32 MiB) the L3 plateau ended at 16 MiB in one fingerprint and at
    8 MiB in the next on nearly the same curve (8 MiB: 123 / 112 GB/s, 16 MiB: 100 / 102), which
    flipped which models keep their weights cached; the sweep's 32 MiB point (57 / 51 GB/s,
    against plateaus of 141 / 136 and 31 / 30 beyond) gives 25.4 / 24.4 MiB."""
    l3 = next((c for c in caches if int(c["level"]) == 3 and c["source"] == "sweep"), None)
    if l3 is None or 3 not in os_caches or len(sweep) < 2:
        return None
    at = next(((sz, bw) for sz, bw in sweep if sz >= os_caches[3] * KIB), None)
    if at is None or at == sweep[-1]:
        return None
    cap = cyclic_capacity_bytes(at[0], at[1], float(l3["bandwidth_gbps"]), sweep[-1][1])
    if cap is None:
        return None
    cap = min(cap, os_caches[3] * KIB)
    was = float(l3["kib"])
    l3.update(kib=round(cap / KIB, 1), source="sweep, cyclic")
    return (f"L3: {cap / KIB:.0f} KiB is what the sweep's cyclic stream kept at {at[0] // KIB} KiB "
            f"({at[1]:.0f} GB/s between the L3's and DRAM's rates); its plateau ends at {was:.0f} KiB, "
            f"the OS says {os_caches[3]:.0f} KiB")


def measure_host(threads: int | None = None, quick: bool = False) -> Fingerprint:
    """Measure this machine (``quick``: small sizes, seconds; for tests and smoke runs)."""
    import onnxruntime as ort

    threads = threads or os.cpu_count() or 1
    model, mhz = cpu_model()
    notes: list[str] = [n for n in (_mask_note(),) if n]
    if mhz is None:
        raise MeasureError("cannot read the CPU clock from /proc/cpuinfo; flops_per_cycle needs it")
    min_s = 0.05 if quick else 0.5
    n = 128 if quick else 768
    g1: dict[str, float] = {}
    gn: dict[str, float] = {}
    spread: dict[str, float] = {}
    for dtype in ("fp32", "fp16", "int8"):
        try:
            g1[dtype], spread[dtype] = _matmul_gflops(n, dtype, 1, min_s)
            if threads > 1:
                gn[dtype], _ = _matmul_gflops(n, dtype, threads, min_s)
        except MeasureError as exc:
            notes.append(f"matmul {dtype}: not measured ({exc})")
    scaling = {t: _matmul_gflops(n, "fp32", t, min_s)[0] for t in range(1, threads + 1)} if "fp32" in g1 else {}

    stream = (16 if quick else 256) * 1024 * KIB
    copy_bw: float | None = _copy_gbps(stream, min_s)
    triad_bw: float | None = _triad_gbps(stream, min_s)
    top = (8 if quick else 128) * 1024 * KIB
    sizes = []
    s = 16 * KIB
    while s <= top:
        sizes.append(s)
        s = s * 3 // 2 if len(sizes) % 2 else s * 4 // 3
    sweep = [(sz, _sweep_gbps(sz, min_s / 5)) for sz in sizes]
    os_caches = _os_caches()
    caches = _cache_levels(_levels(sweep), sweep, os_caches)
    notes.extend(n for n in (_cyclic_l2(caches, sweep, os_caches), _cyclic_l3(caches, sweep, os_caches)) if n)
    for c in caches:
        if c["source"] == "/sys":
            notes.append(f"L{c['level']} capacity from /sys: the sweep up to {top // KIB} KiB showed no step for it")

    hops = 20_000 if quick else 2_000_000
    chase_sizes = [32 * KIB, 1024 * KIB, (16 if quick else 256) * 1024 * KIB]
    base = min(_chase_ns(chase_sizes[0], hops, s) for s in range(3))
    chase = [(sz, _chase_ns(sz, hops, 0) - base) for sz in chase_sizes]
    dram_latency = chase[-1][1]
    if dram_latency <= 1.0:
        notes.append("pointer-chase latency not resolved above the loop's own cost; left out")
        dram_latency_f: float | None = None
    else:
        dram_latency_f = dram_latency
        l3 = os_caches.get(3, 0.0) * KIB
        if chase[-1][0] <= l3:
            notes.append(f"largest chase set {chase[-1][0] // KIB // 1024} MiB is within the OS-reported L3; "
                         "latency may be an L3 latency")  # fmt: skip
    llc = float(caches[-1]["kib"]) * KIB if caches else 32.0 * 1024 * KIB
    stream_gbps, stream_ms, why, stream_shape = _weight_stream(llc, min_s, quick)
    notes += [why] if why else []
    dispatch = measure_dispatch(min_s)
    l2, l1 = cache_bytes(caches, 2), cache_bytes(caches, 1)
    rates, rate_notes = kernel_rates(quick, l2, threads, dispatch.kernel_ns, dispatch.run_ns, dispatch.profiled_kernel_ns, l1)
    notes += rate_notes
    if not quick:  # a stream of 4x the last-level cache: left to the full fingerprint
        rates.update(_beyond_llc_rates(llc, stream_gbps, min_s, notes))
    versions = {"onnxruntime": ort.__version__, "numpy": np.__version__, "onnx": onnx.__version__,
                "python": platform.python_version()}  # fmt: skip
    return Fingerprint(
        cpu_model=model, clock_mhz=mhz, threads=threads,
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), versions=versions,
        matmul_gflops_1t=g1, matmul_gflops_nt=gn, matmul_spread=spread, scaling=scaling,
        copy_gbps=copy_bw, triad_gbps=triad_bw, stream_bytes=stream, sweep=sweep, caches=caches,
        chase_ns=chase, dram_latency_ns=dram_latency_f, notes=notes,
        weight_stream_gbps=stream_gbps, weight_stream_ms=stream_ms, matmul_n=n, weight_stream_shape=stream_shape,
        dispatch=dispatch,
        kernel_rates=rates, cpus_allowed=cpus_allowed(),
    )  # fmt: skip


def cache_bytes(caches: Sequence[Mapping[str, float | str]], level: int) -> float | None:
    """Bytes of the cache ``level`` in a fingerprint's ``caches``; None where it has none.

    >>> cache_bytes([{"level": 1, "kib": 32.0}, {"level": 2, "kib": 1024.0}], 2)
    1048576.0
    """
    return next((float(c["kib"]) * KIB for c in caches if int(c["level"]) == level), None)


def _beyond_llc_rates(llc: float, stream_gbps: float | None, min_s: float, notes: list[str]) -> dict[str, float]:
    """The kernel figures whose probes stream up to four times the last-level cache ``llc``: what a
    loop keeps of a GEMM's weights (with the weight stream's stall ``stream_gbps``) and of the last
    level (:mod:`hwsim.host.weight_cache_probe`), and a one-row float MatMul's rate from DRAM."""
    rates = {**weight_cache_rates(llc, stream_gbps, notes), **loop_cache_rates(llc, notes)}
    gemv_dram = gemv_dram_gbps(llc, min_s)
    if gemv_dram is None:
        notes.append("one-row float MatMul rate from DRAM not resolved; gemv_dram_gbps left out")
    else:
        rates["gemv_dram_gbps"] = gemv_dram
    return rates


def _mask_note() -> str | None:
    """A note when this process may run on fewer CPUs than the machine has: onnxruntime picks
    some kernels by it (:mod:`hwsim.host.int8_check`), so validate should run under the same mask."""
    allowed, total = cpus_allowed(), os.cpu_count()
    if allowed is None or total is None or allowed >= total:
        return None
    return (f"measured in a process allowed {allowed} of the {total} CPUs (an affinity mask: taskset, a cpuset); "
            "onnxruntime may pick other kernels under another mask (int8 GEMM: hwsim.host.int8_check), "
            "so validate under the same one")


#: Efficiencies a fingerprinted CPU starts with (before calibration). ``flops_per_cycle`` is the
#: achieved single-thread onnxruntime MatMul peak, not a spec sheet, so a large MatMul or Gemm
#: reaches 1 of it by definition, and a large Conv too: MLAS runs convolutions (NCHWc direct or
#: im2col + SGEMM) on the same FMA micro-kernel. The int8 peak is the ``MatMulInteger`` probe's, so
#: that op type reaches 1 of it too (a dynamically quantized encoder's products ran at 0.84 of it
#: at 64 rows and K 256, where the matmul category's default 0.65 had priced them). Small and depthwise kernels lose what
#: :func:`cost_models.cpu.shape_factor` says; other op types keep the CPU model's category
#: defaults (memory-bound on this peak in any case).
FINGERPRINT_EFFICIENCY = {"Conv": 1.0, "ConvTranspose": 1.0, "Gemm": 1.0, "MatMul": 1.0, "MatMulInteger": 1.0}


def _rate_levels(caches: Sequence[Mapping[str, float | str]]) -> list[tuple[float, float]]:
    """``(KiB, GB/s)`` of each measured cache level, L1 first (levels without a rate left out)."""
    rows = sorted((int(c["level"]), float(c["kib"]), float(c["bandwidth_gbps"])) for c in caches)
    return [(kib, gbps) for _, kib, gbps in rows if not math.isnan(gbps)]


def _conv_fields(fp: Fingerprint) -> dict[str, float]:
    """The grouped and dense NCHWc conv fields derived from ``fp``'s probe times (FMAs at the fp32
    peak; the dense conv's filter at its caches' rates)."""
    peak = fp.matmul_gflops_1t.get("fp32", 0.0)
    return grouped_fields(fp.kernel_rates, peak) | nchwc_fields(fp.kernel_rates, peak, _rate_levels(fp.caches),
                                                                fp.triad_gbps or fp.copy_gbps or 1.0)  # fmt: skip


def _derived_notes(fp: Fingerprint, got: Mapping[str, Any]) -> list[str]:
    """Notes for the conv fields :func:`chip_data` derives from ``fp``'s (merged) probe times and
    could not (not among the fields of the chip's unit ``got``): said of the figures the chip gets,
    not of one round's."""
    notes = []
    if not any(f in got for f in GROUPED_DERIVED):  # (not probed without 16-channel NCHWc blocks)
        notes.append("a plain grouped conv's runs and elements not resolved or not probed; " + "/".join(GROUPED_DERIVED) + " left out")
    if NCHWC_PROBES.keys() <= fp.kernel_rates.keys():  # (not probed without 16-channel NCHWc blocks)
        notes.extend(f"an NCHWc conv's {f} not resolved; left out" for f in NCHWC_DERIVED if f not in got)
    return notes


def chip_data(fp: Fingerprint, name: str = "host") -> dict[str, Any]:
    """The chip description (plain data) of a fingerprint: one CPU unit in one DRAM domain."""
    ghz = fp.clock_mhz / 1000
    unit: dict[str, Any] = {
        "name": "cpu", "kind": "cpu", "domain": "cpu", "cores": fp.threads, "clock_mhz": round(fp.clock_mhz, 1),
        "flops_per_cycle": {d: round(g / ghz, 3) for d, g in fp.matmul_gflops_1t.items()},
    }  # fmt: skip
    for c in fp.caches:
        lvl = int(c["level"])
        unit[f"l{lvl}_kib"] = round(float(c["kib"]), 1)
        bw = float(c["bandwidth_gbps"])
        if not math.isnan(bw):
            unit[f"l{lvl}_bandwidth_gbps"] = round(bw, 2)
    if fp.weight_stream_gbps:
        unit["weight_stream_gbps"] = round(fp.weight_stream_gbps, 2)
    # efficiencies below, or probe times fields are derived from: not chip fields
    per_element = {LAYER_NORM_RATE, *RESIZE_RATES.values(), *PROBE_RATES.values(), *INT8_PROBES, *FFT_PROBES.values(),
                   *FLOAT_GEMV_PROBES, *ROW_PACK_PROBES, *SETUP_PROBES.values(), *HANDOFF_PROBES.values(), *BROADCAST_PROBES,
                   *GATHER_DRAM_PROBES, *DEPTHWISE_PROBES, *GROUPED_PROBES, *NCHWC_PROBES, SCATTER_FAR_PROBE, *(key for _, key, _, _ in FFT_STRIDE_PROBES)}  # fmt: skip
    unit.update((k, round(v, 3)) for k, v in fp.kernel_rates.items() if k not in per_element)
    if "vector_floats" in unit:  # a count, merged or not
        unit["vector_floats"] = int(unit["vector_floats"])
    # onnxruntime's dispatch per kernel as measured; 2 us when an older fingerprint has none
    unit["op_overhead_ns"] = fp.dispatch.kernel_ns if fp.dispatch else 2000.0
    if fp.dispatch and (setups := kernel_setups(fp.kernel_rates, fp.dispatch.kernel_ns)):
        unit["kernel_setup_ns"] = setups  # beside that dispatch: derived from the (merged) probe times
    unit.update(depthwise_fields(fp.kernel_rates))  # likewise
    unit.update(_conv_fields(fp))
    unit["efficiency"] = dict(FINGERPRINT_EFFICIENCY)
    dram: dict[str, Any] = {"bandwidth_gbps": round(fp.triad_gbps or fp.copy_gbps or 1.0, 2),
                            "latency_ns": round(fp.dram_latency_ns or 0.0, 1)}  # fmt: skip
    data: dict[str, Any] = {
        "name": name,
        "description": f"{fp.cpu_model}, measured by hwsim fingerprint {fp.date}",
        "dram": dram, "domains": [{"name": "cpu", "kind": "dram"}], "host_domain": "cpu",
        "units": [unit], "default_affinity": ["cpu"],
    }  # fmt: skip
    if per_element & fp.kernel_rates.keys():
        effs = per_element_efficiencies(chip_from_dict(data), fp.kernel_rates)
        unit["efficiency"].update((k, round(e, 4)) for k, e in effs.items())
    if (far := scatter_far_from(chip_from_dict(data), fp.kernel_rates)) is not None:
        unit["scatter_far_update_ns"] = round(far, 3)  # beside the efficiency its probe in L2 gave above
    if handoffs := step_handoffs(chip_from_dict(data), fp.kernel_rates, fp.threads):
        unit["step_handoff_ns"] = handoffs  # from the (merged) probe times, at the efficiencies above
    return data


def chip_yaml(
    fp: Fingerprint, name: str = "host", comments: Sequence[str] = (), unit_fields: Mapping[str, Any] | None = None
) -> str:
    """Chip YAML text; the measurements ride along as comments and one ``# fingerprint-json:`` line.

    ``comments`` (each starting with ``#``) go after the measurements; ``unit_fields`` replace the
    CPU unit's fields (an ``efficiency`` mapping is merged into the fingerprint's): a calibration
    written into the chip itself (``hwsim fingerprint --calibrate``).
    """
    import yaml

    lines = [
        f"# Measured by `hwsim fingerprint` on {fp.date}: {fp.cpu_model}, {fp.clock_mhz:.0f} MHz, {fp.threads} threads",
        "# " + ", ".join(f"{k} {v}" for k, v in fp.versions.items()),
        ("# flops_per_cycle = best single-thread onnxruntime MatMul GFLOP/s / clock (an achieved peak, not a spec "
        "sheet); +- is the spread of the runs"),
    ]
    for d, g in fp.matmul_gflops_1t.items():
        multi = f", {fp.matmul_gflops_nt[d]:.1f} GFLOP/s on {fp.threads} threads" if d in fp.matmul_gflops_nt else ""
        lines.append(f"#   matmul {d}: {g:.1f} GFLOP/s on 1 thread (+-{fp.matmul_spread[d]:.0%}){multi}")
    if fp.scaling:
        lines.append("#   fp32 scaling: " + ", ".join(f"{t}T {g:.1f}" for t, g in fp.scaling.items()))
    lines.append(f"#   stream ({fp.stream_bytes // KIB // 1024} MiB arrays): copy {fp.copy_gbps:.1f} GB/s, "
                 f"triad {fp.triad_gbps:.1f} GB/s")  # fmt: skip
    for c in fp.caches:
        where = {"sweep": "the sweep", "sweep, cyclic": "the sweep; the capacity its cyclic stream kept"}.get(
            str(c["source"]), "capacity from /sys; the sweep showed no step")
        lines.append(f"#   L{c['level']}: {float(c['kib']):.0f} KiB at {float(c['bandwidth_gbps']):.1f} GB/s ({where})")
    if fp.weight_stream_gbps:
        lines.append(f"#   weight stream: a {'x'.join(map(str, fp.weight_stream_shape))} fp32 MatMul takes {fp.weight_stream_ms['dram']:.3f} ms with its "
                     f"weights from DRAM, {fp.weight_stream_ms['cache']:.3f} ms from cache: "
                     f"{fp.weight_stream_gbps:.1f} GB/s on top of the compute")  # fmt: skip
    if fp.dispatch:
        disp = fp.dispatch
        lines.append(f"#   onnxruntime dispatch: {disp.kernel_ns:.0f} ns per kernel, {disp.run_ns:.0f} ns per run call "
                     f"(chains of {'/'.join(map(str, DISPATCH_CHAINS))} Add kernels); the profiler reports "
                     f"{disp.profiled_kernel_ns:.0f} ns for such a kernel")  # fmt: skip
    probed = {k: v for k, v in fp.kernel_rates.items() if k in PROBE_RATES.values()}
    if probed:
        lines.append("#   op types probed alone (kernel us, efficiency in `efficiency`): "
                     + ", ".join(f"{k.partition(':')[2]} {v / 1000:.3g}" for k, v in probed.items()))  # fmt: skip
    if fp.kernel_rates.keys() - probed.keys():
        lines.append("#   kernels: " + ", ".join(f"{k} {v:.3g}" for k, v in fp.kernel_rates.items() if k not in probed)
                     + " (LSTM step GEMV rate, in L2 and for R four times the L2; STFT radix-2 time per butterfly and per point;"
                     " one parallel section of the intra-op thread pool; the L2 a run call takes from a once-per-run"
                     " weight stream)")  # fmt: skip
    lines.append("#   pointer chase over an L1-sized walk: " + ", ".join(
        f"{sz // KIB} KiB +{ns:.1f} ns" for sz, ns in fp.chase_ns))  # fmt: skip
    data = chip_data(fp, name)
    unit = data["units"][0]
    for n in (*fp.notes, *_derived_notes(fp, unit)):
        lines.append(f"#   note: {n}")
    record = {k: getattr(fp, k) for k in Fingerprint.__slots__}  # type: ignore[attr-defined]
    if fp.dispatch:
        record["dispatch"] = {k: getattr(fp.dispatch, k) for k in Dispatch.__slots__}  # type: ignore[attr-defined]
    lines.extend(comments)
    lines.append("# fingerprint-json: " + json.dumps(record, default=str))
    for key, value in (unit_fields or {}).items():
        unit[key] = {**unit[key], **value} if key == "efficiency" else value
    return "\n".join(lines) + "\n" + yaml.safe_dump(data, sort_keys=False)


def write_chip(
    fp: Fingerprint, out: Path, name: str = "host", comments: Sequence[str] = (),
    unit_fields: Mapping[str, Any] | None = None,
) -> None:  # fmt: skip
    """Write the chip YAML atomically (validated first: nothing half-written); ``comments`` and
    ``unit_fields`` as in :func:`chip_yaml`."""
    import yaml

    from chips.schema import chip_from_dict

    text = chip_yaml(fp, name, comments, unit_fields)
    chip_from_dict(yaml.safe_load(text), source=str(out))
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)


def read_fingerprint(path: Path) -> dict[str, Any] | None:
    """The ``# fingerprint-json:`` record of a chip file written by :func:`write_chip`, if any."""
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# fingerprint-json: "):
                data: dict[str, Any] = json.loads(line.removeprefix("# fingerprint-json: "))
                return data
    except (OSError, ValueError):
        return None
    return None


def not_this_host(chip_ref: str) -> str | None:
    """Why the chip ``chip_ref`` (a bundled name or a YAML path) is not this machine, or None
    when it is (a fingerprinted chip file of this CPU)."""
    path = Path(chip_ref)
    if not path.is_file():
        return f"{chip_ref} is not a chip written by `hwsim fingerprint` on this machine"
    record = read_fingerprint(path)
    if record is None:
        return f"{path} carries no fingerprint record (only a chip written by `hwsim fingerprint` is this machine)"
    here, _ = cpu_model()
    if record.get("cpu_model") != here:
        return f"{path} was fingerprinted on {record.get('cpu_model')!r}, this machine is {here!r}"
    return None


def reference_gflops(path: Path, threads: int = 1, dtype: str = "fp32") -> tuple[float, int] | None:
    """(``dtype`` MatMul GFLOP/s on ``threads`` threads, its MatMul size) recorded in a
    fingerprinted chip file, or None for a chip file without a fingerprint record or without a
    rate at that thread count (the fingerprint times one thread and all of the machine's threads)."""
    fp = read_fingerprint(path)
    if not fp:
        return None
    key = "matmul_gflops_1t" if threads == 1 else "matmul_gflops_nt"
    if threads != 1 and fp.get("threads") != threads:
        return None
    rates = fp.get(key)
    g, n = rates.get(dtype) if isinstance(rates, dict) else None, fp.get("matmul_n", 768)
    if g is None:
        return None
    if not isinstance(g, (int, float)) or g <= 0 or not isinstance(n, int) or n <= 0:
        raise MeasureError(f"{path}: fingerprint-json: {key}.{dtype} must be a positive number and "
                           f"matmul_n a positive integer (got {g!r}, {n!r})")  # fmt: skip
    return float(g), n


def read_dispatch(path: Path) -> Dispatch | None:
    """The :class:`Dispatch` figures recorded in a fingerprinted chip file, or None (no
    fingerprint record, or one written before they were measured).

    Raises
    ------
    MeasureError
        When the record holds them but not as three non-negative numbers.
    """
    fp = read_fingerprint(path)
    d = fp.get("dispatch") if fp else None
    if d is None:
        return None
    try:
        out = Dispatch(float(d["kernel_ns"]), float(d["run_ns"]), float(d["profiled_kernel_ns"]))
    except (KeyError, TypeError, ValueError):
        raise MeasureError(f"{path}: fingerprint-json: dispatch must hold kernel_ns, run_ns and profiled_kernel_ns "
                           f"(got {d!r})") from None  # fmt: skip
    if min(out.kernel_ns, out.run_ns, out.profiled_kernel_ns) < 0:
        raise MeasureError(f"{path}: fingerprint-json: dispatch figures must be non-negative (got {d!r})")
    return out
