"""The fourteenth batch of unseen models for the host CPU fidelity check: six more families no
held-out model resembled, two sizes each, built after the thirteenth batch's changes and run as
they came:

- ``cyclegan``: CycleGAN's ResNet generator: reflection padding (``Pad`` ``mode="reflect"``),
  ``InstanceNormalization``, strided convs down, residual blocks, ``ConvTranspose`` up, ``Tanh``;
- ``preproc``: a deployment's preprocessing graph: a ``uint8`` NHWC camera frame ``Cast`` to float,
  ``Transpose`` to NCHW, a bilinear ``Resize``, mean and scale (``Sub``, ``Div``) per channel, then
  a small CNN;
- ``waveunet``: Wave-U-Net over raw audio: 1D convs, decimation by a strided ``Slice``, linear
  ``Resize`` up and skip ``Concat`` s;
- ``bifpn``: EfficientDet's BiFPN: three feature levels fused by learned non-negative weights
  (``Relu``, sums, ``Div``), depthwise-separable convs, nearest ``Resize`` up and ``MaxPool`` down;
- ``dgcnn``: DGCNN's EdgeConv over a point cloud: pairwise distances by ``MatMul``, the ``k``
  nearest by ``TopK``, their features by ``Gather``, a 1x1 conv over edge features, ``ReduceMax``;
- ``siren``: a SIREN coordinate MLP: ``Sin`` activations between ``Gemm`` s over a batch of points.

``python benchmarks/heldout_unseen14.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "bifpn", "cyclegan", "dgcnn", "preproc", "siren", "waveunet"]


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: int, **attrs: object) -> str:
    return b.op("Conv", [x, b.weight((cout, cin // int(attrs.get("group", 1)), *(k,) * (2 if "1d" not in attrs else 1))),
                         b.weight((cout,))], **{a: v for a, v in attrs.items() if a != "1d"})  # fmt: skip


def _inorm(b: hm._Builder, x: str, c: int) -> str:
    return b.op("InstanceNormalization", [x, b.weight((c,), value=1.0), b.weight((c,), value=0.0)])


def cyclegan(res: int, width: int, blocks: int) -> onnx.ModelProto:
    """CycleGAN's generator (see the module docstring) at ``res`` x ``res``, ``width`` base channels."""
    b = hm._Builder(60)

    def reflect(x: str, p: int) -> str:
        return b.op("Pad", [x, b.const(hm.i64([0, 0, p, p, 0, 0, p, p]))], mode="reflect")

    x = b.op("Relu", [_inorm(b, _conv(b, reflect("x", 3), 3, width, 7), width)])
    c = width
    for _ in range(2):
        x = b.op("Relu", [_inorm(b, _conv(b, x, c, 2 * c, 3, strides=[2, 2], pads=[1] * 4), 2 * c)])
        c *= 2
    for _ in range(blocks):
        y = b.op("Relu", [_inorm(b, _conv(b, reflect(x, 1), c, c, 3), c)])
        x = b.op("Add", [x, _inorm(b, _conv(b, reflect(y, 1), c, c, 3), c)])
    for _ in range(2):
        up = b.op("ConvTranspose", [x, b.weight((c, c // 2, 3, 3)), b.weight((c // 2,))], strides=[2, 2], pads=[1] * 4,
                  output_padding=[1, 1])  # fmt: skip
        x, c = b.op("Relu", [_inorm(b, up, c // 2)]), c // 2
    return b.model("cyclegan", hm.graph_input([1, 3, res, res]), b.op("Tanh", [_conv(b, reflect(x, 3), c, 3, 7)]))


def preproc(height: int, width: int, res: int) -> onnx.ModelProto:
    """A ``height`` x ``width`` uint8 NHWC frame to a normalized ``res`` x ``res`` NCHW tensor, then a small CNN."""
    b = hm._Builder(61)
    x = b.op("Transpose", [b.op("Cast", ["frame"], to=TensorProto.FLOAT)], perm=[0, 3, 1, 2])
    x = b.op("Resize", [x, "", "", b.const(hm.i64([1, 3, res, res]))], mode="linear")
    mean = b.const(np.array([123.7, 116.3, 103.5], np.float32).reshape(1, 3, 1, 1))
    std = b.const(np.array([58.4, 57.1, 57.4], np.float32).reshape(1, 3, 1, 1))
    x, c = b.op("Div", [b.op("Sub", [x, mean]), std]), 3
    for cout in (16, 32, 64):
        x, c = b.op("Relu", [_conv(b, x, c, cout, 3, strides=[2, 2], pads=[1] * 4)]), cout
    head = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.model("preproc", [helper.make_tensor_value_info("frame", TensorProto.UINT8, [1, height, width, 3])],
                   b.op("Gemm", [head, b.weight((10, c)), b.weight((10,))], transB=1))  # fmt: skip


def waveunet(samples: int, width: int, levels: int) -> onnx.ModelProto:
    """Wave-U-Net over ``samples`` mono samples: ``levels`` down (conv 15, keep every second
    sample) and up (linear x2, concat the skip, conv 5)."""
    b = hm._Builder(62)
    x, c, n, skips = "x", 1, samples, []
    for i in range(levels):
        cout = width * (i + 1)
        x = b.op("LeakyRelu", [_conv(b, x, c, cout, 15, pads=[7, 7], **{"1d": True})], alpha=0.2)
        skips.append((x, cout))
        x = b.op("Slice", [x, b.const(hm.i64([0])), b.const(hm.i64([n])), b.const(hm.i64([2])), b.const(hm.i64([2]))])
        c, n = cout, n // 2
    for skip, sc in reversed(skips):
        up = b.op("Resize", [x, "", b.const(np.array([1, 1, 2], np.float32))], mode="linear")
        x = b.op("Concat", [up, skip], axis=1)
        x, c = b.op("LeakyRelu", [_conv(b, x, c + sc, sc, 5, pads=[2, 2], **{"1d": True})], alpha=0.2), sc
    return b.model("waveunet", hm.graph_input([1, 1, samples]), b.op("Tanh", [_conv(b, x, c, 1, 1, **{"1d": True})]))


def bifpn(res: int, width: int, layers: int) -> onnx.ModelProto:
    """``layers`` BiFPN layers over three levels of ``width`` channels at ``res``, ``res/2``, ``res/4``."""
    b = hm._Builder(63)
    levels = [b.op("Relu", [_conv(b, "x", 3, width, 3, strides=[2, 2], pads=[1] * 4)])]
    for _ in range(2):
        levels.append(b.op("MaxPool", [levels[-1]], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))

    def fuse(inputs: list[str]) -> str:
        w = [b.op("Relu", [b.weight((1,), value=1.0)]) for _ in inputs]
        total = b.op("Add", [b.op("Sum", w), b.const(hm.f32(1e-4))])
        mixed = b.op("Sum", [b.op("Mul", [t, wi]) for t, wi in zip(inputs, w, strict=True)])
        sep = _conv(b, b.op("Sigmoid", [b.op("Div", [mixed, total])]), width, width, 3, group=width, pads=[1] * 4)
        return b.op("Relu", [_conv(b, sep, width, width, 1)])

    def up(t: str) -> str:
        return b.op("Resize", [t, "", b.const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")

    def down(t: str) -> str:
        return b.op("MaxPool", [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)

    for _ in range(layers):
        mid = fuse([levels[1], up(levels[2])])
        top = fuse([levels[0], up(mid)])
        mid2 = fuse([levels[1], mid, down(top)])
        levels = [top, mid2, fuse([levels[2], down(mid2)])]
    heads = [b.op("Flatten", [b.op("GlobalAveragePool", [t])]) for t in levels]
    return b.model("bifpn", hm.graph_input([1, 3, res, res]), b.op("Concat", heads, axis=1))


def dgcnn(points: int, k: int, width: int) -> onnx.ModelProto:
    """Two EdgeConv layers over ``points`` 3-D points, ``k`` neighbours each, then a max-pool over points."""
    b = hm._Builder(64)
    x, c = "x", 3  # [points, c]
    feats = []
    for _ in range(2):
        inner = b.op("MatMul", [x, b.op("Transpose", [x], perm=[1, 0])])
        sq = b.op("ReduceSum", [b.op("Mul", [x, x]), b.const(hm.i64([1]))], keepdims=1)
        neg = b.op("Sub", [b.op("Mul", [inner, b.const(hm.f32(2.0))]), b.op("Add", [sq, b.op("Transpose", [sq], perm=[1, 0])])])
        idx = b.name("knn")
        b.nodes.append(helper.make_node("TopK", [neg, b.const(hm.i64([k]))], [b.name("knn_val"), idx], name=b.name("TopK"), axis=-1))
        nbr = b.op("Gather", [x, idx], axis=0)  # [points, k, c]
        centre = b.op("Unsqueeze", [x, b.const(hm.i64([1]))])
        edge = b.op("Concat", [b.op("Expand", [centre, b.const(hm.i64([points, k, c]))]), b.op("Sub", [nbr, centre])], axis=-1)
        h = b.op("LeakyRelu", [b.op("MatMul", [edge, b.weight((2 * c, width))])], alpha=0.2)
        x, c = b.op("ReduceMax", [h], axes=[1], keepdims=0), width
        feats.append(x)
    out = b.op("ReduceMax", [b.op("MatMul", [b.op("Concat", feats, axis=1), b.weight((2 * width, 256))])], axes=[0], keepdims=0)
    return b.model("dgcnn", hm.graph_input([points, 3]), out)


def siren(points: int, width: int, layers: int) -> onnx.ModelProto:
    """A SIREN: ``sin(30 (W x + b))`` over ``layers`` hidden layers of ``width``, ``points`` 2-D coordinates in a batch."""
    b = hm._Builder(65)
    x, c = "x", 2
    for _ in range(layers):
        lin = b.op("Gemm", [x, b.weight((width, c), scale=1.0 / c), b.weight((width,))], transB=1)
        x, c = b.op("Sin", [b.op("Mul", [lin, b.const(hm.f32(30.0))])]), width
    return b.model("siren", hm.graph_input([points, 2]), b.op("Gemm", [x, b.weight((3, c)), b.weight((3,))], transB=1))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "cyclegan_r128w32b3": partial(cyclegan, 128, 32, 3),
    "cyclegan_r96w16b6": partial(cyclegan, 96, 16, 6),
    "preproc_h480w640r224": partial(preproc, 480, 640, 224),
    "preproc_h720w1280r320": partial(preproc, 720, 1280, 320),
    "waveunet_s16384w24l4": partial(waveunet, 16384, 24, 4),
    "waveunet_s65536w12l5": partial(waveunet, 65536, 12, 5),
    "bifpn_r256w64l2": partial(bifpn, 256, 64, 2),
    "bifpn_r384w48l3": partial(bifpn, 384, 48, 3),
    "dgcnn_p1024k20w64": partial(dgcnn, 1024, 20, 64),
    "dgcnn_p2048k16w32": partial(dgcnn, 2048, 16, 32),
    "siren_p4096w256l3": partial(siren, 4096, 256, 3),
    "siren_p16384w128l4": partial(siren, 16384, 128, 4),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
