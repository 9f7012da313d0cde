"""What onnxruntime's NCHWc depthwise conv pays per output on this host: the fingerprint's
``depthwise_tile_ns``, ``depthwise_output_ns`` and ``depthwise_tap_ns``
(:func:`cost_models.cpu.measured_depthwise_ns`).

onnxruntime 1.32 on AVX-512 runs a depthwise conv of stride and dilation 1 along the width and a
3, 5 or 7 wide kernel on MLAS's sliding-window kernel: each output row in tiles of 12, 10 or 8
outputs (:data:`cost_models.cpu.DEPTHWISE_TILE_OUTPUTS`), a tile that reaches into the padding
with masked loads and FMAs. Others (strided along the width, dilated, other widths) go to the
assembly kernel, which reloads the input for every tap. Measured on an AMD EPYC (Zen 5, 1 thread,
2026-12-07), chains of 16 depthwise convs of 64 channels and the same outputs, per output:

======================  =========  =========  =========
rows of                 3x3        5x5        7x7
======================  =========  =========  =========
ten tiles (two masked)  0.111 ns   0.237      0.405
one tile (masked)       0.216      0.452      0.532
======================  =========  =========  =========

so a masked tile costs 1.4-2.5x an inside one, and a row of 24 outputs at 3x3 (both tiles
masked) 0.21-0.22 ns an output where rows of 96 take 0.13: priced by the taps at one rate, the
narrow rows of a MobileNet's last stages came out 12-20 % fast and chains of them 23-38 %. At
stride 2 (the assembly kernel) a 3x3 took 0.23 ns an output and a 7x7 0.65.

The probes (:data:`DEPTHWISE_PROBES`): per kernel width, chains of convs whose rows hold ten tiles
and one, timed as the difference between chains of 16 and of 1 (the dispatch, the reorders and the
run cancel); and one strided 3x3 and 7x7 conv each, profiled alone, less the profiler's time for an
empty kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from cost_models.cpu import (
    DEPTHWISE_TILE_OUTPUTS,
    NCHWC_PASS_ACTIVATIONS,
    depthwise_row_tiles,
    valid_tap_share,
)
from graph_ir.ir import Op, Tensor
from hwsim.host.measure import make_session, profile_nodes, time_session

__all__ = ["BLOCK", "CHAIN_CONVS", "DEPTHWISE_DERIVED", "DEPTHWISE_PROBES", "depthwise_fields", "depthwise_probe", "depthwise_times"]

#: Channels of every probe (four NCHWc blocks), and how many convs the long chain holds.
PROBE_CHANNELS, CHAIN_CONVS = 64, 16
#: Channels of an NCHWc block on AVX-512 (the sliding kernel's only block size).
BLOCK = 16
#: Per probe key, ``(kernel width, output rows, output width, stride)``: for each width the sliding
#: kernel takes, rows of ten tiles (two of them masked) and rows of one (masked); 3x3 rows of 3
#: outputs (one short masked tile: a row's own cost) and a 3x3 map (the kernel's set-up per call); the 3x3 rows of ten tiles again with a fused Clip (MLAS's activation pass); a 3x3 and a 7x7 at stride 2 (the
#: assembly kernel). Inputs of 0.4-0.6 MB, in the L2 of the hosts measured.
DEPTHWISE_PROBES: dict[str, tuple[int, int, int, int]] = {
    **{f"depthwise_probe_ns:{k}": (k, 12, 10 * t, 1) for k, t in DEPTHWISE_TILE_OUTPUTS.items()},
    **{f"depthwise_probe_ns:{k}:masked": (k, 120, t, 1) for k, t in DEPTHWISE_TILE_OUTPUTS.items()},
    "depthwise_probe_ns:3:narrow": (3, 480, 3, 1),
    "depthwise_probe_ns:3:tiny": (3, 3, 3, 1),
    **{f"depthwise_probe_ns:3:{act}": (3, 12, 120, 1) for act in NCHWC_PASS_ACTIVATIONS},
    "depthwise_probe_ns:3:strided": (3, 24, 48, 2),
    "depthwise_probe_ns:7:strided": (7, 24, 48, 2),
}
#: The chip fields :func:`depthwise_fields` gives.
DEPTHWISE_DERIVED = ("depthwise_tile_ns", "depthwise_row_ns", "depthwise_call_ns", "depthwise_output_ns", "depthwise_tap_ns", "nchwc_activation_pass_ns")


def _probe_op(k: int, rows: int, width: int, stride: int) -> Op:
    """The graph op of one probe conv (``same`` padding), for its tiles and its share of kernel rows."""
    x = Tensor("x", (1, PROBE_CHANNELS, rows * stride, width * stride), "float32")
    w = Tensor("w", (PROBE_CHANNELS, 1, k, k), "float32", True)
    y = Tensor("y", (1, PROBE_CHANNELS, rows, width), "float32")
    return Op("dw", "Conv", "conv", (x, w), (y,), {"group": PROBE_CHANNELS, "pads": [k // 2] * 4, "strides": [stride] * 2})


def depthwise_probe(k: int, rows: int, width: int, stride: int, convs: int, activation: str = "") -> onnx.ModelProto:
    """``convs`` depthwise ``k x k`` convs (with a bias; the ``activation`` after each where given,
    a ``Clip`` to 0..6) of :data:`PROBE_CHANNELS` giving ``rows x width`` outputs at ``stride``: a
    chain at stride 1, side by side on the one input otherwise (each its own output)."""
    rng = np.random.default_rng(0)
    shape = [1, PROBE_CHANNELS, rows * stride, width * stride]
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    outputs: list[onnx.ValueInfoProto] = []
    x = "x"
    for i in range(convs):
        inits += [numpy_helper.from_array((rng.standard_normal((PROBE_CHANNELS, 1, k, k)) * 0.3).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(PROBE_CHANNELS, np.float32), f"b{i}")]  # fmt: skip
        nodes.append(helper.make_node("Conv", [x if stride == 1 else "x", f"w{i}", f"b{i}"], [f"c{i}"], name=f"dw{i}",
                                      group=PROBE_CHANNELS, kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride] * 2))  # fmt: skip
        x = f"c{i}"
        if activation:
            args = [x, "low", "high"] if activation == "Clip" else [x]
            nodes.append(helper.make_node(activation, args, [f"a{i}"], name=f"act{i}"))
            x = f"a{i}"
        if stride > 1 or i == convs - 1:
            outputs.append(helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None))
    inits += [numpy_helper.from_array(np.array(v, np.float32), name) for name, v in (("low", 0.0), ("high", 6.0))] if activation == "Clip" else []
    graph = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _chain_ns(spec: tuple[int, int, int, int], feed: np.ndarray, rounds: int, kernel_ns: float, activation: str) -> float:
    """One conv of a stride-1 probe: the fastest chain of :data:`CHAIN_CONVS` less the fastest of
    one, over the convs added, less ``kernel_ns`` (onnxruntime's dispatch of each), ns."""
    def fastest(convs: int) -> float:
        sess = make_session(depthwise_probe(*spec, convs, activation), 1, "all")
        return min(time_session(sess, {"x": feed}, runs=20, warmup=3, min_total_s=0.02).min_ns for _ in range(rounds))

    return (fastest(CHAIN_CONVS) - fastest(1)) / (CHAIN_CONVS - 1) - kernel_ns


def _profiled_ns(spec: tuple[int, int, int, int], feed: np.ndarray, rounds: int, empty_ns: float) -> float:
    """One conv of a strided probe alone: its fastest profiled kernel time less ``empty_ns``, the
    profiler's time for an empty kernel, ns."""
    model = depthwise_probe(*spec, 1)
    times = [ns for _ in range(rounds) for name, (_, ns) in profile_nodes(model, {"x": feed}, runs=10).items()
             if not name.startswith("Reorder")]  # fmt: skip
    return min(times) - empty_ns


def depthwise_times(rounds: int = 3, kernel_ns: float = 0.0, empty_ns: float = 0.0) -> dict[str, float]:
    """Each probe of :data:`DEPTHWISE_PROBES`: ns per output element (a channel at a pixel), less
    onnxruntime's dispatch per kernel ``kernel_ns`` (a chain's) or the profiler's time for an
    empty kernel ``empty_ns`` (a profiled conv's)."""
    out: dict[str, float] = {}
    for key, spec in DEPTHWISE_PROBES.items():
        _, rows, width, stride = spec
        feed = np.random.default_rng(1).standard_normal((1, PROBE_CHANNELS, rows * stride, width * stride)).astype(np.float32)
        act = last if (last := key.rsplit(":", 1)[-1]) in NCHWC_PASS_ACTIVATIONS else ""
        ns = _chain_ns(spec, feed, rounds, kernel_ns, act) if stride == 1 else _profiled_ns(spec, feed, rounds, empty_ns)
        out[key] = ns / (PROBE_CHANNELS * rows * width)
    return out


def _per_row(key: str, rates: Mapping[str, float], call_ns: float = 0.0) -> tuple[float, float, int, int] | None:
    """A stride-1 probe's time per output row of a block of channels (less its share of the
    kernel's set-up per call ``call_ns``), its share of kernel rows inside the input and its
    outputs inside and masked per row; None when not measured."""
    if (ns := rates.get(key)) is None:
        return None
    op = _probe_op(*DEPTHWISE_PROBES[key])
    inside, masked = depthwise_row_tiles(op) or (0, 0)
    rows = op.outputs[0].elements / (inside + masked) / BLOCK
    return ns * (inside + masked) * BLOCK - call_ns / rows, valid_tap_share(op), inside, masked


def _row_ns(rates: Mapping[str, float], call_ns: float) -> float:
    """``depthwise_row_ns``: the 3x3 rows of 12 and of 3 outputs, all masked, as a row's cost plus
    one cost per masked output at the full kernel height; 0 when not resolved (not positive)."""
    long, short = (_per_row(f"depthwise_probe_ns:3:{end}", rates, call_ns) for end in ("masked", "narrow"))
    if long is None or short is None:
        return 0.0
    per_output = (long[0] - short[0]) / (long[1] * long[3] - short[1] * short[3])
    return max(0.0, short[0] - per_output * short[1] * short[3])


def _tiles(rates: Mapping[str, float], row_ns: float, call_ns: float) -> dict[int, tuple[float, float]]:
    """``depthwise_tile_ns`` from the probe times in ``rates`` beside a row's ``row_ns`` and a call's
    ``call_ns`` (see :func:`depthwise_fields`)."""
    tiles: dict[int, tuple[float, float]] = {}
    for k in DEPTHWISE_TILE_OUTPUTS:
        wide, one = (_per_row(f"depthwise_probe_ns:{k}{end}", rates, call_ns) for end in ("", ":masked"))
        if wide is None or one is None:
            continue
        masked = (one[0] - row_ns) / one[1] / one[3] / BLOCK
        inside = ((wide[0] - row_ns) / wide[1] - masked * wide[3] * BLOCK) / max(1, wide[2]) / BLOCK
        if inside > 0 and masked > 0:
            tiles[k] = (inside, masked)
    return tiles


def _sliding(rates: Mapping[str, float]) -> dict[str, Any]:
    """``depthwise_tile_ns``, ``depthwise_row_ns`` and ``depthwise_call_ns`` from the stride-1
    probes' times, those resolved: the rows and tiles first, then the call as the 3x3 map's time
    less them, twice over (each probe's time holds a call)."""
    call_ns, row_ns, tiles = 0.0, 0.0, {}
    for _ in range(3):
        row_ns = _row_ns(rates, call_ns)
        tiles = _tiles(rates, row_ns, call_ns)
        if 3 not in tiles or (tiny := _per_row("depthwise_probe_ns:3:tiny", rates)) is None:
            break
        op = _probe_op(*DEPTHWISE_PROBES["depthwise_probe_ns:3:tiny"])
        rows = op.outputs[0].elements / (tiny[2] + tiny[3]) / BLOCK
        call_ns = max(0.0, rows * (tiny[0] - row_ns - BLOCK * tiny[1] * (tiny[2] * tiles[3][0] + tiny[3] * tiles[3][1])))
    out: dict[str, Any] = {"depthwise_tile_ns": {k: (round(i, 4), round(m, 4)) for k, (i, m) in tiles.items()}} if tiles else {}
    if tiles and (row := round(row_ns, 2)) > 0:
        out["depthwise_row_ns"] = row
    if tiles and (call := round(call_ns, 1)) > 0:
        out["depthwise_call_ns"] = call
    return out


def _assembly(rates: Mapping[str, float]) -> dict[str, float]:
    """``depthwise_output_ns`` and ``depthwise_tap_ns`` from the strided probes' times in ``rates``."""
    per_tap = {}
    for k in (3, 7):
        if (ns := rates.get(f"depthwise_probe_ns:{k}:strided")) is not None:
            per_tap[k * k * valid_tap_share(_probe_op(*DEPTHWISE_PROBES[f"depthwise_probe_ns:{k}:strided"]))] = ns
    if len(per_tap) < 2:
        return {}
    (t3, ns3), (t7, ns7) = sorted(per_tap.items())
    tap = (ns7 - ns3) / (t7 - t3)
    output = ns3 - tap * t3
    return {"depthwise_output_ns": round(output, 4), "depthwise_tap_ns": round(tap, 5)} if tap > 0 and output > 0 else {}


def depthwise_fields(rates: Mapping[str, float]) -> dict[str, Any]:
    """The chip fields of :data:`DEPTHWISE_DERIVED` from the probe times in ``rates``, each at the
    full kernel height (a probe's time over its share of kernel rows inside the input,
    :func:`~cost_models.cpu.valid_tap_share`), those resolved (positive):

    - ``depthwise_row_ns``: a row's own cost (an output row of a block of channels), from the 3x3
      rows of one tile of 12 and of 3 outputs;
    - ``depthwise_call_ns``: the kernel's set-up per call, the 3x3 map's time less its rows and tiles;
    - ``depthwise_tile_ns``: per kernel width, a masked tile's cost per output from the rows of one
      tile, and an inside one's from the rows of ten, each less a call's cost and the second less
      its masked outputs at that masked cost (:func:`~cost_models.cpu.depthwise_row_tiles`);
    - ``depthwise_output_ns`` and ``depthwise_tap_ns``: the line through the strided 3x3 and 7x7
      probes' times against their taps;
    - ``nchwc_activation_pass_ns``: what each fused activation adds per output.

    >>> depthwise_fields({"depthwise_probe_ns:3": 0.111, "depthwise_probe_ns:3:masked": 0.216, "depthwise_probe_ns:3:Clip": 0.2})
    {'depthwise_tile_ns': {3: (0.0926, 0.2172)}, 'nchwc_activation_pass_ns': {'Clip': 0.089}}
    """
    out = _sliding(rates)
    plain = rates.get("depthwise_probe_ns:3")
    passes = {act: round(ns - plain, 4) for act in NCHWC_PASS_ACTIVATIONS
              if plain is not None and (ns := rates.get(f"depthwise_probe_ns:3:{act}")) is not None and ns > plain}  # fmt: skip
    if passes:
        out["nchwc_activation_pass_ns"] = passes
    return out | _assembly(rates)
