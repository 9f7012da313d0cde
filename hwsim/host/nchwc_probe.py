"""What a dense conv on onnxruntime's NCHWc kernels pays beside its FMAs on this host: the
fingerprint's ``nchwc_call_ns`` (:func:`cost_models.cpu.nchwc_conv_pass_ns`).

MLAS runs a dense blocked conv per set of four output blocks and per block of input channels over
every output row, one kernel call a row (:func:`cost_models.cpu.nchwc_conv_calls`); the first
row's call brings that slice of the filter in. Over wide maps both are lost in the FMAs; over 2 x
2 to 7 x 7 maps they are most of the time: on an AMD EPYC (Zen 5, onnxruntime 1.32, 1 thread), a
192-channel 3x3 conv over 4 x 4 ran 1.47x its FMAs at the calibrated rate of wide maps, over 2 x 2
1.8x, and RepVGG at 64 x 64 came out -42..-48 %.

The probes (:data:`NCHWC_PROBES`): 3x3 convs of 64-192 channels, padding 1, over 2 x 2 to 28 x 28,
each timed as a chain of :data:`CHAIN_LONG` convs less one of :data:`CHAIN_SHORT` (the reorders,
the dispatch and the run call cancel), a filter of its own per conv, as a model's. Each conv's
time less its filter read once at the rate of the cache level that holds the chain's filters, fit
by least squares to its FMAs inside the rows (:func:`cost_models.cpu.valid_tap_share`) at the fp32
peak and its kernel calls (:func:`nchwc_fields`); the calls' figure is the field, the FMAs'
(about 0.95 of the peak) is left to the calibration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from cost_models.cpu import NCHWC_ATTR, holding_gbps, nchwc_conv_calls, valid_tap_share
from graph_ir.ir import Op, Tensor
from hwsim.host.measure import make_session, time_session

__all__ = ["CHAIN_LONG", "CHAIN_SHORT", "NCHWC_DERIVED", "NCHWC_PROBES", "nchwc_chain", "nchwc_fields", "nchwc_times"]

#: The probes, key -> (channels in and out, map side): 3x3 convs of stride 1 and padding 1. One
#: wide map sets the FMAs' rate, the small ones the calls.
NCHWC_PROBES = {
    "nchwc_probe_ns:c64:28": (64, 28),
    "nchwc_probe_ns:c64:4": (64, 4),
    "nchwc_probe_ns:c128:2": (128, 2),
    "nchwc_probe_ns:c128:4": (128, 4),
    "nchwc_probe_ns:c128:8": (128, 8),
    "nchwc_probe_ns:c192:4": (192, 4),
}
#: The chip field :func:`nchwc_fields` derives.
NCHWC_DERIVED = ("nchwc_call_ns",)
#: The two chain lengths whose difference times one conv.
CHAIN_LONG, CHAIN_SHORT = 8, 2


def _op(channels: int, side: int, block: int = 16) -> Op:
    x, y = Tensor("x", (1, channels, side, side), "f"), Tensor("y", (1, channels, side, side), "f")
    w = Tensor("w", (channels, channels, 3, 3), "f", True)
    macs = channels * channels * 9 * side * side
    return Op("c", "Conv", "conv", (x, w), (y,), {"pads": [1] * 4, NCHWC_ATTR: block}, macs, 2 * macs)


def nchwc_chain(channels: int, side: int, length: int) -> onnx.ModelProto:
    """``length`` 3x3 convs of ``channels`` -> ``channels`` over ``side`` x ``side``, padding 1,
    each with its own filter and a Relu (fused into it), in a chain (input ``x``)."""
    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "x"
    for i in range(length):
        inits += [numpy_helper.from_array((rng.standard_normal((channels, channels, 3, 3)) * 0.05).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(channels, np.float32), f"b{i}")]  # fmt: skip
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]  # fmt: skip
        x = f"r{i}"
    graph = helper.make_graph(nodes, "nchwc", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, channels, side, side])],
                              [helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None)], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def nchwc_times(rounds: int = 3) -> dict[str, float]:
    """Each probe of :data:`NCHWC_PROBES`: one conv's time, ns, the fastest run of a chain of
    :data:`CHAIN_LONG` less that of :data:`CHAIN_SHORT` over ``rounds`` rounds, the probes
    interleaved. A probe whose difference is not positive is left out."""
    sessions = {key: {n: make_session(nchwc_chain(c, side, n), 1, "all") for n in (CHAIN_SHORT, CHAIN_LONG)}
                for key, (c, side) in NCHWC_PROBES.items()}  # fmt: skip
    feeds = {key: {"x": np.random.default_rng(1).standard_normal((1, c, side, side)).astype(np.float32)}
             for key, (c, side) in NCHWC_PROBES.items()}  # fmt: skip
    best: dict[str, dict[int, float]] = {key: {} for key in NCHWC_PROBES}
    for _ in range(rounds):
        for key, by_length in sessions.items():
            for n, sess in by_length.items():
                t = time_session(sess, feeds[key], runs=20, warmup=3, min_total_s=0.02).min_ns
                best[key][n] = min(best[key].get(n, t), t)
    out = {key: (t[CHAIN_LONG] - t[CHAIN_SHORT]) / (CHAIN_LONG - CHAIN_SHORT) for key, t in best.items()}
    return {key: t for key, t in out.items() if t > 0}


def _work(channels: int, side: int, peak_flops_per_ns: float) -> tuple[float, int, int]:
    """(the probe conv's FMAs inside the rows at the peak, ns; its kernel calls; its filter bytes)."""
    op = _op(channels, side)
    return op.flops * valid_tap_share(op) / peak_flops_per_ns, nchwc_conv_calls(op), channels * channels * 9 * 4


def nchwc_fields(rates: Mapping[str, float], peak_flops_per_ns: float, levels: Sequence[tuple[float, float]],
                 dram_gbps: float) -> dict[str, float]:  # fmt: skip
    """``nchwc_call_ns`` from the probe times in ``rates``, the fp32 peak (FLOP/ns) and the host's
    cache ``levels`` ((KiB, GB/s), L1 first) and DRAM rate: each probe's time less its filter at
    the rate of the level holding :data:`CHAIN_LONG` filters, fit by least squares (each probe
    weighed by its time) to its FMAs inside the rows at the peak and its kernel calls. Empty where a
    probe is missing or either coefficient is not positive.

    >>> levels = [(48.0, 300.0), (1024.0, 200.0), (32768.0, 100.0)]
    >>> def t(c, side):  # a host of 40 ns a call, its FMAs at 0.9 of 32 FLOP/ns
    ...     fma, calls, filter_bytes = _work(c, side, 32.0 * 0.9)
    ...     return fma + 40 * calls + filter_bytes / 100
    >>> nchwc_fields({k: t(*s) for k, s in NCHWC_PROBES.items()}, 32.0, levels, 40.0)
    {'nchwc_call_ns': 40.0}
    """
    if peak_flops_per_ns <= 0 or any(key not in rates for key in NCHWC_PROBES):
        return {}
    times, design = [], []
    for key, (c, side) in NCHWC_PROBES.items():
        fma, calls, filter_bytes = _work(c, side, peak_flops_per_ns)
        times.append(rates[key] - filter_bytes / (holding_gbps(list(levels), CHAIN_LONG * filter_bytes) or dram_gbps))
        design.append([fma, calls])
    weight = np.array([rates[key] for key in NCHWC_PROBES])
    coef, *_ = np.linalg.lstsq(np.array(design) / weight[:, None], np.array(times) / weight, rcond=None)
    fma_factor, call = (float(c) for c in coef)
    if fma_factor <= 0 or call <= 0:
        return {}
    return {"nchwc_call_ns": round(call, 2)}
