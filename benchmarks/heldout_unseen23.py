"""The twenty-third batch of unseen models for the host CPU fidelity check: five families of grouped
convolutions and cheap convolution tricks, each a published architecture at a small input so that
a run takes about 1 to 10 ms on one thread, two sizes each:

- ``seresnext``: SE-ResNeXt (Hu et al. 2018, squeeze-and-excitation on the ResNeXt of Xie et al.
  2017): a 7x7 stride-2 stem with ``BatchNormalization``, ``Relu`` and a 3x3 stride-2 ``MaxPool``,
  then bottlenecks of a 1x1 conv, a grouped 3x3 conv of cardinality 32 (4 or 8 channels a group,
  strided at each stage's first block), a 1x1 conv, squeeze-and-excitation (``GlobalAveragePool``,
  two 1x1 convs, ``Relu``, ``Sigmoid``, ``Mul``), the residual ``Add`` (a strided 1x1 projection
  where the shape changes) and ``Relu``; a ``Gemm`` head;
- ``resnest``: ResNeSt (Zhang et al. 2020), 2s1x64d and 2s2x40d: a deep stem of three 3x3 convs,
  then bottlenecks whose 3x3 is split attention: a grouped conv of radix 2 (groups radix x
  cardinality, twice the channels out), a ``Reshape`` into the radix splits and ``ReduceSum`` over
  them, ``GlobalAveragePool``, two 1x1 convs (grouped by the cardinality, as ResNeSt's are), the
  rSoftMax (``Reshape``, ``Transpose``, ``Softmax`` over the radix), ``Mul`` and ``ReduceSum``
  back; a 3x3 ``AveragePool`` where the block strides and an ``AveragePool`` before the shortcut's
  1x1 projection (ResNeSt's avd and avg_down);
- ``ghostnet``: GhostNet (Han et al. 2020) of width 0.5 and 1.0: ghost modules (a 1x1 conv to half
  the channels, a depthwise 3x3 "cheap operation" on it, ``Concat`` of both and the ``Slice`` to the
  output channels PyTorch's export keeps), ghost bottlenecks of a ghost module with ``Relu``, a
  strided depthwise conv where the block strides, squeeze-and-excitation gated by ``HardSigmoid``
  in some, a ghost module without ``Relu`` and the ``Add`` of the shortcut (a depthwise and a 1x1
  conv where stride or channels change); a 1x1 conv to 960 x width, ``GlobalAveragePool``, a 1x1
  conv to 1280 and a ``Gemm``;
- ``xception``: Xception's entry and middle flows (Chollet 2017): separable convs (a depthwise 3x3
  and a pointwise 1x1, each with ``BatchNormalization``) after ``Relu``, entry blocks closed by a
  3x3 stride-2 ``MaxPool`` beside a strided 1x1 conv residual, middle blocks of three separable
  convs and an identity residual; a ``Gemm`` head;
- ``repvgg``: RepVGG-A0 (Ding et al. 2021) in its training form, not re-parameterized: each block
  the ``Add`` of a 3x3 conv with ``BatchNormalization``, a 1x1 conv with it and, where the shape is
  kept, a ``BatchNormalization`` of the input, then ``Relu``; stages of 1, 2, 4, 14 and 1 blocks,
  each stage's first strided. The larger size groups the even layers' convs by 4 as RepVGG-B's
  g4 variants do (12 and 24 channels a group in the first stages).

``python benchmarks/heldout_unseen23.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "ghostnet", "repvgg", "resnest", "seresnext", "xception"]


def _cbr(b: hm._Builder, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, group: int = 1, relu: bool = True) -> str:
    """A ``k`` x ``k`` conv without bias (``same`` padding), its ``BatchNormalization`` and, unless
    told not, ``Relu``."""
    w = b.weight((cout, cin // group, k, k), scale=1.0 / np.sqrt(cin // group * k * k))
    y = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)
    y = hm.batch_norm(b, y, cout)
    return b.op("Relu", [y]) if relu else y


def _conv1x1(b: hm._Builder, x: str, cin: int, cout: int, group: int = 1) -> str:
    """A 1x1 conv with bias (the squeeze-and-excitation and attention convs)."""
    return b.op("Conv", [x, b.weight((cout, cin // group, 1, 1), scale=1.0 / np.sqrt(cin // group)), b.weight((cout,))], group=group)


def _se(b: hm._Builder, x: str, c: int, squeeze: int, gate: str = "Sigmoid", **gate_attrs: object) -> str:
    """Squeeze-and-excitation: ``GlobalAveragePool``, 1x1 conv to ``squeeze``, ``Relu``, 1x1 conv back,
    ``gate``, ``Mul``."""
    s = b.op("Relu", [_conv1x1(b, b.op("GlobalAveragePool", [x]), c, squeeze)])
    return b.op("Mul", [x, b.op(gate, [_conv1x1(b, s, squeeze, c)], **gate_attrs)])


def _max_pool(b: hm._Builder, x: str) -> str:
    return b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


def _head(b: hm._Builder, x: str, c: int, classes: int) -> str:
    """Global average pool, flatten and a ``Gemm`` to ``classes`` logits."""
    flat = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.op("Gemm", [flat, b.weight((classes, c), scale=1.0 / np.sqrt(c)), b.weight((classes,))], transB=1)


def _shortcut(b: hm._Builder, x: str, cin: int, cout: int, stride: int) -> str:
    """The input where the shape is kept, else a strided 1x1 conv and ``BatchNormalization``."""
    return x if stride == 1 and cin == cout else _cbr(b, x, cin, cout, 1, stride, relu=False)


def _sx_block(b: hm._Builder, x: str, cin: int, inner: int, cout: int, stride: int, cardinality: int) -> str:
    """An SE-ResNeXt bottleneck (see the module docstring); squeeze-and-excitation to ``cout`` / 16."""
    y = _cbr(b, _cbr(b, x, cin, inner, 1), inner, inner, 3, stride, group=cardinality)
    y = _se(b, _cbr(b, y, inner, cout, 1, relu=False), cout, cout // 16)
    return b.op("Relu", [b.op("Add", [y, _shortcut(b, x, cin, cout, stride)])])


def seresnext(res: int, inners: Sequence[int], depths: Sequence[int], cardinality: int = 32, classes: int = 1000) -> onnx.ModelProto:
    """SE-ResNeXt of stage bottleneck widths ``inners`` (``cardinality`` groups; out twice that) and
    ``depths`` blocks, at ``res`` x ``res`` (see the module docstring)."""
    b = hm._Builder(150)
    x, c = _max_pool(b, _cbr(b, "x", 3, 64, 7, stride=2)), 64
    for stage, (inner, depth) in enumerate(zip(inners, depths, strict=True)):
        for i in range(depth):
            x, c = _sx_block(b, x, c, inner, 2 * inner, 2 if stage and i == 0 else 1, cardinality), 2 * inner
    return b.model("seresnext", hm.graph_input([1, 3, res, res]), _head(b, x, c, classes))


def _radix_attention(b: hm._Builder, split: str, c: int, radix: int, card: int) -> str:
    """ResNeSt's attention over ``split`` ``(1, radix, c, h, w)``: ``(1, radix, c, 1, 1)`` weights, a
    softmax over the radix (rSoftMax) for each of the ``card`` groups."""
    gap = b.op("GlobalAveragePool", [b.op("ReduceSum", [split, b.const(hm.i64([1]))], keepdims=0)])
    inter = max(c * radix // 4, 32)
    a = b.op("Relu", [hm.batch_norm(b, _conv1x1(b, gap, c, inter, card), inter)])
    a = b.op("Reshape", [_conv1x1(b, a, inter, c * radix, card), b.const(hm.i64([1, card, radix, -1]))])
    a = b.op("Softmax", [b.op("Transpose", [a], perm=[0, 2, 1, 3])], axis=1)
    return b.op("Reshape", [a, b.const(hm.i64([1, radix, c, 1, 1]))])


def _split_attention(b: hm._Builder, x: str, c: int, size: int, radix: int, card: int) -> str:
    """ResNeSt's SplAtConv2d on ``x`` ``(1, c, size, size)``: the grouped 3x3 conv to ``radix`` x
    ``c`` channels, its splits summed under their attention weights."""
    y = _cbr(b, x, c, c * radix, 3, group=card * radix)
    split = b.op("Reshape", [y, b.const(hm.i64([1, radix, c, size, size]))])
    weighted = b.op("Mul", [split, _radix_attention(b, split, c, radix, card)])
    return b.op("ReduceSum", [weighted, b.const(hm.i64([1]))], keepdims=0)


#: ResNeSt's bottleneck width (the ``d`` of ``2s1x64d``) for each cardinality the batch builds.
_BOTTLENECK = {1: 64, 2: 40}


def _splat_block(b: hm._Builder, x: str, cin: int, planes: int, size: int, stride: int, first: bool, radix: int, card: int) -> str:
    """A ResNeSt bottleneck on ``x`` ``(1, cin, size, size)`` to ``4 * planes`` channels (see the
    module docstring); ``first``: the network's first block, which takes the avd pool unstrided."""
    width, cout = planes * _BOTTLENECK[card] // 64 * card, 4 * planes
    y = _split_attention(b, _cbr(b, x, cin, width, 1), width, size, radix, card)
    if stride > 1 or first:  # avd: the stride taken by a 3x3 average pool after the attention
        y = b.op("AveragePool", [y], kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1], count_include_pad=1)
    y = _cbr(b, y, width, cout, 1, relu=False)
    short = x
    if stride > 1:  # avg_down: the shortcut's stride taken by an average pool
        short = b.op("AveragePool", [x], kernel_shape=[stride, stride], strides=[stride, stride], ceil_mode=1, count_include_pad=0)
    if stride > 1 or cin != cout:
        short = _cbr(b, short, cin, cout, 1, relu=False)
    return b.op("Relu", [b.op("Add", [y, short])])


def resnest(res: int, planes: Sequence[int], depths: Sequence[int], card: int = 1, radix: int = 2, classes: int = 1000) -> onnx.ModelProto:
    """ResNeSt of radix ``radix``, cardinality ``card`` (bottleneck width 64 for 1, 40 for 2), stage
    ``planes`` and ``depths`` at ``res`` x ``res`` (see the module docstring)."""
    b = hm._Builder(151)
    x = _cbr(b, _cbr(b, _cbr(b, "x", 3, 32, stride=2), 32, 32), 32, 64)
    x, c, size = _max_pool(b, x), 64, res // 4
    for stage, (p, depth) in enumerate(zip(planes, depths, strict=True)):
        for i in range(depth):
            stride = 2 if stage and i == 0 else 1
            x, c, size = _splat_block(b, x, c, p, size, stride, stage == i == 0, radix, card), 4 * p, size // stride
    return b.model("resnest", hm.graph_input([1, 3, res, res]), _head(b, x, c, classes))


#: GhostNet's bottlenecks: kernel, expansion, out channels, squeeze-and-excitation ratio, stride.
_GHOST_CFG: tuple[tuple[int, int, int, float, int], ...] = (
    (3, 16, 16, 0, 1), (3, 48, 24, 0, 2), (3, 72, 24, 0, 1), (5, 72, 40, 0.25, 2), (5, 120, 40, 0.25, 1),
    (3, 240, 80, 0, 2), (3, 200, 80, 0, 1), (3, 184, 80, 0, 1), (3, 184, 80, 0, 1), (3, 480, 112, 0.25, 1),
    (3, 672, 112, 0.25, 1), (5, 672, 160, 0.25, 2), (5, 960, 160, 0, 1), (5, 960, 160, 0.25, 1), (5, 960, 160, 0, 1),
    (5, 960, 160, 0.25, 1),
)  # fmt: skip


def _divisible(v: float, d: int = 4) -> int:
    """GhostNet's ``_make_divisible``: ``v`` to a multiple of ``d``, not under 90 % of ``v``."""
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


def _ghost_module(b: hm._Builder, x: str, cin: int, cout: int, relu: bool) -> str:
    """A ghost module: a 1x1 conv to half of ``cout``, a depthwise 3x3 on that, both concatenated."""
    init = math.ceil(cout / 2)
    primary = _cbr(b, x, cin, init, 1, relu=relu)
    both = b.op("Concat", [primary, _cbr(b, primary, init, init, 3, group=init, relu=relu)], axis=1)
    return b.op("Slice", [both, b.const(hm.i64([0])), b.const(hm.i64([cout])), b.const(hm.i64([1]))])


def _ghost_bottleneck(b: hm._Builder, x: str, cin: int, mid: int, cout: int, k: int, stride: int, se: float) -> str:
    """A ghost bottleneck (see the module docstring)."""
    y = _ghost_module(b, x, cin, mid, relu=True)
    if stride > 1:
        y = _cbr(b, y, mid, mid, k, stride, group=mid, relu=False)
    if se:
        y = _se(b, y, mid, _divisible(mid * se), "HardSigmoid", alpha=1.0 / 6, beta=0.5)
    y = _ghost_module(b, y, mid, cout, relu=False)
    if stride == 1 and cin == cout:
        return b.op("Add", [y, x])
    short = _cbr(b, _cbr(b, x, cin, cin, k, stride, group=cin, relu=False), cin, cout, 1, relu=False)
    return b.op("Add", [y, short])


def ghostnet(width: float, res: int, classes: int = 1000) -> onnx.ModelProto:
    """GhostNet of width multiplier ``width`` at ``res`` x ``res`` (see the module docstring)."""
    b = hm._Builder(152)
    c = _divisible(16 * width)
    x = _cbr(b, "x", 3, c, stride=2)
    for k, exp, out, se, stride in _GHOST_CFG:
        mid, cout = _divisible(exp * width), _divisible(out * width)
        x, c = _ghost_bottleneck(b, x, c, mid, cout, k, stride, se), cout
    last = _divisible(960 * width)
    x = b.op("GlobalAveragePool", [_cbr(b, x, c, last, 1)])
    flat = b.op("Flatten", [b.op("Relu", [_conv1x1(b, x, last, 1280)])])
    logits = b.op("Gemm", [flat, b.weight((classes, 1280), scale=1.0 / np.sqrt(1280)), b.weight((classes,))], transB=1)
    return b.model("ghostnet", hm.graph_input([1, 3, res, res]), logits)


def _separable(b: hm._Builder, x: str, cin: int, cout: int) -> str:
    """``Relu``, then a depthwise 3x3 and a pointwise 1x1 conv, each with ``BatchNormalization``."""
    return _cbr(b, _cbr(b, b.op("Relu", [x]), cin, cin, 3, group=cin, relu=False), cin, cout, 1, relu=False)


def _entry_block(b: hm._Builder, x: str, cin: int, cout: int) -> str:
    """An Xception entry block: two separable convs, a stride-2 ``MaxPool``, a strided 1x1 residual."""
    y = _max_pool(b, _separable(b, _separable(b, x, cin, cout), cout, cout))
    return b.op("Add", [y, _cbr(b, x, cin, cout, 1, stride=2, relu=False)])


def _middle_block(b: hm._Builder, x: str, c: int) -> str:
    """An Xception middle block: three separable convs and the identity residual."""
    y = x
    for _ in range(3):
        y = _separable(b, y, c, c)
    return b.op("Add", [y, x])


def xception(res: int, middle: int, widths: Sequence[int] = (32, 64, 128, 256, 728), classes: int = 1000) -> onnx.ModelProto:
    """Xception's entry flow (two convs of ``widths[:2]``, entry blocks to the rest) and ``middle``
    middle blocks at ``res`` x ``res``, a ``Relu`` and a ``Gemm`` head (see the module docstring)."""
    b = hm._Builder(153)
    x = _cbr(b, _cbr(b, "x", 3, widths[0], stride=2), widths[0], widths[1])
    c = widths[1]
    for out in widths[2:]:
        x, c = _entry_block(b, x, c, out), out
    for _ in range(middle):
        x = _middle_block(b, x, c)
    return b.model("xception", hm.graph_input([1, 3, res, res]), _head(b, b.op("Relu", [x]), c, classes))


def _rep_block(b: hm._Builder, x: str, cin: int, cout: int, stride: int, group: int) -> str:
    """A RepVGG training block: 3x3 conv + BN, 1x1 conv + BN, the identity BN where the shape is
    kept, summed, ``Relu``."""
    y = b.op("Add", [_cbr(b, x, cin, cout, 3, stride, group, relu=False), _cbr(b, x, cin, cout, 1, stride, group, relu=False)])
    if stride == 1 and cin == cout:
        y = b.op("Add", [y, hm.batch_norm(b, x, cin)])
    return b.op("Relu", [y])


def repvgg(res: int, widths: Sequence[int], depths: Sequence[int], groups: int = 1, classes: int = 1000) -> onnx.ModelProto:
    """RepVGG of stage ``widths`` and ``depths`` (each stage's first block strided) at ``res`` x ``res``;
    the convs of even-numbered layers grouped by ``groups`` (see the module docstring)."""
    b = hm._Builder(154)
    x, c, layer = "x", 3, 0
    for width, depth in zip(widths, depths, strict=True):
        for i in range(depth):
            group = groups if layer and layer % 2 == 0 else 1
            x, c, layer = _rep_block(b, x, c, width, 2 if i == 0 else 1, group), width, layer + 1
    return b.model("repvgg", hm.graph_input([1, 3, res, res]), _head(b, x, c, classes))


#: RepVGG-A0's stage widths (64 x 0.75, then 512 x 2.5 for the last) and depths.
_A0 = ((48, 48, 96, 192, 1280), (1, 2, 4, 14, 1))

SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "seresnext_r112": partial(seresnext, 112, (128, 256), (1, 1)),
    "seresnext_r160": partial(seresnext, 160, (128, 256), (2, 2)),
    "resnest_2s1x64d": partial(resnest, 96, (64, 128), (1, 1)),
    "resnest_2s2x40d": partial(resnest, 128, (64, 128), (2, 2), card=2),
    "ghostnet_w05r112": partial(ghostnet, 0.5, 112),
    "ghostnet_w10r160": partial(ghostnet, 1.0, 160),
    "xception_r96m2": partial(xception, 96, 2),
    "xception_r128m4": partial(xception, 128, 4),
    "repvgg_a0r64": partial(repvgg, 64, *_A0),
    "repvgg_a0g4r96": partial(repvgg, 96, *_A0, groups=4),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
