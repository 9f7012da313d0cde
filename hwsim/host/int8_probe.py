"""Rates of onnxruntime's integer (QDQ) kernels, measured for a fingerprint: what an int8 model
runs (:mod:`hwsim.host.ort_qdq`) and no fp32 calibration model shows.

The fingerprint's ``int8`` peak is a large ``MatMulInteger`` (768 cubed; AMX on the CI Xeon, ~2.1
TOP/s). The kernels of a QDQ model run far from it: ``QLinearConv`` (channels-last im2col, then a
U8S8 GEMM, then requantization of every output to uint8) at 0.3-0.35 of it, ``QLinearMatMul``
at 0.3-0.6, and the per-element kernels (``QuantizeLinear``, ``DequantizeLinear``,
``QLinearAdd``) at 0.1-0.25 ns per element, where the CPU model's category defaults say 10x
less. Small probe models (a channels-last conv block and a MatMul, hand-written QDQ, shapes
none of the held-out int8 models use) are profiled and each kernel's time becomes that kernel
class's efficiency (:func:`hwsim.host.kernels.int8_efficiencies`, like ``LayerNormalization``'s and Resize's in
:mod:`hwsim.host.kernels`). Narrow convs (MLAS's symmetric kernel against its im2col path:
:func:`conv_pixel_from`, :func:`im2col_pixel_from`) and one-row ``QGemm`` s (a fixed set-up per call
beside the weight stream, timed in whole runs: :func:`gemv_call_times`) give chip fields of their
own (:func:`cost_models.cpu.integer_conv_ns`, :func:`cost_models.cpu.one_row_call_ns`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph_ir.ir import Op
from hwsim.host.measure import best_run_ns, profile_nodes

__all__ = [
    "ATTENTION_MATMUL",
    "ATTENTION_PROBE",
    "CONV_CALL_CHAINS",
    "CONV_CALL_CHANNELS",
    "CONV_CALL_PROBES",
    "CONV_INTEGER_WEIGHTS",
    "CONV_PROBE",
    "DEEP_CONV",
    "DEEP_CONV_PROBE",
    "GEMV_FAR_PROBE",
    "GEMV_LAYERS",
    "GEMV_PROBES",
    "IM2COL_CONV",
    "INT8_PROBES",
    "INT8_RATES",
    "MATMUL_PROBE",
    "MATMUL_PROBE_K",
    "NARROW_CONV",
    "NARROW_CONV_PROBES",
    "SHORT_MATMUL",
    "attention_probe",
    "conv_call_from",
    "conv_call_times",
    "conv_chain_probe",
    "conv_integer_probe",
    "conv_l2_mac_from",
    "conv_mac_from",
    "conv_pixel_from",
    "conv_probe",
    "gemv_call_from",
    "gemv_call_times",
    "gemv_probe",
    "im2col_pixel_from",
    "int8_kernel_ns",
    "matmul_probe",
    "narrow_conv_probe",
    "pack_from",
    "probe_kernels",
    "requant_from",
]  # fmt: skip

#: The conv probe: 3x3 conv of C -> C channels over an S x S plane (59 M MACs, 0.1 M elements
#: per tensor), its output added to its input (``QLinearAdd``).
CONV_PROBE = (64, 40)
#: The MatMul probes: (rows, N) and the two K (the requantization per output is what the short K
#: pays beyond its MACs; :func:`requant_from`).
MATMUL_PROBE = (96, 512)
MATMUL_PROBE_K = (128, 2048)
#: Integer kernel class -> the key of its profiled time in :func:`int8_kernel_ns` (ns per probe
#: kernel, less the profiler's empty kernel; not a chip field: :func:`hwsim.host.kernels.int8_efficiencies` turns it
#: into an efficiency). ``QLinearMatMul``: the long-K probe.
INT8_RATES: Mapping[str, str] = {
    "QLinearConv": "qlinear_conv_probe_ns",
    "QLinearAdd": "qlinear_add_probe_ns",
    "QuantizeLinear": "quantize_probe_ns",
    "DequantizeLinear": "dequantize_probe_ns",
    "QLinearMatMul": "qlinear_matmul_probe_ns",
    "ConvInteger": "conv_integer_probe_ns",
    "ConvIntegerS8": "conv_integer_s8_probe_ns",
}
#: The weight dtype of each ``ConvInteger`` kernel class (:func:`cost_models.cpu.kernel_type`):
#: ``quantize_dynamic`` writes int8 weights by default, uint8 on request, and onnxruntime runs the
#: two on different kernels (a ResNet-like CNN on an AMD EPYC: 4.7 ms fp32, 5.0 ms with uint8
#: weights, 19.8 ms with int8 ones).
CONV_INTEGER_WEIGHTS: Mapping[str, int] = {"ConvInteger": TensorProto.UINT8, "ConvIntegerS8": TensorProto.INT8}
#: Key of the short-K MatMul probe's time (:func:`requant_from`).
SHORT_MATMUL = "qlinear_matmul_short_probe_ns"
#: The attention probe (heads, rows, width): its QLinearMatMul packs a B of heads x width x rows
#: elements at every run (:func:`pack_from`); its time's key.
ATTENTION_PROBE = (4, 96, 96)
ATTENTION_MATMUL = "qlinear_matmul_attention_probe_ns"
#: Narrow-channel conv probes (input, output channels; over the :data:`CONV_PROBE` plane) by their
#: time's key: 8 -> 16 runs on MLAS's symmetric kernel like the 64-channel probe (their difference is
#: MACs: :func:`conv_pixel_from`), 3 -> 16 (a stem) as im2col and a GEMM (:func:`im2col_pixel_from`).
NARROW_CONV = "qlinear_conv_narrow_probe_ns"
IM2COL_CONV = "qlinear_conv_im2col_probe_ns"
NARROW_CONV_PROBES: Mapping[str, tuple[int, int]] = {NARROW_CONV: (8, 16), IM2COL_CONV: (3, 16)}
#: A deep conv (input, output channels) on the same plane, whose filter (64 output channels x 256
#: x 9 = 144 KB) no L1 holds: :func:`conv_l2_mac_from`.
DEEP_CONV = "qlinear_conv_deep_probe_ns"
DEEP_CONV_PROBE = (256, 64)
#: One-row ``QGemm`` probes by their time's key: N (N x N int8 weights; :data:`GEMV_LAYERS` of them
#: in a chain stay in L2), timed in whole runs (:func:`gemv_call_times`), the fixed cost per call and
#: the weight stream's rate from the two (:func:`gemv_call_from`).
GEMV_PROBES: Mapping[str, int] = {"qgemm_gemv_small_probe_ns": 64, "qgemm_gemv_large_probe_ns": 512}
GEMV_LAYERS = 4
#: The one-row ``QGemm`` probe whose weights no L2 holds (1792 x 1792 int8, 3 MiB, :data:`GEMV_LAYERS`
#: of them 12 MiB: in the L3), timed with :data:`GEMV_PROBES`: the rate of the stream from beyond L2
#: (:func:`gemv_far_from`). On an AMD EPYC chains of 1536-3072 ran 76-80 GB/s a layer, calls included,
#: where the float kernel's far rate (``gemv_far_gbps``) is 85.
GEMV_FAR_PROBE = ("qgemm_gemv_far_probe_ns", 1792)
#: Per-call conv probes by their time's key: the side of the plane a chain of
#: :data:`CONV_CALL_CHANNELS` -> :data:`CONV_CALL_CHANNELS` 3x3 QLinearConvs runs over, timed in whole
#: runs (:func:`conv_call_times`): the time one call takes whatever its pixels, from the two
#: (:func:`conv_call_from`).
CONV_CALL_PROBES: Mapping[str, int] = {"qlinear_conv_call_small_probe_ns": 16, "qlinear_conv_call_large_probe_ns": 40}
CONV_CALL_CHANNELS = 16
#: The two chain lengths (convs) whose times :func:`conv_call_times` subtracts (the layout
#: transposes around a chain cancel).
CONV_CALL_CHAINS = (1, 5)
#: Every probe time's key (none is a chip field).
INT8_PROBES = frozenset((*INT8_RATES.values(), SHORT_MATMUL, ATTENTION_MATMUL, *NARROW_CONV_PROBES, DEEP_CONV, *GEMV_PROBES, GEMV_FAR_PROBE[0],
                         *CONV_CALL_PROBES))  # fmt: skip


def _qdq(name: str, scale: float, zero: int, dtype: int) -> list[onnx.TensorProto]:
    np_type = np.uint8 if dtype == TensorProto.UINT8 else np.int8
    return [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
            numpy_helper.from_array(np.array(zero, np_type), f"{name}_z")]  # fmt: skip


def _model(nodes: list[onnx.NodeProto], x_shape: list[int], out: str, inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "int8_probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _quantized_weight(name: str, shape: tuple[int, ...], axis: int | None) -> tuple[list[onnx.TensorProto], onnx.NodeProto]:
    """An int8 initializer (per-channel along ``axis``, or per-tensor) and its DequantizeLinear."""
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, shape).astype(np.int8)
    n = shape[axis] if axis is not None else 1
    scale = np.full(n, 0.01, np.float32) if axis is not None else np.array(0.01, np.float32)
    zero = np.zeros(n, np.int8) if axis is not None else np.array(0, np.int8)
    inits = [numpy_helper.from_array(w, f"{name}_q"), numpy_helper.from_array(scale, f"{name}_s"),
             numpy_helper.from_array(zero, f"{name}_z")]  # fmt: skip
    node = helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name], name=f"dq_{name}")
    if axis is not None:
        node.attribute.append(helper.make_attribute("axis", axis))
    return inits, node


def _act(src: str, dst: str, tag: str) -> list[onnx.NodeProto]:
    """QuantizeLinear then DequantizeLinear of an activation (uint8, per tensor)."""
    return [helper.make_node("QuantizeLinear", [src, f"{tag}_s", f"{tag}_z"], [f"{dst}_u8"], name=f"q_{tag}"),
            helper.make_node("DequantizeLinear", [f"{dst}_u8", f"{tag}_s", f"{tag}_z"], [dst], name=f"dq_{tag}")]  # fmt: skip


def conv_probe() -> onnx.ModelProto:
    """x -> Q/DQ -> 3x3 Conv (per-channel int8 weights) -> Q/DQ, + the quantized x -> Q/DQ: as
    onnxruntime runs it, ``QuantizeLinear``, ``Transpose``, ``QLinearConv``, ``QLinearAdd``,
    ``Transpose``, ``DequantizeLinear`` (:data:`CONV_PROBE`)."""
    c, s = CONV_PROBE
    w_inits, dq_w = _quantized_weight("w", (c, c, 3, 3), 0)
    u8 = TensorProto.UINT8
    inits = [*w_inits, *_qdq("x", 0.02, 128, u8), *_qdq("c", 0.05, 128, u8), *_qdq("a", 0.06, 128, u8)]
    nodes = [*_act("x", "xd", "x"), dq_w, helper.make_node("Conv", ["xd", "w"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             *_act("conv", "cd", "c"), helper.make_node("Add", ["cd", "xd"], ["add"], name="add"), *_act("add", "y", "a")]  # fmt: skip
    return _model(nodes, [1, c, s, s], "y", inits)


def conv_integer_probe(weights: int) -> onnx.ModelProto:
    """x -> ``DynamicQuantizeLinear`` -> 3x3 ``ConvInteger`` with ``weights`` (TensorProto.UINT8 or
    INT8) weights -> ``Cast`` to float -> ``Mul`` by the scales, as ``quantize_dynamic`` writes a conv
    (:data:`CONV_PROBE`'s shape; its nodes named ``dql`` and ``conv``)."""
    c, s = CONV_PROBE
    rng = np.random.default_rng(2)
    info = onnx.helper.tensor_dtype_to_np_dtype(weights)
    lo, hi = (0, 255) if weights == TensorProto.UINT8 else (-127, 127)
    inits = [numpy_helper.from_array(rng.integers(lo, hi, (c, c, 3, 3)).astype(info), "w"),
             numpy_helper.from_array(np.array(128 if weights == TensorProto.UINT8 else 0, info), "wz"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws")]  # fmt: skip
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["acc"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Cast", ["acc"], ["f"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Mul", ["xs", "ws"], ["scale"], name="scales"),
             helper.make_node("Mul", ["f", "scale"], ["y"], name="mul")]  # fmt: skip
    return _model(nodes, [1, c, s, s], "y", inits)


def narrow_conv_probe(cin: int, cout: int) -> onnx.ModelProto:
    """x -> Q/DQ -> 3x3 Conv of ``cin`` -> ``cout`` channels (per-channel int8 weights) -> Q/DQ on the
    :data:`CONV_PROBE` plane: ``QuantizeLinear``, ``Transpose``, ``QLinearConv``, ``Transpose``,
    ``DequantizeLinear``."""
    side = CONV_PROBE[1]
    w_inits, dq_w = _quantized_weight("w", (cout, cin, 3, 3), 0)
    u8 = TensorProto.UINT8
    inits = [*w_inits, *_qdq("x", 0.02, 128, u8), *_qdq("c", 0.05, 128, u8)]
    nodes = [*_act("x", "xd", "x"), dq_w, helper.make_node("Conv", ["xd", "w"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             *_act("conv", "y", "c")]  # fmt: skip
    return _model(nodes, [1, cin, side, side], "y", inits)


def gemv_probe(n: int, layers: int = GEMV_LAYERS) -> onnx.ModelProto:
    """x (one row of ``n``) -> Q/DQ -> ``layers`` Gemms with ``n`` x ``n`` int8 weights (per tensor,
    as ``quantize_static`` writes an MLP), each output Q/DQ: ``QuantizeLinear``, ``layers`` x
    ``QGemm``, ``DequantizeLinear`` (``layers`` 0: the Q/DQ alone)."""
    u8 = TensorProto.UINT8
    inits, nodes, x = [*_qdq("x", 0.02, 128, u8)], _act("x", "h0", "x"), "h0"
    for i in range(layers):
        w_inits, dq_w = _quantized_weight(f"w{i}", (n, n), None)
        inits += [*w_inits, *_qdq(f"g{i}", 0.5, 128, u8)]
        nodes += [dq_w, helper.make_node("Gemm", [x, f"w{i}"], [f"gemm{i}"], name=f"gemm{i}", transB=1),
                  *_act(f"gemm{i}", f"h{i + 1}", f"g{i}")]  # fmt: skip
        x = f"h{i + 1}"
    return _model(nodes, [1, n], x, inits)


def gemv_call_times(rounds: int = 3) -> dict[str, float]:
    """What one one-row ``QGemm`` adds to a timed run, ns, per :data:`GEMV_PROBES` key (and
    :data:`GEMV_FAR_PROBE`'s): a chain of
    :data:`GEMV_LAYERS` of them less its Q/DQ alone, over :data:`GEMV_LAYERS`; the 10th percentile
    of 200 runs, the four sessions interleaved over ``rounds`` rounds and the best round kept (as
    :func:`hwsim.host.fingerprint.measure_dispatch` times the dispatch). Timed, not profiled: the
    profiler counts whole microseconds, and these take 1-3. About 0.2 s on the CI Xeon.
    """
    rng = np.random.default_rng(1)
    probes = {**GEMV_PROBES, GEMV_FAR_PROBE[0]: GEMV_FAR_PROBE[1]}
    models = {(n, layers): (gemv_probe(n, layers), rng.standard_normal((1, n)).astype(np.float32))
              for n in probes.values() for layers in (0, GEMV_LAYERS)}  # fmt: skip
    best = best_run_ns(models, rounds)
    return {k: (best[(n, GEMV_LAYERS)] - best[(n, 0)]) / GEMV_LAYERS for k, n in probes.items()}


def conv_chain_probe(side: int, layers: int) -> onnx.ModelProto:
    """x -> Q/DQ -> ``layers`` x (3x3 Conv of :data:`CONV_CALL_CHANNELS` channels, per-channel int8
    weights -> Q/DQ) over a ``side`` x ``side`` plane: ``QuantizeLinear``, ``Transpose``, ``layers``
    x ``QLinearConv`` on MLAS's symmetric kernel, ``Transpose``, ``DequantizeLinear``."""
    c, u8 = CONV_CALL_CHANNELS, TensorProto.UINT8
    inits, nodes, x = [*_qdq("x", 0.02, 128, u8)], _act("x", "h0", "x"), "h0"
    for i in range(layers):
        w_inits, dq_w = _quantized_weight(f"w{i}", (c, c, 3, 3), 0)
        inits += [*w_inits, *_qdq(f"c{i}", 0.05, 128, u8)]
        nodes += [dq_w, helper.make_node("Conv", [x, f"w{i}"], [f"conv{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  *_act(f"conv{i}", f"h{i + 1}", f"c{i}")]  # fmt: skip
        x = f"h{i + 1}"
    return _model(nodes, [1, c, side, side], x, inits)


def conv_call_times(rounds: int = 3) -> dict[str, float]:
    """What one QLinearConv adds to a timed run, ns, per :data:`CONV_CALL_PROBES` key: the
    longer chain of :data:`CONV_CALL_CHAINS` less the shorter, over their difference; the 10th
    percentile of 200 runs, the sessions interleaved over ``rounds`` rounds and the best round
    kept (as :func:`gemv_call_times`). Timed, not profiled: the profiler counts whole
    microseconds, and the per-call cost is about one. About 0.3 s on an AMD EPYC."""
    rng = np.random.default_rng(1)
    c = CONV_CALL_CHANNELS
    models = {(side, n): (conv_chain_probe(side, n), rng.standard_normal((1, c, side, side)).astype(np.float32))
              for side in CONV_CALL_PROBES.values() for n in CONV_CALL_CHAINS}  # fmt: skip
    best = best_run_ns(models, rounds)
    short, long = CONV_CALL_CHAINS
    return {k: (best[(side, long)] - best[(side, short)]) / (long - short) for k, side in CONV_CALL_PROBES.items()}


def conv_call_from(rates: Mapping[str, float], kernel_ns: float) -> float | None:
    """``int8_conv_call_ns`` (:func:`cost_models.cpu.integer_conv_ns`): the time a QLinearConv
    call takes whatever its pixels, from the two per-call times of :func:`conv_call_times` (the
    same conv over two planes: their difference is per-pixel work only) less the dispatch
    ``kernel_ns``. On an AMD EPYC about 0.95 us (16 -> 16 channels: 5.9 us at 16 x 16, 30.3 at
    40 x 40, 76.2 at 64 x 64, each within 1 % of that line); a figure per pixel fitted on one
    plane had folded it in, and priced 64 x 64 planes 9 % slow and 16 x 16 ones 14 % fast. None
    when a time is missing or the figure is not positive.

    >>> r = {"qlinear_conv_call_small_probe_ns": 270 + 950 + 256 * 18.0, "qlinear_conv_call_large_probe_ns": 270 + 950 + 1600 * 18.0}
    >>> round(conv_call_from(r, 270.0), 3)
    950.0
    """
    if not CONV_CALL_PROBES.keys() <= rates.keys():
        return None
    (small_key, small), (large_key, large) = sorted(CONV_CALL_PROBES.items(), key=lambda kv: kv[1])
    per_pixel = (rates[large_key] - rates[small_key]) / (large * large - small * small)
    call_ns = rates[small_key] - kernel_ns - per_pixel * small * small
    return call_ns if per_pixel > 0 and call_ns > 0 else None


def matmul_probe(k: int = MATMUL_PROBE_K[1]) -> onnx.ModelProto:
    """x -> Q/DQ -> MatMul (per-tensor int8 weights) -> Q/DQ: ``QuantizeLinear``,
    ``QLinearMatMul``, ``DequantizeLinear`` (:data:`MATMUL_PROBE`, reduction length ``k``)."""
    m, n = MATMUL_PROBE
    w_inits, dq_w = _quantized_weight("w", (k, n), None)
    u8 = TensorProto.UINT8
    inits = [*w_inits, *_qdq("x", 0.02, 128, u8), *_qdq("m", 0.5, 128, u8)]
    nodes = [*_act("x", "xd", "x"), dq_w, helper.make_node("MatMul", ["xd", "w"], ["mm"], name="mm"), *_act("mm", "y", "m")]
    return _model(nodes, [1, m, k], "y", inits)


def attention_probe() -> onnx.ModelProto:
    """Scores of self-attention on 8-bit tensors: x -> Q/DQ -> MatMul(x, Transpose(x)) -> Q/DQ,
    ``x`` of :data:`ATTENTION_PROBE` (heads, rows, width): a ``QLinearMatMul`` whose B (the
    transposed x, heads x width x rows) is packed at every run."""
    heads, rows, width = ATTENTION_PROBE
    u8 = TensorProto.UINT8
    inits = [*_qdq("x", 0.02, 128, u8), *_qdq("s", 0.5, 128, u8)]
    nodes = [*_act("x", "xd", "x"), helper.make_node("Transpose", ["xd"], ["xt"], name="t", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["xd", "xt"], ["mm"], name="mm"), *_act("mm", "y", "s")]  # fmt: skip
    return _model(nodes, [1, heads, rows, width], "y", inits)


def int8_kernel_ns(rounds: int = 3, profiled_kernel_ns: float = 0.0) -> dict[str, float]:
    """The profiled time of each kernel class of :data:`INT8_RATES` in its probe (keyed by its
    rate key; the short-K MatMul under :data:`SHORT_MATMUL`), the fastest of ``rounds`` profiled
    runs of 10, less ``profiled_kernel_ns`` (what the profiler reports for an empty kernel: its own
    cost and the dispatch); ``QuantizeLinear`` and ``DequantizeLinear`` from the conv probe, the two
    ``ConvInteger`` classes from :func:`conv_integer_probe` (:data:`CONV_INTEGER_WEIGHTS`). A
    class whose kernel is not found is left out; the :data:`NARROW_CONV_PROBES` and
    :data:`DEEP_CONV_PROBE` under their keys.
    About 0.3 s on the CI Xeon."""
    out: dict[str, float] = {}
    probes = ((conv_probe(), {"QLinearConv": INT8_RATES["QLinearConv"], "QLinearAdd": INT8_RATES["QLinearAdd"],
                              "QuantizeLinear": INT8_RATES["QuantizeLinear"],
                              "DequantizeLinear": INT8_RATES["DequantizeLinear"]}),
              (matmul_probe(MATMUL_PROBE_K[0]), {"QLinearMatMul": SHORT_MATMUL}),
              (matmul_probe(MATMUL_PROBE_K[1]), {"QLinearMatMul": INT8_RATES["QLinearMatMul"]}),
              (attention_probe(), {"QLinearMatMul": ATTENTION_MATMUL}),
              *((narrow_conv_probe(*c), {"QLinearConv": key}) for key, c in NARROW_CONV_PROBES.items()),
              (narrow_conv_probe(*DEEP_CONV_PROBE), {"QLinearConv": DEEP_CONV}),
              *((conv_integer_probe(w), {"ConvInteger": INT8_RATES[kind]}) for kind, w in CONV_INTEGER_WEIGHTS.items()))  # fmt: skip
    for model, keys in probes:
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        for _ in range(rounds):
            for kind, ns in profile_nodes(model, {"x": x}, runs=10).values():
                if kind in keys:
                    key, net = keys[kind], max(ns - profiled_kernel_ns, 1.0)
                    out[key] = min(out.get(key, net), net)
    return out


def requant_from(rates: Mapping[str, float]) -> float | None:
    """``requant_ns`` (:func:`cost_models.cpu.requant_ns`) from the two MatMul probes: their
    difference is MACs only, so ``ns per MAC = (t_long - t_short) / (MACs_long - MACs_short)``,
    and the short one's time beyond its MACs over its outputs is the cost per output. None when
    either is missing or the figure is not positive.

    >>> round(requant_from({SHORT_MATMUL: 27250.0, INT8_RATES["QLinearMatMul"]: 112500.0}), 3)
    0.439
    """
    long_key = INT8_RATES["QLinearMatMul"]
    if SHORT_MATMUL not in rates or long_key not in rates:
        return None
    (m, n), (k1, k2) = MATMUL_PROBE, MATMUL_PROBE_K
    per_mac = (rates[long_key] - rates[SHORT_MATMUL]) / (m * n * (k2 - k1))
    per_out = (rates[SHORT_MATMUL] - per_mac * m * n * k1) / (m * n)
    return per_out if per_mac > 0 and per_out > 0 else None


def pack_from(rates: Mapping[str, float], requant_ns: float) -> float | None:
    """``int8_pack_ns`` (:func:`cost_models.cpu.requant_ns`) from the attention probe: its time less
    its MACs at the rate the two MatMul probes show and ``requant_ns`` per output, over the elements
    of its B. None when a probe is missing or the figure is not positive.

    >>> r = {SHORT_MATMUL: 27000.0, INT8_RATES["QLinearMatMul"]: 112000.0, ATTENTION_MATMUL: 80000.0}
    >>> round(pack_from(r, 0.4), 3)
    1.684
    """
    long_key = INT8_RATES["QLinearMatMul"]
    if not {SHORT_MATMUL, long_key, ATTENTION_MATMUL} <= rates.keys():
        return None
    (m, n), (k1, k2) = MATMUL_PROBE, MATMUL_PROBE_K
    per_mac = (rates[long_key] - rates[SHORT_MATMUL]) / (m * n * (k2 - k1))
    heads, rows, width = ATTENTION_PROBE
    extra = rates[ATTENTION_MATMUL] - per_mac * heads * rows * rows * width - requant_ns * heads * rows * rows
    per_b = extra / (heads * width * rows)
    return per_b if per_mac > 0 and per_b > 0 else None


def _conv_macs(cin: int, cout: int) -> tuple[int, int]:
    """(output pixels, MACs) of a 3x3 ``cin`` -> ``cout`` conv on the :data:`CONV_PROBE` plane."""
    pixels = CONV_PROBE[1] ** 2
    return pixels, pixels * cout * cin * 9


def _conv_line(rates: Mapping[str, float], requant_ns: float, call_ns: float = 0.0) -> tuple[float, float] | None:
    """(ns per output pixel, ns per MAC) of MLAS's symmetric conv kernel from the 64- and 8-channel
    probes, their requantization and the per-call cost ``call_ns`` taken off; None when either is
    missing or a figure is not positive."""
    wide_key = INT8_RATES["QLinearConv"]
    if wide_key not in rates or NARROW_CONV not in rates:
        return None
    pixels, wide = _conv_macs(CONV_PROBE[0], CONV_PROBE[0])
    cin, cout = NARROW_CONV_PROBES[NARROW_CONV]
    _, narrow = _conv_macs(cin, cout)
    t_wide = rates[wide_key] - requant_ns * pixels * CONV_PROBE[0] - call_ns
    t_narrow = rates[NARROW_CONV] - requant_ns * pixels * cout - call_ns
    per_mac = (t_wide - t_narrow) / (wide - narrow)
    per_pixel = (t_narrow - per_mac * narrow) / pixels
    return (per_pixel, per_mac) if per_pixel > 0 and per_mac > 0 else None


def conv_pixel_from(rates: Mapping[str, float], requant_ns: float, call_ns: float = 0.0) -> float | None:
    """``int8_conv_pixel_ns`` (:func:`cost_models.cpu.integer_conv_ns`): the fixed time per output
    pixel of MLAS's symmetric conv kernel. The 64 -> 64 and the 8 -> 16 probe run the same kernel on
    the same plane, so, with ``requant_ns`` per output taken off, their difference is MACs only:
    ``ns per MAC = (t_wide - t_narrow) / (MACs_wide - MACs_narrow)``, and the narrow one's rest over
    its pixels is the cost per pixel (on the CI Xeon a 4 -> 16 conv ran at a sixth of the 64-channel
    one's rate per MAC, 32 -> 32 at 0.9 of it: 6-7 ns per pixel beside 2.1 ps per MAC), each probe's
    per-call cost ``call_ns`` (:func:`conv_call_from`) taken off first. None when a probe is missing
    or a figure is not positive.

    >>> r = {INT8_RATES["QLinearConv"]: 1600 * (6.0 + 36864 * 0.002 + 64 * 0.4), NARROW_CONV: 1600 * (6.0 + 1152 * 0.002 + 16 * 0.4)}
    >>> round(conv_pixel_from(r, 0.4), 3)
    6.0
    """
    line = _conv_line(rates, requant_ns, call_ns)
    return line[0] if line is not None else None


def conv_mac_from(rates: Mapping[str, float], requant_ns: float, call_ns: float = 0.0) -> float | None:
    """``int8_conv_mac_ps`` (:func:`cost_models.cpu.integer_conv_ns`): ps per MAC of MLAS's symmetric
    conv kernel, the slope of :func:`conv_pixel_from`'s line through the 64 -> 64 and 8 -> 16 probes.
    None when a probe is missing or a figure is not positive.

    >>> r = {INT8_RATES["QLinearConv"]: 1600 * (6.0 + 36864 * 0.002 + 64 * 0.4), NARROW_CONV: 1600 * (6.0 + 1152 * 0.002 + 16 * 0.4)}
    >>> round(conv_mac_from(r, 0.4), 6)
    2.0
    """
    line = _conv_line(rates, requant_ns, call_ns)
    return line[1] * 1e3 if line is not None else None


def im2col_pixel_from(rates: Mapping[str, float], requant_ns: float, call_ns: float = 0.0) -> float | None:
    """``int8_im2col_pixel_ns`` (:func:`cost_models.cpu.integer_conv_ns`): the time per output pixel
    of a conv MLAS's symmetric kernel does not take (3 -> 16 channels: im2col of 27 bytes a pixel,
    then a GEMM of N = 16), beside its MACs at the symmetric kernel's rate (:func:`conv_pixel_from`)
    and ``requant_ns`` per output. None when a probe is missing or the figure is not positive.

    >>> r = {INT8_RATES["QLinearConv"]: 1600 * (6.0 + 36864 * 0.002 + 64 * 0.4), NARROW_CONV: 1600 * (6.0 + 1152 * 0.002 + 16 * 0.4),
    ...      IM2COL_CONV: 1600 * (18.0 + 432 * 0.002 + 16 * 0.4)}
    >>> round(im2col_pixel_from(r, 0.4), 3)
    18.0
    """
    line = _conv_line(rates, requant_ns, call_ns)
    if line is None or IM2COL_CONV not in rates:
        return None
    cin, cout = NARROW_CONV_PROBES[IM2COL_CONV]
    pixels, macs = _conv_macs(cin, cout)
    per_pixel = (rates[IM2COL_CONV] - call_ns - requant_ns * pixels * cout - line[1] * macs) / pixels
    return per_pixel if per_pixel > 0 else None


def conv_l2_mac_from(rates: Mapping[str, float], requant_ns: float, call_ns: float = 0.0) -> float | None:
    """``int8_conv_l2_mac_ps`` (:func:`cost_models.cpu.integer_conv_ns`): ps per MAC of MLAS's
    symmetric conv kernel when the filter one call reads exceeds L1, from the 256 -> 64 probe
    (:data:`DEEP_CONV_PROBE`) less its per-pixel cost (:func:`conv_pixel_from`) and ``requant_ns``
    per output. None when a probe is missing or the figure is not positive.

    >>> r = {INT8_RATES["QLinearConv"]: 1600 * (6.0 + 36864 * 0.002 + 64 * 0.4), NARROW_CONV: 1600 * (6.0 + 1152 * 0.002 + 16 * 0.4),
    ...      DEEP_CONV: 1600 * (6.0 + 147456 * 0.0027 + 64 * 0.4)}
    >>> round(conv_l2_mac_from(r, 0.4), 3)
    2.7
    """
    line = _conv_line(rates, requant_ns, call_ns)
    if line is None or DEEP_CONV not in rates:
        return None
    cin, cout = DEEP_CONV_PROBE
    pixels, macs = _conv_macs(cin, cout)
    per_mac_ps = (rates[DEEP_CONV] - call_ns - requant_ns * pixels * cout - line[0] * pixels) / macs * 1e3
    return per_mac_ps if per_mac_ps > 0 else None


def gemv_call_from(rates: Mapping[str, float], requant_ns: float, kernel_ns: float) -> tuple[float, float] | None:
    """``(int8_gemv_call_ns, int8_gemv_gbps)`` (:func:`cost_models.cpu.one_row_call_ns`) from the two
    one-row ``QGemm`` times (:func:`gemv_call_times`), the dispatch ``kernel_ns`` and ``requant_ns``
    per output taken off: the weight stream's rate from their difference
    (``(bytes_large - bytes_small) / (t_large - t_small)``), the fixed cost per call from the small
    one's rest. None when a time is missing or a figure is not positive.

    >>> r = {"qgemm_gemv_small_probe_ns": 1250.0 + 4096 / 80 + 64 * 0.4, "qgemm_gemv_large_probe_ns": 1250.0 + 262144 / 80 + 512 * 0.4}
    >>> [round(v, 3) for v in gemv_call_from(r, 0.4, 250.0)]
    [1000.0, 80.0]
    """
    if not GEMV_PROBES.keys() <= rates.keys():
        return None
    (small_key, small), (large_key, large) = sorted(GEMV_PROBES.items(), key=lambda kv: kv[1])
    t_small, t_large = rates[small_key] - requant_ns * small, rates[large_key] - requant_ns * large
    ns_per_byte = (t_large - t_small) / (large * large - small * small)
    call_ns = t_small - ns_per_byte * small * small - kernel_ns
    return (call_ns, 1.0 / ns_per_byte) if ns_per_byte > 0 and call_ns > 0 else None


def gemv_far_from(rates: Mapping[str, float], requant_ns: float, call_ns: float, kernel_ns: float) -> float | None:
    """``int8_gemv_far_gbps``: the rate at which :data:`GEMV_FAR_PROBE`'s one-row ``QGemm`` streams
    its weights from beyond L2, GB/s: its time less the dispatch ``kernel_ns``, the fixed cost per call
    ``call_ns`` and ``requant_ns`` per output (:func:`gemv_call_from`), over its weight bytes. None when
    the time is missing or what is left is not positive.

    >>> key, n = GEMV_FAR_PROBE
    >>> round(gemv_far_from({key: 250.0 + 1000.0 + 0.4 * n + n * n / 80}, 0.4, 1000.0, 250.0), 3)
    80.0
    """
    key, n = GEMV_FAR_PROBE
    if key not in rates:
        return None
    stream_ns = rates[key] - kernel_ns - call_ns - requant_ns * n
    return n * n / stream_ns if stream_ns > 0 else None


def probe_kernels() -> dict[str, Op]:
    """Each kernel class of :data:`INT8_RATES` as the op validate prices for it in its probe
    (:func:`hwsim.host.ort_qdq.qdq_kernel`; the plain Q/DQ nodes as they are)."""
    from graph_ir.onnx_import import from_model_proto
    from hwsim.host.ort_qdq import qdq_kernel

    out: dict[str, Op] = {}
    for model, kernels in ((conv_probe(), {"conv": "QLinearConv", "add": "QLinearAdd"}), (matmul_probe(), {"mm": "QLinearMatMul"})):  # fmt: skip
        graph = from_model_proto(onnx.shape_inference.infer_shapes(model))
        for node, kind in kernels.items():
            hit = qdq_kernel(graph, node, kind)
            assert hit is not None  # the probe is written to match
            out[kind] = hit[0]
        if "conv" in kernels:
            out["QuantizeLinear"], out["DequantizeLinear"] = graph.op("q_x"), graph.op("dq_a")
    for kind, weights in CONV_INTEGER_WEIGHTS.items():
        graph = from_model_proto(onnx.shape_inference.infer_shapes(conv_integer_probe(weights)))
        out[kind] = graph.op("conv")
    return out
