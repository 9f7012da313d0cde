"""The twenty-second batch of unseen models for the host CPU fidelity check: the four models of the
MLPerf Tiny inference benchmark (models of tens to hundreds of microseconds, where what a kernel
costs beside its arithmetic is most of the time) and RegNetY, two sizes each, built after the
recurrent and col2im changes of 2026-12-07 and run as they came:

- ``dscnn``: the keyword spotter of MLPerf Tiny (DS-CNN, "Hello Edge"): a 10x4 strided conv over
  49 x 10 MFCCs, then depthwise-separable blocks (a depthwise 3x3 and a pointwise conv, each with
  ``BatchNormalization`` and ``Relu``), an ``AveragePool`` over the map, a ``Gemm`` and ``Softmax``;
- ``vww``: the visual wake words person detector (MobileNetV1 of width 0.25 at 96 x 96; 0.5 at 128);
- ``resnet8``: the CIFAR-10 image classifier (ResNet-8: three stacks of one residual block of two
  3x3 convs, 1x1 projections where a stack halves the map; ResNet-20 with three blocks a stack);
- ``fcae``: the anomaly detector of MLPerf Tiny's ToyADMOS task: a dense autoencoder 640 -> 128 x
  4 -> 8 -> 128 x 4 -> 640, each layer a ``Gemm`` with ``BatchNormalization`` over its 2-D output
  and ``Relu``, the error as ``ReduceMean`` of the squared difference; batch 1 and 196 frames;
- ``regnety``: RegNetY-200MF and -400MF (Radosavovic et al. 2020): a 3x3 stem, then per block a 1x1
  conv, a grouped 3x3 conv of group width 8 (strided at each stage's first), squeeze-and-excitation
  (``GlobalAveragePool``, two 1x1 convs, ``Sigmoid``, ``Mul``), a 1x1 conv and a residual.

``python benchmarks/heldout_unseen22.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "dscnn", "fcae", "regnety", "resnet8", "vww"]


def _cbr(b: hm._Builder, x: str, cin: int, cout: int, k: tuple[int, int] = (3, 3), stride: int = 1,
         group: int = 1, relu: bool = True) -> str:  # fmt: skip
    """A conv without bias (``same`` padding for odd kernels, PyTorch's for even ones), its
    ``BatchNormalization`` and, unless told not, ``Relu``."""
    w = b.weight((cout, cin // group, *k), scale=1.0 / np.sqrt(cin // group * k[0] * k[1]))
    pads = [(k[0] - 1) // 2, (k[1] - 1) // 2, k[0] // 2, k[1] // 2]
    y = hm.batch_norm(b, b.op("Conv", [x, w], kernel_shape=list(k), strides=[stride, stride], pads=pads, group=group), cout)
    return b.op("Relu", [y]) if relu else y


def _head(b: hm._Builder, x: str, c: int, classes: int, softmax: bool = True) -> str:
    """Global average pool, flatten, a ``Gemm`` to ``classes`` and, unless told not, ``Softmax``."""
    flat = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    logits = b.op("Gemm", [flat, b.weight((classes, c), scale=1.0 / np.sqrt(c)), b.weight((classes,))], transB=1)
    return b.op("Softmax", [logits], axis=-1) if softmax else logits


def dscnn(channels: int, blocks: int) -> onnx.ModelProto:
    """DS-CNN (see the module docstring) of ``channels`` and ``blocks`` depthwise-separable blocks."""
    b = hm._Builder(140)
    x = _cbr(b, "x", 1, channels, (10, 4), stride=2)
    for _ in range(blocks):
        x = _cbr(b, _cbr(b, x, channels, channels, group=channels), channels, channels, (1, 1))
    pooled = b.op("AveragePool", [x], kernel_shape=[25, 5])
    flat = b.op("Flatten", [pooled])
    logits = b.op("Gemm", [flat, b.weight((12, channels), scale=0.1), b.weight((12,))], transB=1)
    return b.model("dscnn", hm.graph_input([1, 1, 49, 10]), b.op("Softmax", [logits], axis=-1))


def vww(alpha: float, res: int) -> onnx.ModelProto:
    """MobileNetV1 of width ``alpha`` at ``res`` x ``res``, two classes (see the module docstring)."""
    b = hm._Builder(141)
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2), (1024, 1)]
    c = int(32 * alpha)
    x = _cbr(b, "x", 3, c, stride=2)
    for width, stride in plan:
        out = int(width * alpha)
        x = _cbr(b, _cbr(b, x, c, c, stride=stride, group=c), c, out, (1, 1))
        c = out
    return b.model("vww", hm.graph_input([1, 3, res, res]), _head(b, x, c, 2))


def _basic(b: hm._Builder, x: str, cin: int, cout: int, stride: int) -> str:
    """A ResNet basic block: two 3x3 convs, a 1x1 strided projection where the shape changes."""
    y = _cbr(b, _cbr(b, x, cin, cout, stride=stride), cout, cout, relu=False)
    short = x if stride == 1 and cin == cout else _cbr(b, x, cin, cout, (1, 1), stride=stride, relu=False)
    return b.op("Relu", [b.op("Add", [y, short])])


def resnet8(blocks: int, width: int = 16) -> onnx.ModelProto:
    """The CIFAR ResNet of ``blocks`` basic blocks a stack (1: ResNet-8, 3: ResNet-20), 32 x 32."""
    b = hm._Builder(142)
    x, c = _cbr(b, "x", 3, width), width
    for stack in range(3):
        out = width << stack
        for i in range(blocks):
            x, c = _basic(b, x, c, out, 2 if stack and i == 0 else 1), out
    return b.model("resnet8", hm.graph_input([1, 3, 32, 32]), _head(b, x, c, 10))


def _dense_bn(b: hm._Builder, x: str, k: int, n: int, relu: bool = True) -> str:
    """A ``Gemm`` of ``k`` -> ``n``, ``BatchNormalization`` over its ``(rows, n)`` output, ``Relu``."""
    y = b.op("Gemm", [x, b.weight((n, k), scale=1.0 / np.sqrt(k)), b.weight((n,))], transB=1)
    y = hm.batch_norm(b, y, n)
    return b.op("Relu", [y]) if relu else y


def fcae(rows: int, features: int = 640, hidden: int = 128, code: int = 8) -> onnx.ModelProto:
    """The ToyADMOS dense autoencoder (see the module docstring) over ``rows`` frames."""
    b = hm._Builder(143)
    widths = [features, *[hidden] * 4, code, *[hidden] * 4]
    x = "x"
    for k, n in itertools.pairwise(widths):
        x = _dense_bn(b, x, k, n)
    recon = b.op("Gemm", [x, b.weight((features, hidden), scale=1.0 / np.sqrt(hidden)), b.weight((features,))], transB=1)
    diff = b.op("Sub", [recon, "x"])
    return b.model("fcae", hm.graph_input([rows, features]), b.op("ReduceMean", [b.op("Mul", [diff, diff])], keepdims=0))


def _y_block(b: hm._Builder, x: str, cin: int, cout: int, stride: int, group_width: int) -> str:
    """A RegNetY block (see the module docstring); squeeze-and-excitation to a quarter of ``cin``."""
    y = _cbr(b, x, cin, cout, (1, 1))
    y = _cbr(b, y, cout, cout, stride=stride, group=cout // group_width)
    squeeze = max(1, cin // 4)
    s = b.op("Conv", [b.op("GlobalAveragePool", [y]), b.weight((squeeze, cout, 1, 1), scale=0.1), b.weight((squeeze,))])
    s = b.op("Conv", [b.op("Relu", [s]), b.weight((cout, squeeze, 1, 1), scale=0.1), b.weight((cout,))])
    y = _cbr(b, b.op("Mul", [y, b.op("Sigmoid", [s])]), cout, cout, (1, 1), relu=False)
    short = x if stride == 1 and cin == cout else _cbr(b, x, cin, cout, (1, 1), stride=stride, relu=False)
    return b.op("Relu", [b.op("Add", [y, short])])


def regnety(widths: Sequence[int], depths: Sequence[int], group_width: int = 8, res: int = 224) -> onnx.ModelProto:
    """RegNetY of the given stage ``widths`` and ``depths`` (see the module docstring)."""
    b = hm._Builder(144)
    x, c = _cbr(b, "x", 3, 32, stride=2), 32
    for width, depth in zip(widths, depths, strict=True):
        for i in range(depth):
            x, c = _y_block(b, x, c, width, 2 if i == 0 else 1, group_width), width
    return b.model("regnety", hm.graph_input([1, 3, res, res]), _head(b, x, c, 1000, softmax=False))


SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "dscnn_c64b4": partial(dscnn, 64, 4),
    "dscnn_c276b5": partial(dscnn, 276, 5),
    "vww_a25r96": partial(vww, 0.25, 96),
    "vww_a50r128": partial(vww, 0.5, 128),
    "resnet_d8": partial(resnet8, 1),
    "resnet_d20": partial(resnet8, 3),
    "fcae_r1": partial(fcae, 1),
    "fcae_r196": partial(fcae, 196),
    "regnety_200mf": partial(regnety, (24, 56, 152, 368), (1, 1, 4, 7)),
    "regnety_400mf": partial(regnety, (48, 104, 208, 440), (1, 3, 6, 6)),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
