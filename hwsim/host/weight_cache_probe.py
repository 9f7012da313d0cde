"""What a loop of inferences keeps of a model's GEMM weights from one run to the next.

A MatMul's packed weights are consumed at the micro-kernel's pace, so where they come from beyond
L2 they stall the kernel (:func:`cost_models.cpu.weight_stream_ns`). Whether they come from the
last-level cache or from DRAM depends on how much of the model's weights that cache keeps between
two runs, and on a VM that is not what the read sweep says: on the Intel Xeon of
``docs/fidelity_cpu.md`` (an L3 the sweep puts at 48 MiB) chains of MatMuls over distinct weights
stalled 44-51 GB/s at 16 MiB of weights, 18 at 24 MiB and 12.5-16 at 32-64 MiB, the DRAM's rate.

The probe: chains of :data:`CHAIN_ROWS`-row MatMuls, each over its own :data:`CHAIN_SIDE`-square
weights, whose weights add up to footprints from :data:`FIRST_MIB` MiB to four times the last-level
cache (:data:`LAST_MIB` at most), against one chain that alternates two weights (in L2). Each
footprint's extra time per weight byte lies between the kept weights' stall (the smaller of the
two smallest footprints': ``weight_cached_gbps``) and the DRAM's (``weight_stream_gbps``, measured
by the fingerprint's weight-stream MatMul); where it lies is the share the cache does not keep, and
:func:`fit_capacity` finds the capacity whose cyclic law (:func:`cost_models.cpu.cyclic_kept`)
gives those shares (``weight_cache_kib``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from cost_models.cpu import cyclic_kept
from hwsim.host.measure import make_session, time_session

__all__ = ["CHAIN_ROWS", "CHAIN_SIDE", "FIRST_MIB", "LAST_MIB", "LOOP_ROWS", "chain_footprints", "fit_capacity", "loop_cache_rates", "lost_shares",
           "stall_per_byte", "weight_cache_rates"]

#: Rows of each chained MatMul (a transformer's 128 tokens) and the side of its square weights
#: (256 KiB each: any L2 holds two).
CHAIN_ROWS, CHAIN_SIDE = 128, 256
#: Rows of the memory-bound chain (:func:`loop_cache_rates`): four rows do too little work per
#: weight byte to hide where the weights come from, on any host.
LOOP_ROWS = 4
#: The smallest footprint probed, MiB: beyond any L2, within any L3 this project meets.
FIRST_MIB = 4.0
#: The largest footprint probed, MiB, whatever the last-level cache says.
LAST_MIB = 96.0
_MIB = 1024.0 * 1024.0


def chain_footprints(llc_bytes: float) -> list[float]:
    """The footprints (bytes of distinct weights a chain passes over per run) the probe times: from
    :data:`FIRST_MIB` MiB by x1.5 up to four times ``llc_bytes`` (:data:`LAST_MIB` at most), each a
    whole number of weights.

    >>> [round(f / 2**20, 2) for f in chain_footprints(16 * 2**20)]
    [4.0, 6.0, 9.0, 13.5, 20.25, 30.5, 45.5]
    """
    weight = CHAIN_SIDE * CHAIN_SIDE * 4
    top = min(4.0 * llc_bytes, LAST_MIB * _MIB)
    out, mib = [], FIRST_MIB
    while mib * _MIB <= top:
        out.append(float(round(mib * _MIB / weight) * weight))
        mib *= 1.5
    return out


def _chain(count: int, distinct: int, rows: int = CHAIN_ROWS) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """``count`` dependent ``rows``-row MatMuls over ``distinct`` weights in turn, and its feed."""
    rng = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(CHAIN_SIDE)
    inits = [numpy_helper.from_array((rng.standard_normal((CHAIN_SIDE, CHAIN_SIDE)) * scale).astype(np.float32), f"w{i}")
             for i in range(distinct)]  # fmt: skip
    nodes, x = [], "x"
    for i in range(count):
        nodes.append(helper.make_node("MatMul", [x, f"w{i % distinct}"], [f"y{i}"]))
        x = f"y{i}"
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, CHAIN_SIDE])
    graph = helper.make_graph(nodes, "weights", [x_info], [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model, {"x": rng.standard_normal((rows, CHAIN_SIDE)).astype(np.float32)}


def stall_per_byte(footprints: Sequence[float], rounds: int = 3, rows: int = CHAIN_ROWS) -> dict[float, float]:
    """Per footprint, the ns per weight byte a ``rows``-row MatMul of the chain over that many bytes
    of distinct weights takes beyond one of a chain alternating two (the fastest run of each, the
    chains interleaved over ``rounds`` rounds)."""
    weight = CHAIN_SIDE * CHAIN_SIDE * 4
    counts = {f: max(2, round(f / weight)) for f in footprints}
    chains = {f: _chain(n, n, rows) for f, n in counts.items()}
    chains[0.0] = _chain(64, 2, rows)
    sessions = {f: (make_session(m, 1, "all"), feeds) for f, (m, feeds) in chains.items()}
    best = dict.fromkeys(sessions, float("inf"))
    for _ in range(rounds):
        for f, (sess, feeds) in sessions.items():
            best[f] = min(best[f], time_session(sess, feeds, runs=5, warmup=1, min_total_s=0.02).min_ns)
    near = best[0.0] / 64
    return {f: (best[f] / counts[f] - near) / weight for f in footprints}


def lost_shares(per_byte: Mapping[float, float], kept: float, lost: float) -> dict[float, float]:
    """Per footprint, the share of its weights the loop did not keep: where its time per weight byte
    lies between ``kept`` (all kept) and ``lost`` (none), clipped to [0, 1].

    >>> lost_shares({4.0: 0.5, 20.0: 2.5, 60.0: 6.0}, 0.5, 4.5)
    {4.0: 0.0, 20.0: 0.5, 60.0: 1.0}
    """
    return {f: min(1.0, max(0.0, (s - kept) / (lost - kept))) for f, s in per_byte.items()}


def fit_capacity(shares: Mapping[float, float]) -> float | None:
    """The capacity (bytes) whose cyclic law gives the measured ``shares`` (footprint -> share of
    its weights not kept) with the least squared error, on a grid of 1/16 MiB steps; None where the
    shares do not tell (none past a half, or the fit at either end of the footprints).

    >>> law = {f * 2**20: 1 - cyclic_kept(f, 14.0) / f for f in (4, 6, 9, 13.5, 20.25, 30.25, 45.5)}
    >>> fit_capacity(law) / 2**20
    14.0
    >>> fit_capacity({f * 2**20: 0.0 for f in (4, 6, 9)}) is None
    True
    """
    if not shares or max(shares.values()) < 0.5:
        return None
    lo, hi = min(shares), max(shares)
    grid = np.arange(lo / 2, hi, _MIB / 16)
    errors = [sum((s - (1 - cyclic_kept(f, c) / f)) ** 2 for f, s in shares.items()) for c in grid]
    best = float(grid[int(np.argmin(errors))])
    # Half the largest footprint is a fit still (that footprint just lost every weight, the next
    # smaller ones tell the rest): a capacity within a grid step below it rounds onto it.
    return best if lo / 2 < best <= hi / 2 else None


def weight_cache_rates(llc_bytes: float, stream_gbps: float | None, notes: list[str]) -> dict[str, float]:
    """``weight_cache_kib`` and ``weight_cached_gbps`` (:mod:`hwsim.host.weight_cache_probe`) where
    they resolve, with a note in ``notes`` where not: the DRAM's stall is ``stream_gbps`` (the
    fingerprint's weight stream; None: no stall measured, nothing to share). About 5 s."""
    if not stream_gbps:
        notes.append("no weight stream stall measured; weight_cache_kib left out")
        return {}
    per_byte = stall_per_byte(chain_footprints(llc_bytes))
    cached = min(per_byte[f] for f in sorted(per_byte)[:2])
    dram, floor = 1.0 / stream_gbps, max(cached, 0.0)
    if dram <= floor:
        notes.append("MatMul weights from the last-level cache stalled no less than from DRAM; weight_cache_kib left out")
        return {}
    capacity = fit_capacity(lost_shares(per_byte, floor, dram))
    if capacity is None:
        notes.append("what a loop keeps of its MatMul weights not resolved (no footprint lost half); weight_cache_kib left out")
        return {}
    out = {"weight_cache_kib": capacity / 1024}
    if cached > 0:
        out["weight_cached_gbps"] = 1.0 / cached
    return out


def loop_cache_rates(llc_bytes: float, notes: list[str]) -> dict[str, float]:
    """``loop_cache_kib`` (:func:`cost_models.cpu.loop_cache_bytes`): the capacity whose cyclic law
    gives the shares of their weights chains of :data:`LOOP_ROWS`-row MatMuls lose per footprint,
    between the two smallest footprints' time per byte (kept) and the largest's (four times the
    last level, where a cyclic stream keeps nothing), where it resolves below ``llc_bytes``; a note
    in ``notes`` where not. About 5 s.

    Where the fingerprint's weight stream shows no stall (a GEMM of 128 rows hides DRAM: the AMD
    EPYC here), such a chain still tells where the weights came from: 52 GB/s a MatMul up to 16 MB
    of distinct weights, 22-38 at 18 MB, 20 (DRAM) from 22 MB (2026-12-07), where the read sweep
    put the L3 at 26 MiB. A neighbour VM's traffic through a shared L3 takes its share between two
    runs: a 4 MiB pass after 3 ms of idling ran at 43 GB/s, at 77 back to back."""
    per_byte = stall_per_byte(chain_footprints(llc_bytes), rows=LOOP_ROWS)
    if len(per_byte) < 4:
        notes.append("the last-level cache is too small for the loop probe; loop_cache_kib left out")
        return {}
    kept = min(per_byte[f] for f in sorted(per_byte)[:2])
    lost = per_byte[max(per_byte)]
    if lost <= kept:
        notes.append("MatMul weights of four times the last level ran no slower than kept ones; loop_cache_kib left out")
        return {}
    capacity = fit_capacity(lost_shares(per_byte, kept, lost))
    if capacity is None or capacity >= llc_bytes:
        notes.append("what a loop of runs keeps of the last level not resolved below it; loop_cache_kib left out")
        return {}
    return {"loop_cache_kib": capacity / 1024}
