"""Single-op probes of the onnxruntime CPU kernels calibration cannot fit, for a fingerprint.

The calibration fits an efficiency per op type on the bundled models; an op type none of them
holds keeps the CPU model's category default, which assumes a vectorized streaming kernel.
Many of onnxruntime's kernels are not that: the inverse hyperbolics call libm once per
element, LRN sums a window of squares per element, GridSample and RoiAlign gather bilinear taps,
CumSum and CumProd run a serial scan along the last axis (a CumSum along an outer axis adds
whole rows, ``CumSumRows``), NonMaxSuppression compares boxes one pair at a time, Where
selects X and Y apart and merges the two (three passes over the data), PRelu branches on each
element's sign, DepthToSpace and SpaceToDepth shuffle six-axis views of their input, a Cast
to or from int64 converts one element at a time, a ReduceSum pays a set-up per row beside its
rate per element (the rows priced apart, :mod:`cost_models.cpu_reduce`), a Gather copies one row
per id (its fixed time per row and its rows from DRAM priced apart: ``gather_row_ns``,
:mod:`hwsim.host.gather_probe`), ScatterElements adds
each update alone, GatherElements picks one element at a time, LpPool calls ``pow`` per element,
a cubic Resize weighs 16 taps per output, a linear one over a 3-D signal runs a generic N-linear
loop, TopK keeps a heap per row, a MaxPool that outputs its ``Indices`` computes each
window's position element by element (not MLAS's pooling), MaxUnpool writes each value to its
place in a zeroed output (on the AMD EPYC 4.5 ns an update, 58-72 ns a pooled output, 67 ns a
resized one, where the defaults priced copies: ``docs/fidelity_cpu.md``, "A twelfth batch"), and
OneHot computes each output value alone (Eigen's generator; vectorized only along an axis after the
depth, ``OneHotOuter``: 1.8 and 0.23 ns a value on the CI Xeon, a copy priced 0.08). On the
AMD EPYC host the defaults put Asinh, LRN and CumProd 50-70x faster than onnxruntime ran them,
RoiAlign and GridSample 10-15x, NonMaxSuppression 2x (``docs/fidelity_cpu.md``, "Op types no
calibration model holds"); PRelu 35x and DepthToSpace 27x ("PRelu, DepthToSpace and SpaceToDepth").

So the fingerprint times each op type of :data:`PROBED_OP_TYPES` alone: one node over a tensor of
:data:`PROBE_ELEMENTS` values (float32 but for the Casts' integers; 1 MiB of floats, in L2 or L3 of
any CPU this project runs on),
its kernel's time read from onnxruntime's profiler (no dispatch in it), the fastest of a few
rounds. :func:`probe_efficiencies` turns each time into the efficiency calibration would fit
for that op type (:func:`hwsim.host.kernels.kernel_efficiency`), on the op as hwsim's own
importer reads the probe (its formula's FLOPs and bytes). A probe's name is the kernel class it
times (:func:`cost_models.cpu.kernel_type`: ``CastWide`` is a ``Cast`` of int64 values).

Calibration does not refit a probed class on kernels shorter than 20 us
(:data:`hwsim.host.calibration.TINY_KERNEL_NS`): such a kernel's time is mostly fixed costs. The
calibration set holds one Cast, BERT's 128 mask values, and the efficiency it fit (0.058 on an AMD
EPYC) priced the 12-100 Ki-value Casts of a ``quantize_dynamic`` CNN 5-6x slow; the probes give
0.29 (int32) and 0.15 (int64).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from chips.schema import Chip, CpuUnit

__all__ = [
    "PRICED_BY_PROBES",
    "PROBED_OP_TYPES",
    "PROBE_ELEMENTS",
    "PROBE_RATES",
    "SCATTER_FAR_PROBE",
    "SCATTER_FAR_SHAPE",
    "SCATTER_NEAR_SHAPE",
    "SHARED_PROBE_RATES",
    "probe_efficiencies",
    "probe_model",
    "probe_rates",
    "scatter_far_from",
    "scatter_probe",
]

#: Elementwise op types with one float input and no required attribute, each probed on a
#: ``[64, 4096]`` tensor (inputs in each function's domain: :data:`_POSITIVE`, :data:`_ABOVE_ONE`).
#: Not HardSwish or Mish: onnxruntime has no kernel of their own and runs their function bodies
#: (HardSigmoid and Mul; Softplus, Tanh and Mul), a pass over memory each, which a model whose
#: conv takes HardSwish as its activation does not pay: with a probed HardSwish efficiency the
#: MobileNetV3-like held-out models went from +1..+3 % to +26 % (``benchmarks/probe_effect.py``).
UNARY_PROBES: tuple[str, ...] = (
    "Abs", "Neg", "Sign", "Floor", "Ceil", "Round", "Reciprocal", "Sqrt", "Exp", "Log", "Sigmoid",
    "Tanh", "Erf", "HardSigmoid", "Softplus", "Softsign", "Elu", "Selu", "Celu",
    "ThresholdedRelu", "LeakyRelu", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
    "Asinh", "Acosh", "Atanh", "Shrink",
)  # fmt: skip
#: Op types probed on a model of their own (:func:`probe_model`).
OTHER_PROBES: tuple[str, ...] = (
    "LRN", "GridSample", "RoiAlign", "CumSum", "CumProd", "NonMaxSuppression", "RMSNormalization", "RotaryEmbedding",
    "Where", "PRelu", "DepthToSpace", "SpaceToDepth", "Cast", "CastWide", "DynamicQuantizeLinear", "ReduceSum",
    "Gather", "ScatterElements", "GatherElements", "LpPool", "ResizeCubic", "MaxPoolIndices", "MaxUnpool", "CumSumRows",
    "TopK", "ResizeLinearND", "OneHot", "OneHotOuter", "Mul", "Div",
)  # fmt: skip
#: Every op type the fingerprint probes alone.
PROBED_OP_TYPES: tuple[str, ...] = UNARY_PROBES + OTHER_PROBES
#: Op types whose kernels run a probed one's loops, priced at its rate (:func:`probe_efficiencies`):
#: onnxruntime's ReduceMean, ReduceMax and ReduceMin aggregate rows as ReduceSum does. Alone (AMD EPYC,
#: 2026-12-07, rows summed along the last axis): 0.066-0.109 ns an element for all four, where
#: ReduceMean's category default priced a 2 MB single row at 0.027 (TasNet's global norms: 14 us
#: priced, 58 measured). Of 259 measured reductions over 2 us, 61 were within 20 % before, 79 after.
SHARED_PROBE_RATES: Mapping[str, tuple[str, ...]] = {"ReduceSum": ("ReduceMean", "ReduceMax", "ReduceMin")}
#: Every op type a fingerprint's probes price: :data:`PROBED_OP_TYPES` and those sharing their rates.
PRICED_BY_PROBES: tuple[str, ...] = PROBED_OP_TYPES + tuple(t for ts in SHARED_PROBE_RATES.values() for t in ts)
#: Key of each probe's kernel time (ns per run of its node) among the fingerprint's kernel rates
#: (:func:`hwsim.host.kernels.kernel_rates`): efficiencies, not chip fields.
PROBE_RATES: Mapping[str, str] = {t: f"probe_ns:{t}" for t in PROBED_OP_TYPES}
#: Float32 values each probe's main input holds (64 rows of 4096).
PROBE_ELEMENTS = 64 * 4096
_POSITIVE = frozenset({"Log", "Sqrt", "Reciprocal"})
_ABOVE_ONE = frozenset({"Acosh"})
#: onnx opset of the probes (CumProd is new in 26, RMSNormalization and RotaryEmbedding in 23; the
#: others run the same kernel from 17 on).
_OPSET = {"CumProd": 26, "RMSNormalization": 23, "RotaryEmbedding": 23}
#: The node type of a probe named by its kernel class (:func:`cost_models.cpu.kernel_type`).
_NODE_TYPE = {"CastWide": "Cast", "ResizeCubic": "Resize", "MaxPoolIndices": "MaxPool", "CumSumRows": "CumSum",
              "ResizeLinearND": "Resize", "OneHotOuter": "OneHot"}
#: The element type of a probe's (first) output, where it is not float32.
_OUTPUT_TYPE = {"NonMaxSuppression": TensorProto.INT64, "DynamicQuantizeLinear": TensorProto.UINT8}
#: A probe's node outputs beyond ``y`` and whether the graph outputs them too (a MaxPool's
#: ``Indices`` must be an output for onnxruntime to run the kernel that computes them).
_MORE_OUTPUTS = {"DynamicQuantizeLinear": (["y_scale", "y_zero"], False), "MaxPoolIndices": (["idx"], True),
                 "TopK": (["idx"], False)}


#: ``(rows of updates, row width, rows summed into)`` of the ScatterElements probe: 384 KiB of
#: indices and updates, in the L2 of any CPU this project runs on.
SCATTER_NEAR_SHAPE = (1024, 32, 256)
#: The same kernel with 12 MiB of indices and updates, beyond any L2
#: (:func:`cost_models.cpu.scatter_far_ns`), and the key of its time among the kernel rates.
SCATTER_FAR_SHAPE = (32768, 32, 8192)
SCATTER_FAR_PROBE = "scatter_far_probe_ns"


def scatter_probe(rows: int, width: int, nodes: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A ``ScatterElements`` (node ``probe``, ``reduction="add"``) of ``rows`` rows of ``width``
    floats into ``nodes`` rows, each update's row at random, and its feeds."""
    rng = np.random.default_rng(0)
    inits: dict[str, np.ndarray] = {"idx": np.repeat(rng.integers(0, nodes, (rows, 1)), width, axis=1).astype(np.int64),
             "upd": rng.standard_normal((rows, width)).astype(np.float32)}  # fmt: skip
    feeds = {"x": np.zeros((nodes, width), np.float32)}
    node = helper.make_node("ScatterElements", ["x", "idx", "upd"], ["y"], name="probe", axis=0, reduction="add")
    graph = helper.make_graph(
        [node], "probe_ScatterElements", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [nodes, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [nodes, width])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), feeds


#: A probe's feeds, its node's inputs and its attributes.
_ProbeIO = tuple[dict[str, np.ndarray], list[str], dict[str, Any]]


def _unary_input(op_type: str, rng: np.random.Generator) -> np.ndarray:
    lo, hi = (1.1, 2.0) if op_type in _ABOVE_ONE else (0.1, 0.9) if op_type in _POSITIVE else (-0.9, 0.9)
    return rng.uniform(lo, hi, (64, 4096)).astype(np.float32)


def _row_probe(op_type: str, rng: np.random.Generator, inits: dict[str, np.ndarray]) -> _ProbeIO | None:
    """Inputs (feeds, node inputs, attributes) of the probes over rows of floats or integers; ``inits`` filled in. None for another op type."""
    extra: dict[str, Any] = {}
    if op_type in UNARY_PROBES:
        feeds, inputs = {"x": _unary_input(op_type, rng)}, ["x"]
    elif op_type in ("Mul", "Div"):  # 64 rows of 4096 by as many: a Gelu written out (x / sqrt 2, x * erf)
        # calibration saw only yolov8n's, BERT's and audio_kws's, each under 10 us, and fit rates
        # (0.14 and 0.11 on an AMD EPYC) that priced the 200 Ki-value Muls and Divs of an fp16
        # ConvNeXt's Gelus 2-3x slow: 0.07-0.10 ns an element measured
        feeds, inputs = {"x": _unary_input(op_type, rng)}, ["x", "w"]
        inits["w"] = rng.uniform(0.5, 1.5, (64, 4096)).astype(np.float32)
    elif op_type in ("CumSum", "CumProd", "CumSumRows"):  # along each row of 4096; CumSumRows down the 64 rows
        feeds, inputs = {"x": _unary_input(op_type, rng)}, ["x", "axis"]
        inits["axis"] = np.array(0 if op_type == "CumSumRows" else 1, np.int64)
    elif op_type == "RMSNormalization":  # 64 rows of 4096
        feeds, inputs, extra = {"x": _unary_input(op_type, rng)[None]}, ["x", "scale"], {"axis": -1}
        inits["scale"] = np.ones(4096, np.float32)
    elif op_type == "RotaryEmbedding":  # 256 positions of 16 heads of 64
        feeds, inputs, extra = {"x": rng.standard_normal((1, 256, 1024)).astype(np.float32)}, ["x", "cos", "sin", "pos"], {"num_heads": 16}
        angles = rng.uniform(0.0, 6.3, (256, 32))
        inits.update(cos=np.cos(angles).astype(np.float32), sin=np.sin(angles).astype(np.float32),
                     pos=np.arange(256, dtype=np.int64)[None])  # fmt: skip
    elif op_type == "Where":  # a padding mask's: 3072 of a row of 4096 kept, over 64 rows; a scalar fill
        feeds, inputs = {"x": _unary_input(op_type, rng)}, ["cond", "x", "fill"]
        inits.update(cond=np.arange(4096)[None] < 3072, fill=np.array(-1e4, np.float32))
    elif op_type in ("Cast", "CastWide"):  # 64 rows of 4096 integers to float: int32 (vectorized), int64 (not)
        # the kernel classes of cost_models.cpu.kernel_type; an int32 -> float Cast is what
        # quantize_dynamic's convs and MatMuls end in, an int64 -> float one a mask's or an id's
        wide = op_type == "CastWide"
        feeds = {"x": rng.integers(-100, 100, (64, 4096), dtype=np.int64 if wide else np.int32)}
        inputs, extra = ["x"], {"to": TensorProto.FLOAT}
    elif op_type == "NonMaxSuppression":  # 8 classes of 1024 boxes, up to 64 kept per class
        corner = rng.uniform(0.0, 600.0, (1, 1024, 2))
        feeds = {"x": np.concatenate([corner, corner + rng.uniform(8.0, 64.0, (1, 1024, 2))], 2).astype(np.float32)}
        inputs = ["x", "scores", "most", "iou"]
        inits.update(scores=rng.uniform(0.0, 1.0, (1, 8, 1024)).astype(np.float32), most=np.array([64], np.int64),
                     iou=np.array([0.5], np.float32))  # fmt: skip
    elif op_type == "DynamicQuantizeLinear":  # 64 rows of 4096 floats to uint8, the scale found by a pass of its own
        # quantize_dynamic's conv inputs run this kernel: on an AMD EPYC 0.15-0.17 ns an element
        # (12-100 Ki values), where the category default priced 0.03
        feeds, inputs = {"x": _unary_input(op_type, rng)}, ["x"]
    elif op_type == "Gather":  # 8192 rows of 64 floats from a 100,000-row table, ids spread over it
        # the same ids every run: their 2 MiB of rows stay in the L3, as a DLRM's do from run to run
        # (rows from DRAM are priced apart: cost_models.cpu.cold_gather_ns)
        feeds, inputs = {"x": rng.integers(0, 100_000, 8192).astype(np.int64)}, ["table", "x"]
        inits["table"] = rng.standard_normal((100_000, 64)).astype(np.float32)
    elif op_type == "ReduceSum":  # 1024 rows of 256 floats, each summed: its rows' set-ups priced apart
        feeds, inputs = {"x": _unary_input(op_type, rng).reshape(1024, 256)}, ["x", "axes"]
        inits["axes"], extra = np.array([1], np.int64), {"keepdims": 1}
    elif op_type == "TopK":  # the 64 largest of each of 256 rows of 1024 (a shape graph_ir.op_metrics.TOPK_SIFT_WORK was fit on)
        feeds, inputs, extra = {"x": _unary_input(op_type, rng).reshape(256, 1024)}, ["x", "k"], {"axis": -1}
        inits["k"] = np.array([64], np.int64)
    elif op_type in ("OneHot", "OneHotOuter"):  # 256 ids over a depth of 1024: on the last axis, or the first (a suffix of 256)
        feeds, inputs = {"x": rng.integers(0, 1024, 256).astype(np.int64)}, ["x", "depth", "values"]
        inits.update(depth=np.array([1024], np.int64), values=np.array([0.0, 1.0], np.float32))
        extra = {"axis": 0 if op_type == "OneHotOuter" else -1}
    elif op_type == "GatherElements":  # 64 rows of 4096 picked along the row, positions at random
        feeds, inputs, extra = {"x": _unary_input(op_type, rng)}, ["x", "idx"], {"axis": 1}
        inits["idx"] = rng.integers(0, 4096, (64, 4096)).astype(np.int64)
    else:
        return None
    return feeds, inputs, extra

def _map_probe(op_type: str, rng: np.random.Generator, inits: dict[str, np.ndarray]) -> _ProbeIO | None:
    """Inputs (feeds, node inputs, attributes) of the probes over a feature map or a tensor of their own shape; ``inits`` filled in. None for another op type."""
    extra: dict[str, Any] = {}
    if op_type == "LRN":  # 64 channels of 64 x 64
        feeds, inputs, extra = {"x": rng.standard_normal((1, 64, 64, 64)).astype(np.float32)}, ["x"], {"size": 5}
    elif op_type == "GridSample":  # 64 channels of 64 x 64, sampled at as many points
        feeds, inputs = {"x": rng.standard_normal((1, 64, 64, 64)).astype(np.float32)}, ["x", "grid"]
        inits["grid"] = rng.uniform(-1.0, 1.0, (1, 64, 64, 2)).astype(np.float32)
    elif op_type == "RoiAlign":  # 128 boxes of 64 channels, 7 x 7 each, from a 64 x 64 map
        feeds, inputs = {"x": rng.standard_normal((1, 64, 64, 64)).astype(np.float32)}, ["x", "rois", "batch"]
        corner = rng.uniform(0.0, 40.0, (128, 2))
        inits["rois"] = np.concatenate([corner, corner + rng.uniform(4.0, 24.0, (128, 2))], 1).astype(np.float32)
        inits["batch"] = np.zeros(128, np.int64)
        extra = {"output_height": 7, "output_width": 7, "sampling_ratio": 2}
    elif op_type == "PRelu":  # 64 channels of 64 x 64, one slope per channel, signs at random
        # onnxruntime's PRelu branches on each sign: random signs mispredict half the branches, the
        # worst case and what random inputs give (on an AMD EPYC 4.5 ns per element, 0.34 all
        # positive). Below ~48 Ki elements a run repeated on the same input learns its signs (0.9
        # ns): the probe is above that, as different inputs from one run to the next are.
        feeds, inputs = {"x": rng.uniform(-0.9, 0.9, (1, 64, 64, 64)).astype(np.float32)}, ["x", "slope"]
        inits["slope"] = np.full((64, 1, 1), 0.25, np.float32)
    elif op_type in ("DepthToSpace", "SpaceToDepth"):  # 64 x 64 x 64 floats, in blocks of 2 x 2
        side = 64 if op_type == "DepthToSpace" else 128
        feeds = {"x": rng.standard_normal((1, 64 * 64 * 64 // side // side, side, side)).astype(np.float32)}
        inputs, extra = ["x"], {"blocksize": 2}
    elif op_type == "LpPool":  # 64 channels of 64 x 64, 2 x 2 windows at stride 2, p = 2
        feeds, inputs = {"x": rng.standard_normal((1, 64, 64, 64)).astype(np.float32)}, ["x"]
        extra = {"kernel_shape": [2, 2], "strides": [2, 2], "p": 2}
    elif op_type == "MaxPoolIndices":  # 64 channels of 64 x 64, 2 x 2 windows at stride 2, with their Indices
        feeds, inputs = {"x": rng.standard_normal((1, 64, 64, 64)).astype(np.float32)}, ["x"]
        extra = {"kernel_shape": [2, 2], "strides": [2, 2]}
    elif op_type == "MaxUnpool":  # 64 channels of 32 x 32 back to 64 x 64, each value to one place of its window
        feeds, inputs = {"x": rng.standard_normal((1, 64, 32, 32)).astype(np.float32)}, ["x", "idx"]
        c, i, j = np.meshgrid(np.arange(64), np.arange(32), np.arange(32), indexing="ij")
        row, col = 2 * i + rng.integers(0, 2, i.shape), 2 * j + rng.integers(0, 2, j.shape)
        inits["idx"], extra = (c * 4096 + row * 64 + col)[None].astype(np.int64), {"kernel_shape": [2, 2], "strides": [2, 2]}
    elif op_type == "ResizeLinearND":  # 64 channels of a 4096-sample signal upsampled x2 by linear interpolation
        feeds, inputs = {"x": rng.standard_normal((1, 64, 4096)).astype(np.float32)}, ["x", "", "scales"]
        inits["scales"], extra = np.array([1.0, 1.0, 2.0], np.float32), {"mode": "linear"}
    elif op_type == "ResizeCubic":  # 16 channels of 64 x 64 upsampled x2 by cubic interpolation
        feeds, inputs = {"x": rng.standard_normal((1, 16, 64, 64)).astype(np.float32)}, ["x", "", "scales"]
        inits["scales"], extra = np.array([1.0, 1.0, 2.0, 2.0], np.float32), {"mode": "cubic"}
    else:
        return None
    return feeds, inputs, extra

def probe_model(op_type: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The one-node model that probes ``op_type`` (its node named ``probe``) and its feeds."""
    if op_type == "ScatterElements":  # 1024 rows of 32 summed into 256 (a GNN's messages into its nodes)
        # onnxruntime adds each update alone, its index computed per element: 3.5 ns an update on an
        # Intel Xeon with its 384 KiB of indices and updates in L2, where the category default
        # priced a copy; updates from beyond L2 cost more (SCATTER_FAR_PROBE)
        return scatter_probe(*SCATTER_NEAR_SHAPE)
    rng = np.random.default_rng(0)
    inits: dict[str, np.ndarray] = {}
    io = _map_probe(op_type, rng, inits) or _row_probe(op_type, rng, inits)
    if io is None:
        raise ValueError(f"no probe for op type {op_type!r}; have {', '.join(PROBED_OP_TYPES)}")
    feeds, inputs, extra = io
    more, declared = _MORE_OUTPUTS.get(op_type, ([], False))
    node = helper.make_node(_NODE_TYPE.get(op_type, op_type), inputs, ["y", *more], name="probe", **extra)
    graph_outputs = [helper.make_tensor_value_info("y", _OUTPUT_TYPE.get(op_type, TensorProto.FLOAT), None)]
    graph_outputs += [helper.make_tensor_value_info(y, TensorProto.INT64, None) for y in more if declared]
    graph = helper.make_graph(
        [node], f"probe_{op_type}",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for k, v in feeds.items()],
        graph_outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    opset = _OPSET.get(op_type, 17)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return onnx.shape_inference.infer_shapes(model), feeds  # the output's shape declared


def probe_rates(rounds: int = 3, op_types: tuple[str, ...] = PROBED_OP_TYPES) -> tuple[dict[str, float], list[str]]:
    """Each probe's kernel time (ns per run, keyed by :data:`PROBE_RATES`), the fastest of
    ``rounds`` profiled runs of 10, and a note for each op type onnxruntime could not run."""
    from hwsim.host.measure import profile_nodes

    out: dict[str, float] = {}
    notes: list[str] = []
    probes = [(PROBE_RATES[t], t, *probe_model(t)) for t in op_types]
    if "ScatterElements" in op_types:  # its updates from beyond L2 as well (scatter_far_from)
        probes.append((SCATTER_FAR_PROBE, "ScatterElements", *scatter_probe(*SCATTER_FAR_SHAPE)))
    for key, op_type, model, feeds in probes:
        try:
            # every kernel the probe ran (one for each op type probed)
            times = [sum(ns for _, ns in profile_nodes(model, feeds, runs=10, opt="disable").values()) for _ in range(rounds)]
        except Exception as exc:  # noqa: BLE001 (an onnxruntime without the kernel: the op keeps its default)
            notes.append(f"{op_type} probe not run ({type(exc).__name__}); its efficiency left to the category default")
            continue
        if times and min(times) > 0:
            out[key] = min(times)
    return out, notes


def scatter_far_from(chip: Chip, rates: Mapping[str, float]) -> float | None:
    """``scatter_far_update_ns`` (:func:`cost_models.cpu.scatter_far_ns`): what the probe of
    :data:`SCATTER_FAR_SHAPE` took beyond ``chip``'s CPU model's time for it without the figure
    (the ScatterElements efficiency of the probe in L2 in ``chip``), over its updates beyond L2;
    None without that probe's time, with no update beyond L2, or where it took no longer."""
    from cost_models.cpu import scatter_updates_beyond_l2
    from cost_models.table import estimate
    from graph_ir.onnx_import import from_model_proto

    unit = chip.units[0]
    if SCATTER_FAR_PROBE not in rates or not isinstance(unit, CpuUnit):
        return None
    op = from_model_proto(scatter_probe(*SCATTER_FAR_SHAPE)[0], source="scatter probe").op("probe")
    bare = unit.model_copy(update={"op_overhead_ns": 0.0, "scatter_far_update_ns": None})
    priced = estimate(op, chip.model_copy(update={"units": [bare]}), unit.name, "model")
    beyond = scatter_updates_beyond_l2(op, bare)
    if priced is None or beyond <= 0 or rates[SCATTER_FAR_PROBE] <= priced.latency_ns:
        return None
    # the figure is added to the op's compute (cost_models.cpu._with_pass), which then exceeds its memory time
    return (rates[SCATTER_FAR_PROBE] - priced.overhead_ns - priced.compute_ns) / beyond


def probe_efficiencies(chip: Chip, rates: Mapping[str, float]) -> dict[str, float]:
    """The efficiency of each op type probed (:func:`probe_rates`) on ``chip``'s CPU: the one
    calibration would fit from the probe's kernel time, on the op as hwsim reads the probe model;
    a reduction's rows and a Gather's, priced apart where ``chip`` has their figures
    (:func:`cost_models.cpu_reduce.reduce_passes_ns`, :func:`cost_models.cpu.gather_rows_ns`), taken
    out of its time first. The op types of :data:`SHARED_PROBE_RATES` take their probe's."""
    from cost_models.cpu import gather_rows_ns
    from cost_models.cpu_reduce import reduce_passes_ns
    from graph_ir.onnx_import import from_model_proto
    from hwsim.host.kernels import kernel_efficiency

    out: dict[str, float] = {}
    unit = chip.units[0]
    for op_type, key in PROBE_RATES.items():
        if key not in rates:
            continue
        model, _ = probe_model(op_type)
        op = from_model_proto(model, source=f"probe {op_type}", name=f"probe_{op_type}").op("probe")
        apart = reduce_passes_ns(op, unit) + gather_rows_ns(op, unit) if isinstance(unit, CpuUnit) else 0.0
        out[op_type] = kernel_efficiency(chip, op, max(rates[key] - apart, 0.1 * rates[key]))
    for probed, sharing in SHARED_PROBE_RATES.items():
        if probed in out:
            out.update((t, out[probed]) for t in sharing if t not in out)
    return out
