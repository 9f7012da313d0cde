"""MACs, FLOPs and category of each ONNX op type, from the op's own formula.

Handlers are registered by ONNX op_type. An op type without a handler gets the category
``unknown``: cost models charge it as a memory-bound copy and the run reports it by name.

>>> from graph_ir.ir import Tensor
>>> x = Tensor("x", (1, 64, 56, 56), "float32")
>>> w = Tensor("w", (64, 64, 3, 3), "float32", is_weight=True)
>>> y = Tensor("y", (1, 64, 56, 56), "float32")
>>> metrics("Conv", (x, w), (y,), {})
Metrics(category='conv', macs=115605504, flops=231211008)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from graph_ir.categories import Category
from graph_ir.gemm import matmul_k
from graph_ir.ir import Tensor

__all__ = ["Metrics", "metrics", "register", "registered_op_types"]


@dataclass(frozen=True, slots=True)
class Metrics:
    category: Category
    macs: int = 0
    flops: int = 0


Handler = Callable[[Sequence[Tensor], Sequence[Tensor], Mapping[str, object]], Metrics]
_REGISTRY: dict[str, Handler] = {}


def register(*op_types: str) -> Callable[[Handler], Handler]:
    """Register a handler for one or more ONNX op types."""

    def deco(fn: Handler) -> Handler:
        for t in op_types:
            _REGISTRY[t] = fn
        return fn

    return deco


def registered_op_types() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def metrics(
    op_type: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]
) -> Metrics:
    """Category, MACs and FLOPs of one op (``unknown`` when no handler is registered)."""
    handler = _REGISTRY.get(op_type)
    if handler is None:
        return Metrics("unknown")
    return handler(inputs, outputs, attrs)


def _out(outputs: Sequence[Tensor]) -> int:
    return sum(t.elements for t in outputs)


def _ints(attrs: Mapping[str, object], key: str) -> tuple[int, ...]:
    v = attrs.get(key)
    return tuple(int(x) for x in v) if isinstance(v, (list, tuple)) else ()


# ---------------------------------------------------------------- GEMM family
@register("Conv", "ConvInteger", "QLinearConv")
def _conv(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    widx = 3 if len(inputs) >= 8 else 1  # QLinearConv: x, xs, xz, w, ...
    w = inputs[widx]
    per_out = 1
    for d in w.shape[1:]:  # Cin/group * kh * kw
        per_out *= d
    macs = outputs[0].elements * per_out
    return Metrics("conv", macs, 2 * macs)


@register("ConvTranspose")
def _conv_t(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    x, w = inputs[0], inputs[1]
    per_in = 1
    for d in w.shape[1:]:  # Cout/group * kh * kw
        per_in *= d
    macs = x.elements * per_in
    return Metrics("conv", macs, 2 * macs)


def _gemm_k(op_type: str, a: Tensor, attrs: Mapping[str, object]) -> int:
    k = matmul_k(op_type, a.shape, attrs)
    if k is None:
        raise ValueError(f"{op_type} is no matrix product with a K of its first operand")
    return k


@register("Gemm")
def _gemm(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    macs = outputs[0].elements * _gemm_k("Gemm", inputs[0], attrs)
    return Metrics("matmul", macs, 2 * macs + outputs[0].elements)


def _matmul_for(op_type: str) -> Handler:
    def handler(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
        macs = outputs[0].elements * _gemm_k(op_type, inputs[0], attrs)
        return Metrics("matmul", macs, 2 * macs)

    return handler


for _t in ("MatMul", "MatMulInteger", "QLinearMatMul"):
    _REGISTRY[_t] = _matmul_for(_t)


def _einsum_dims(term: str, shape: Sequence[int]) -> list[tuple[str | int, int]]:
    """Each index of the Einsum operand ``term`` over ``shape`` with its size; the dims an
    ellipsis covers are keyed by their place counted from the right (numpy's broadcasting).

    >>> _einsum_dims("...ij", (2, 3, 4, 8))
    [(2, 2), (1, 3), ('i', 4), ('j', 8)]
    """
    head, dots, tail = term.partition("...")
    if not dots:
        return list(zip(term, shape))
    covered = max(len(shape) - len(head) - len(tail), 0)
    start, end = len(head), len(head) + covered
    middle = [(covered - j, d) for j, d in enumerate(shape[start:end])]
    return [*zip(head, shape), *middle, *zip(tail, shape[end:])]


@register("Einsum")
def _einsum(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """MACs: the product of the sizes of all distinct indices (an ellipsis's dims broadcast)."""
    eq = str(attrs.get("equation", "")).replace(" ", "")
    lhs = eq.split("->")[0].split(",")
    sizes: dict[str | int, int] = {}
    for term, t in zip(lhs, inputs):
        for key, dim in _einsum_dims(term, t.shape):
            sizes[key] = dim if sizes.get(key, 1) == 1 else sizes[key]  # a 1 broadcasts against any size
    macs = math.prod(sizes.values()) if sizes else 0
    return Metrics("matmul", macs, 2 * macs)


# ---------------------------------------------------------------- elementwise
_BINARY = (
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Mod", "Equal", "Less",
    "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor",
)  # fmt: skip


@register(*_BINARY)
def _binary(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    n = _out(outputs) * max(1, len(inputs) - 1)
    return Metrics("elementwise", 0, n)


#: FLOPs per element of unary ops (transcendentals are a few FLOPs on SIMD hardware).
_UNARY_FLOPS = {
    "Relu": 1, "Clip": 2, "LeakyRelu": 2, "PRelu": 2, "Neg": 1, "Abs": 1, "Sign": 1,
    "Floor": 1, "Ceil": 1, "Round": 1, "Not": 1, "IsNaN": 1, "IsInf": 1, "Cast": 1,
    "Reciprocal": 1, "Sqrt": 4, "Exp": 8, "Log": 8, "Sigmoid": 8, "Tanh": 8, "Erf": 8,
    "Gelu": 12, "HardSigmoid": 3, "HardSwish": 4, "Softplus": 10, "Softsign": 3, "Elu": 8,
    "Selu": 8, "Celu": 8, "ThresholdedRelu": 1, "Sin": 8, "Cos": 8, "Tan": 8, "Asin": 8,
    "Acos": 8, "Atan": 8, "Sinh": 8, "Cosh": 8, "Mish": 16, "Swish": 9,
    "Asinh": 8, "Acosh": 8, "Atanh": 8, "CastLike": 1, "BitwiseNot": 1, "Shrink": 2,
    "QuantizeLinear": 3, "DequantizeLinear": 2, "DynamicQuantizeLinear": 4,
}  # fmt: skip


def _unary_for(k: int) -> Handler:
    def handler(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
        return Metrics("activation", 0, k * _out(outputs))

    return handler


for _t, _k in _UNARY_FLOPS.items():
    _REGISTRY[_t] = _unary_for(_k)


# ---------------------------------------------------------------- pooling / reductions
@register("MaxPool", "AveragePool", "LpPool")
def _pool(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    k = math.prod(_ints(attrs, "kernel_shape")) or 1
    return Metrics("pool", 0, outputs[0].elements * k)


@register("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _gpool(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("pool", 0, inputs[0].elements)


@register(
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "CumProd",
)
def _reduce(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("reduce", 0, inputs[0].elements)


#: Work of one sift step of a TopK's heap against scanning one element. onnxruntime keeps the
#: ``k`` largest of a row of ``n`` in a heap: on random input about ``k (1 + ln(n / k))`` values
#: enter it, each sifting ``log2 k`` levels. On the CI Xeon (onnxruntime 1.32) a row took
#: ``0.57 n + 7.1`` ns per sift, fitted on k = 2 and k = 64 over rows of 1,024; nine shapes held
#: out (k = 2-20 over rows of 8-4,096) came within -25..+15 %, most within 5 %.
TOPK_SIFT_WORK = 12.3


@register("TopK")
def _topk(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """A scan of each row and the sifts of a heap of the kept values (:data:`TOPK_SIFT_WORK`)."""
    shape = inputs[0].shape
    if not shape or not outputs[0].shape:
        return Metrics("reduce", 0, inputs[0].elements)
    axis = int(attrs.get("axis", -1)) % len(shape)  # type: ignore[call-overload]
    n, k = max(1, shape[axis]), max(1, outputs[0].shape[axis])
    sifts = k * (1 + max(0.0, math.log(n / k))) * math.log2(max(2, k))
    return Metrics("reduce", 0, int(inputs[0].elements // n * (n + TOPK_SIFT_WORK * sifts)))


#: Attribute (not ONNX's) the importer sets on a Softmax, LogSoftmax or Hardmax of an opset before
#: 13, where ``axis`` (default 1) coerces the input to 2-D, the elements before it the rows; from
#: opset 13 on it is the one axis normalized over (default -1).
COERCED_AXIS_ATTR = "hwsim_coerced_axis"
#: Attribute (not ONNX's) the importer sets on a reduction whose axes come as a constant input
#: (ReduceSum from opset 13, every Reduce* from 18): those axes, as a tuple of ints, as given.
INPUT_AXES_ATTR = "hwsim_axes"
#: Attribute (not ONNX's) the importer sets on a CumSum or CumProd whose axis input is a constant
#: int64: that axis, as given (where the scan runs: along the contiguous last axis one element after
#: another, along an outer one a row at a time).
CUM_AXIS_ATTR = "hwsim_cum_axis"
#: Attribute (not ONNX's) the importer sets on a Slice whose axes and steps come as constant inputs and
#: step other than 1 somewhere: ``(axis, step)`` pairs flattened, axes as given (a decimation ``x[..., ::2]``
#: copies element by element where every other slice copies runs of elements).
SLICE_STEPS_ATTR = "hwsim_slice_steps"
#: Op types whose second input, where present, holds the axes they reduce (opset 13/18 on).
AXES_INPUT_OP_TYPES = frozenset({"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                 "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})  # fmt: skip


@register("Softmax", "LogSoftmax", "Hardmax")
def _softmax(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("softmax", 0, 5 * _out(outputs))


@register(
    "LayerNormalization", "InstanceNormalization", "GroupNormalization",
    "LpNormalization", "MeanVarianceNormalization", "SimplifiedLayerNormalization", "RMSNormalization",
)
def _norm(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("norm", 0, 8 * outputs[0].elements)


@register("LRN")
def _lrn(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    # per element: the squares of ``size`` channels summed, scaled, raised to beta, divided by
    size = int(attrs.get("size", 1))  # type: ignore[call-overload]
    return Metrics("norm", 0, (2 * max(size, 1) + 12) * outputs[0].elements)


@register("BatchNormalization")
def _bn(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("norm", 0, 2 * outputs[0].elements)


# ---------------------------------------------------------------- data movement and views
@register(
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Shape", "Size",
    "Constant", "EyeLike", "BitCast",
)
def _layout(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("layout")


@register(
    "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Pad",
    "Tile", "Expand", "DepthToSpace", "SpaceToDepth", "ScatterND", "ScatterElements",
    "ConstantOfShape", "Range", "NonZero", "Trilu", "OneHot", "ReverseSequence", "Compress",
    "Scatter", "TensorScatter", "CenterCropPad", "Col2Im", "MaxUnpool",
)
def _data(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("data")


def _taps(mode: str, spatial: int) -> int:
    """Input values read per output value by an interpolation over ``spatial`` axes: nearest 1,
    (bi/tri)linear 2 per axis, cubic 4 per axis."""
    if mode == "nearest":
        return 1
    return (2 if mode in ("linear", "bilinear") else 4) ** max(spatial, 1)


@register("Resize", "Upsample")
def _resize(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    mode = str(attrs.get("mode", "nearest"))
    per = 1 if mode == "nearest" else (4 if mode == "linear" else 16)
    return Metrics("data" if per == 1 else "elementwise", 0, per * _out(outputs))


@register("GridSample")
def _grid_sample(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """Each output value interpolates its taps at a position read from the grid (gathered, not streamed)."""
    per = _taps(str(attrs.get("mode", "linear")), len(outputs[0].shape) - 2)
    return Metrics("data" if per == 1 else "elementwise", 0, 2 * per * _out(outputs))


@register("RotaryEmbedding")
def _rotary(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """Each output value ``x cos +- x' sin`` (its pair's value rotated), the angles gathered by position."""
    return Metrics("elementwise", 0, 3 * _out(outputs))


@register("AffineGrid")
def _affine_grid(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """Each output coordinate a row of the affine matrix times the homogeneous point."""
    return Metrics("elementwise", 0, 2 * (len(outputs[0].shape) - 1) * _out(outputs))


@register("RoiAlign")
def _roi_align(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """Each pooled value averages ``sampling_ratio``^2 bilinear samples (4 taps each; an adaptive
    ratio, 0, counted as 2)."""
    ratio = int(attrs.get("sampling_ratio", 0)) or 2  # type: ignore[call-overload]
    return Metrics("pool", 0, ratio * ratio * 4 * 2 * _out(outputs))


@register("MaxRoiPool")
def _max_roi_pool(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """Each pooled value the max over its bin; a bin counted as the feature map over the pooled grid."""
    x, y = inputs[0].shape, outputs[0].shape
    window = max(1, math.prod(x[2:]) // max(1, math.prod(y[2:]))) if len(x) > 2 and len(y) > 2 else 1
    return Metrics("pool", 0, window * _out(outputs))


@register("NonMaxSuppression")
def _nms(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    """Per batch and class: the boxes sorted by score, then each box's IoU against the boxes kept
    (about 12 FLOPs per pair; the boxes kept counted as the selected rows per class)."""
    scores = inputs[1].shape if len(inputs) > 1 else ()
    if len(scores) != 3:
        return Metrics("reduce", 0, inputs[0].elements)
    batch, classes, boxes = scores
    kept = max(1, outputs[0].shape[0] // max(1, batch * classes)) if outputs and outputs[0].shape else 1
    per_class = int(boxes * math.log2(max(boxes, 2))) + 12 * boxes * min(kept, boxes)
    return Metrics("reduce", 0, batch * classes * per_class)


# ---------------------------------------------------------------- signal processing
def _fft_flops(n: int) -> int:
    """Radix-2 style complex FFT cost: 5 N log2 N real FLOPs."""
    return int(5 * n * math.log2(max(n, 2)))


@register("DFT")
def _dft(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    x, y = inputs[0], outputs[0]
    axis = int(attrs.get("axis", 1))  # type: ignore[call-overload]
    if not -len(x.shape) <= axis < len(x.shape):
        axis = 1
    length_in = x.shape[axis]
    # The transform length is the output's (dft_length zero-pads or crops the input);
    # a one-sided output holds n // 2 + 1 bins.
    m = y.shape[axis]
    n = 2 * (m - 1) if attrs.get("onesided", 0) and m > 1 else m
    transforms = max(1, x.elements // max(1, length_in * x.shape[-1]))
    return Metrics("signal", 0, transforms * _fft_flops(n))


@register("STFT")
def _stft(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    y = outputs[0]  # [batch, frames, bins, 2]
    batch, frames, bins = y.shape[0], y.shape[1], y.shape[2]
    n = 2 * (bins - 1) if attrs.get("onesided", 1) else bins
    n = max(n, 2)
    return Metrics("signal", 0, batch * frames * (_fft_flops(n) + n))  # FFT + window multiply


@register("MelWeightMatrix", "HannWindow", "HammingWindow", "BlackmanWindow")
def _window(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
    return Metrics("signal", 0, 4 * _out(outputs))


# ---------------------------------------------------------------- recurrent
def _rnn(gates: int) -> Handler:
    def handler(inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: Mapping[str, object]) -> Metrics:
        x, w, r = inputs[0], inputs[1], inputs[2]
        seq, batch = x.shape[0], x.shape[1]
        if attrs.get("layout", 0):
            batch, seq = x.shape[0], x.shape[1]
        directions, gh, in_size = w.shape[0], w.shape[1], w.shape[2]
        hidden = r.shape[2]
        macs = seq * batch * directions * gh * (in_size + hidden)
        elementwise = seq * batch * directions * hidden * 10 * gates
        return Metrics("rnn", macs, 2 * macs + elementwise)

    return handler


_REGISTRY["LSTM"] = _rnn(4)
_REGISTRY["GRU"] = _rnn(3)
_REGISTRY["RNN"] = _rnn(1)
