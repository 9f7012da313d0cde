"""The eighteenth batch of unseen models for the host CPU fidelity check: five more families no
held-out model resembled, two sizes each, built after the seventeenth batch's changes and run as
they came:

- ``convmixer``: ConvMixer: a patch-embedding conv, then per block a large depthwise conv (9x9 or
  7x7) with GELU (``Erf``) and BatchNormalization in a residual, a pointwise conv, GELU and
  BatchNormalization;
- ``cbam``: ResNet basic blocks with CBAM: channel attention (``GlobalAveragePool`` and
  ``GlobalMaxPool`` through one shared MLP of 1x1 convs, ``Sigmoid``) and spatial attention (a
  ``ReduceMean`` and a ``ReduceMax`` over the channels, ``Concat``, a 7x7 conv of 2 channels,
  ``Sigmoid``), each broadcast back by ``Mul``;
- ``nonlocal``: a non-local block over a conv feature map: theta, phi and g by 1x1 convs,
  ``Reshape`` and ``Transpose`` to positions, a ``MatMul`` of every position with every other, a
  ``Softmax`` over rows of 1,024-4,096 positions, a second ``MatMul``, a 1x1 conv back, a residual;
- ``tasnet``: Conv-TasNet: a strided 1-D conv encoder, then per block a 1x1 conv, ``PRelu``,
  global layer norm (``ReduceMean`` over channels and time), a dilated depthwise 1-D conv,
  ``PRelu``, global layer norm and 1x1 residual and skip convs; a mask (``Sigmoid``) on the
  encoding and a 1-D ``ConvTranspose`` decoder of stride 8;
- ``centernet``: CenterNet's head on a small backbone: three stride-2 ``ConvTranspose`` upsamplings,
  the heatmap, size and offset heads, and the peak extraction exporters leave (a 3x3 ``MaxPool``
  of stride 1, ``Equal`` to the heatmap, ``Cast``, ``Mul``).

``python benchmarks/heldout_unseen18.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "cbam", "centernet", "convmixer", "nonlocal_net", "tasnet"]


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: int = 1, stride: int = 1, group: int = 1,
          dilation: int = 1) -> str:  # fmt: skip
    """A 2-D conv with ``same`` padding (for odd ``k``) and a bias."""
    w = b.weight((cout, cin // group, k, k), scale=1.0 / np.sqrt(cin // group * k * k))
    return b.op("Conv", [x, w, b.weight((cout,))], kernel_shape=[k, k], strides=[stride, stride],
                pads=[dilation * (k // 2)] * 4, group=group, dilations=[dilation, dilation])  # fmt: skip


def _gelu(b: hm._Builder, x: str) -> str:
    erf = b.op("Erf", [b.op("Div", [x, b.const(hm.f32(float(np.sqrt(2))))])])
    return b.op("Mul", [b.op("Mul", [x, b.op("Add", [erf, b.const(hm.f32(1.0))])]), b.const(hm.f32(0.5))])


def convmixer(res: int, dim: int, depth: int, kernel: int, patch: int) -> onnx.ModelProto:
    """ConvMixer (see the module docstring) over a ``res`` x ``res`` RGB image."""
    b = hm._Builder(100)
    x = hm.batch_norm(b, _gelu(b, _conv(b, "x", 3, dim, patch, stride=patch)), dim)
    for _ in range(depth):
        x = b.op("Add", [x, hm.batch_norm(b, _gelu(b, _conv(b, x, dim, dim, kernel, group=dim)), dim)])
        x = hm.batch_norm(b, _gelu(b, _conv(b, x, dim, dim)), dim)
    pooled = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    out = b.op("Gemm", [pooled, b.weight((1000, dim), scale=1.0 / np.sqrt(dim)), b.weight((1000,))], transB=1)
    return b.model("convmixer", hm.graph_input([1, 3, res, res]), out)


def _cbam(b: hm._Builder, x: str, c: int) -> str:
    """CBAM's channel then spatial attention on ``x``."""
    w1, w2 = b.weight((c // 16, c, 1, 1), scale=1.0 / np.sqrt(c)), b.weight((c, c // 16, 1, 1), scale=0.25)

    def mlp(pooled: str) -> str:
        return b.op("Conv", [b.op("Relu", [b.op("Conv", [pooled, w1])]), w2])

    gate = b.op("Sigmoid", [b.op("Add", [mlp(b.op("GlobalAveragePool", [x])), mlp(b.op("GlobalMaxPool", [x]))])])
    x = b.op("Mul", [x, gate])
    maps = b.op("Concat", [b.op("ReduceMean", [x], axes=[1], keepdims=1), b.op("ReduceMax", [x], axes=[1], keepdims=1)], axis=1)
    return b.op("Mul", [x, b.op("Sigmoid", [_conv(b, maps, 2, 1, 7)])])


def cbam(res: int, widths: tuple[int, ...]) -> onnx.ModelProto:
    """ResNet basic blocks with CBAM (see the module docstring), one block a width, each after the
    first at half the resolution, over a ``res`` x ``res`` RGB image."""
    b = hm._Builder(101)
    c = widths[0]
    x = b.op("Relu", [_conv(b, "x", 3, c, 3, stride=2)])
    for i, w in enumerate(widths):
        stride = 1 if i == 0 else 2
        h = _conv(b, b.op("Relu", [_conv(b, x, c, w, 3, stride=stride)]), w, w, 3)
        skip = x if stride == 1 and w == c else _conv(b, x, c, w, 1, stride=stride)
        x, c = b.op("Relu", [b.op("Add", [_cbam(b, h, w), skip])]), w
    return b.model("cbam", hm.graph_input([1, 3, res, res]), x)


def nonlocal_net(side: int, c: int, blocks: int) -> onnx.ModelProto:
    """Non-local blocks (see the module docstring) over a ``c``-channel ``side`` x ``side`` map,
    a 3x3 conv before each."""
    b = hm._Builder(102)
    x, n, inner = "x", side * side, c // 2
    for _ in range(blocks):
        x = b.op("Relu", [_conv(b, x, c, c, 3)])

        def positions(perm: list[int], x: str = x) -> str:
            return b.op("Transpose", [b.op("Reshape", [_conv(b, x, c, inner), b.const(hm.i64([1, inner, n]))])], perm=perm)

        scores = b.op("MatMul", [positions([0, 2, 1]), positions([0, 1, 2])])  # [1, n, n]
        y = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), positions([0, 2, 1])])  # [1, n, inner]
        y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 1]), b.const(hm.i64([1, inner, side, side]))])
        x = b.op("Add", [x, _conv(b, y, inner, c)])
    return b.model("nonlocal", hm.graph_input([1, c, side, side]), x)


def _conv1d(b: hm._Builder, x: str, cin: int, cout: int, k: int = 1, group: int = 1, **attrs: object) -> str:
    w = b.weight((cout, cin // group, k), scale=1.0 / np.sqrt(cin // group * k))
    return b.op("Conv", [x, w, b.weight((cout,))], group=group, **attrs)


def _global_norm(b: hm._Builder, x: str, c: int) -> str:
    """Conv-TasNet's global layer norm: over channels and time together."""
    centered = b.op("Sub", [x, b.op("ReduceMean", [x], axes=[1, 2], keepdims=1)])
    var = b.op("ReduceMean", [b.op("Mul", [centered, centered])], axes=[1, 2], keepdims=1)
    y = b.op("Div", [centered, b.op("Sqrt", [b.op("Add", [var, b.const(hm.f32(1e-8))])])])
    return b.op("Add", [b.op("Mul", [y, b.weight((c, 1), value=1.0)]), b.weight((c, 1), value=0.0)])


def tasnet(samples: int, n: int, hidden: int, repeats: int, layers: int = 8) -> onnx.ModelProto:
    """Conv-TasNet (see the module docstring) over ``samples`` samples: ``n`` basis filters of 16
    samples at stride 8, 128-channel bottleneck, blocks of ``hidden`` channels with dilations
    1..2^(layers-1), ``repeats`` times."""
    b = hm._Builder(103)
    enc = b.op("Relu", [_conv1d(b, "x", 1, n, 16, strides=[8])])
    x = _conv1d(b, _global_norm(b, enc, n), n, 128)
    skips = []
    for _ in range(repeats):
        for d in (2**i for i in range(layers)):
            h = _global_norm(b, b.op("PRelu", [_conv1d(b, x, 128, hidden), b.weight((hidden, 1), value=0.25)]), hidden)
            h = _conv1d(b, h, hidden, hidden, 3, group=hidden, dilations=[d], pads=[d, d])
            h = _global_norm(b, b.op("PRelu", [h, b.weight((hidden, 1), value=0.25)]), hidden)
            skips.append(_conv1d(b, h, hidden, 128))
            x = b.op("Add", [x, _conv1d(b, h, hidden, 128)])
    mask = b.op("Sigmoid", [_conv1d(b, b.op("PRelu", [b.op("Sum", skips), b.weight((128, 1), value=0.25)]), 128, n)])
    w = b.weight((n, 1, 16), scale=1.0 / np.sqrt(n))
    out = b.op("ConvTranspose", [b.op("Mul", [enc, mask]), w], strides=[8])
    return b.model("tasnet", hm.graph_input([1, 1, samples]), out)


def centernet(res: int, c: int, classes: int = 80) -> onnx.ModelProto:
    """CenterNet's head (see the module docstring) on a backbone of stride-2 convs to 1/32 of a
    ``res`` x ``res`` image; the heads at 1/4."""
    b = hm._Builder(104)
    x, cin = "x", 3
    for cout in (c // 8, c // 4, c // 2, c, 2 * c):
        x, cin = b.op("Relu", [_conv(b, x, cin, cout, 3, stride=2)]), cout
    for cout in (c, c // 2, c // 2):
        w = b.weight((cin, cout, 4, 4), scale=1.0 / np.sqrt(cin * 4))
        x, cin = b.op("Relu", [b.op("ConvTranspose", [x, w], strides=[2, 2], pads=[1, 1, 1, 1])]), cout
    heat = b.op("Sigmoid", [_conv(b, b.op("Relu", [_conv(b, x, cin, 64, 3)]), 64, classes)])
    peaks = b.op("MaxPool", [heat], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    keep = b.op("Cast", [b.op("Equal", [peaks, heat])], to=TensorProto.FLOAT)
    heat = b.op("Mul", [heat, keep])
    size = _conv(b, b.op("Relu", [_conv(b, x, cin, 64, 3)]), 64, 2)
    offset = _conv(b, b.op("Relu", [_conv(b, x, cin, 64, 3)]), 64, 2)
    return b.model("centernet", hm.graph_input([1, 3, res, res]), b.op("Concat", [heat, size, offset], axis=1))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "convmixer_r224d256k9": partial(convmixer, 224, 256, 8, 9, 7),
    "convmixer_r160d384k7": partial(convmixer, 160, 384, 6, 7, 8),
    "cbam_r224w64": partial(cbam, 224, (64, 128, 256, 512)),
    "cbam_r160w32": partial(cbam, 160, (32, 64, 128, 256)),
    "nonlocal_s32c256": partial(nonlocal_net, 32, 256, 2),
    "nonlocal_s64c128": partial(nonlocal_net, 64, 128, 1),
    "tasnet_s16000n256": partial(tasnet, 16000, 256, 256, 2),
    "tasnet_s32000n128": partial(tasnet, 32000, 128, 128, 1),
    "centernet_r256c128": partial(centernet, 256, 128),
    "centernet_r384c64": partial(centernet, 384, 64),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
