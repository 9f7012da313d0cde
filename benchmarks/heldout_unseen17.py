"""The seventeenth batch of unseen models for the host CPU fidelity check: five more families no
held-out model resembled, two sizes each, built after the sixteenth batch's changes and run as
they came:

- ``inception``: Inception-v3's modules at 35x35 and 17x17: four branches each (1x1; 1x1 then
  5x5; 1x1 then two 3x3; a 3x3 ``AveragePool`` of stride 1 then 1x1), the grid reduction, and
  the factorized 1x7 / 7x1 convs of the 17x17 modules, ``Concat``ed along channels;
- ``poolformer``: PoolFormer blocks: GroupNorm of one group (``InstanceNormalization`` over the
  whole map, as PyTorch exports it), a 3x3 ``AveragePool`` that does not count padding minus its
  input as the token mixer, layer scales, a 1x1-conv MLP with exact GELU (``Erf``);
- ``stylegan``: StyleGAN2's synthesis network: a mapping MLP (``LeakyRelu``), then per layer a
  modulated 3x3 conv whose weight is computed at run time (the style times the weight,
  demodulated by ``ReduceSum``, ``Sqrt`` and ``Reciprocal``), noise injection, bias and
  ``LeakyRelu``, nearest upsampling, and to-RGB 1x1 convs summed over the resolutions;
- ``deepfm``: DeepFM over a batch of table rows: one embedding table for every field
  (``Gather``), the factorization machine's pairwise term (square of the sum minus the sum of
  squares, ``ReduceSum``), first-order weights, a deep MLP, ``Sigmoid``;
- ``pspnet``: PSPNet: a strided and dilated conv backbone to 1/8 resolution, the pyramid pooling
  module (``AveragePool`` to 1, 2, 3 and 6 bins or 1, 2, 4 and 8, 1x1 convs, bilinear ``Resize``
  back up, ``Concat``), a 3x3 head and a bilinear ``Resize`` to the input's size.

``python benchmarks/heldout_unseen17.py DIR --chip FP.yaml`` writes them and validates each
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

__all__ = ["SIZES", "deepfm", "inception", "poolformer", "pspnet", "stylegan"]


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: tuple[int, int] = (1, 1), stride: int = 1,
          dilation: int = 1, relu: bool = True) -> str:  # fmt: skip
    """A conv with its BatchNormalization folded (as exported), ``same`` padding, then ReLU."""
    pads = [dilation * (k[0] // 2), dilation * (k[1] // 2)] * 2
    w = b.weight((cout, cin, *k), scale=1.0 / np.sqrt(cin * k[0] * k[1]))
    y = b.op("Conv", [x, w, b.weight((cout,))], kernel_shape=list(k), strides=[stride, stride], pads=pads,
             dilations=[dilation, dilation])  # fmt: skip
    return b.op("Relu", [y]) if relu else y


def _concat(b: hm._Builder, parts: list[str]) -> str:
    return b.op("Concat", parts, axis=1)


def _inception_a(b: hm._Builder, x: str, cin: int, pool: int, w: float) -> tuple[str, int]:
    c = [max(8, int(v * w)) for v in (64, 48, 64, 96)]
    b1 = _conv(b, x, cin, c[0])
    b5 = _conv(b, _conv(b, x, cin, c[1]), c[1], c[0], (5, 5))
    b3 = _conv(b, _conv(b, _conv(b, x, cin, c[0]), c[0], c[3], (3, 3)), c[3], c[3], (3, 3))
    bp = _conv(b, b.op("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1), cin, pool)
    return _concat(b, [b1, b5, b3, bp]), 2 * c[0] + c[3] + pool


def _reduction(b: hm._Builder, x: str, cin: int, w: float) -> tuple[str, int]:
    c = [max(8, int(v * w)) for v in (384, 64, 96)]
    b3 = _conv(b, x, cin, c[0], (3, 3), stride=2)
    bd = _conv(b, _conv(b, _conv(b, x, cin, c[1]), c[1], c[2], (3, 3)), c[2], c[2], (3, 3), stride=2)
    bp = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    return _concat(b, [b3, bd, bp]), c[0] + c[2] + cin


def _inception_c(b: hm._Builder, x: str, cin: int, c7: int, w: float) -> tuple[str, int]:
    c = max(8, int(192 * w))
    b1 = _conv(b, x, cin, c)
    b7 = _conv(b, _conv(b, _conv(b, x, cin, c7), c7, c7, (1, 7)), c7, c, (7, 1))
    bd = _conv(b, x, cin, c7)
    for k, cout in (((7, 1), c7), ((1, 7), c7), ((7, 1), c7), ((1, 7), c)):
        bd = _conv(b, bd, c7, cout, k)
    bp = _conv(b, b.op("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1), cin, c)
    return _concat(b, [b1, b7, bd, bp]), 4 * c


def inception(w: float, res: int = 35) -> onnx.ModelProto:
    """Inception-v3's middle (see the module docstring) at width ``w`` of the published one,
    from a ``192 w``-channel map of ``res`` x ``res``."""
    b = hm._Builder(90)
    cin = max(8, int(192 * w))
    x, c = _inception_a(b, "x", cin, max(8, int(32 * w)), w)
    x, c = _inception_a(b, x, c, max(8, int(64 * w)), w)
    x, c = _reduction(b, x, c, w)
    for c7 in (128, 160):
        x, c = _inception_c(b, x, c, max(8, int(c7 * w)), w)
    pooled = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    out = b.op("Gemm", [pooled, b.weight((1000, c), scale=1.0 / np.sqrt(c)), b.weight((1000,))], transB=1)
    return b.model("inception", hm.graph_input([1, cin, res, res]), out)


def _group_norm1(b: hm._Builder, x: str, c: int, res: int) -> str:
    """GroupNorm of one group as PyTorch exports it, then its per-channel scale and shift."""
    y = b.op("Reshape", [x, b.const(hm.i64([1, 1, -1]))])
    y = b.op("InstanceNormalization", [y, b.weight((1,), value=1.0), b.weight((1,), value=0.0)], epsilon=1e-5)
    y = b.op("Reshape", [y, b.const(hm.i64([1, c, res, res]))])
    return b.op("Add", [b.op("Mul", [y, b.weight((c, 1, 1), value=1.0)]), b.weight((c, 1, 1), value=0.0)])


def _poolformer_block(b: hm._Builder, x: str, c: int, res: int) -> str:
    h = _group_norm1(b, x, c, res)
    pooled = b.op("AveragePool", [h], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0)
    x = b.op("Add", [x, b.op("Mul", [b.op("Sub", [pooled, h]), b.weight((c, 1, 1), value=1e-5)])])
    h = _conv(b, _group_norm1(b, x, c, res), c, 4 * c, relu=False)
    h = b.op("Mul", [b.op("Mul", [h, b.op("Add", [b.op("Erf", [b.op("Div", [h, b.const(hm.f32(float(np.sqrt(2))))])]),
                                                b.const(hm.f32(1.0))])]), b.const(hm.f32(0.5))])  # fmt: skip
    return b.op("Add", [x, b.op("Mul", [_conv(b, h, 4 * c, c, relu=False), b.weight((c, 1, 1), value=1e-5)])])


def poolformer(res: int, c: int, blocks: tuple[int, int]) -> onnx.ModelProto:
    """Two PoolFormer stages (see the module docstring), ``c`` then ``2 c`` channels, from a
    ``c``-channel map of ``res`` x ``res``, a 3x3 stride-2 conv between them."""
    b = hm._Builder(91)
    x = "x"
    for _ in range(blocks[0]):
        x = _poolformer_block(b, x, c, res)
    x = _conv(b, x, c, 2 * c, (3, 3), stride=2, relu=False)
    for _ in range(blocks[1]):
        x = _poolformer_block(b, x, 2 * c, res // 2)
    return b.model("poolformer", hm.graph_input([1, c, res, res]), x)


def _modulated(b: hm._Builder, x: str, style: str, cin: int, cout: int, k: int, demodulate: bool = True) -> str:
    """StyleGAN2's modulated conv: the weight scaled by the style per input channel, demodulated
    per output channel, computed at run time."""
    s = b.op("Reshape", [b.op("Gemm", [style, b.weight((cin, 512), scale=1.0 / np.sqrt(512)), b.weight((cin,), value=1.0)],
                              transB=1), b.const(hm.i64([1, cin, 1, 1]))])  # fmt: skip
    wmod = b.op("Mul", [b.weight((cout, cin, k, k), scale=1.0 / np.sqrt(cin * k * k)), s])
    if demodulate:
        norm = b.op("ReduceSum", [b.op("Mul", [wmod, wmod]), b.const(hm.i64([1, 2, 3]))], keepdims=1)
        wmod = b.op("Mul", [wmod, b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [norm, b.const(hm.f32(1e-8))])])])])
    return b.op("Conv", [x, wmod], pads=[k // 2] * 4)


def _styled_layer(b: hm._Builder, x: str, style: str, cin: int, cout: int, res: int) -> str:
    y = _modulated(b, x, style, cin, cout, 3)
    noise = b.op("Mul", [b.weight((1, 1, res, res), scale=1.0), b.weight((1,), value=0.1)])
    y = b.op("Add", [b.op("Add", [y, noise]), b.weight((1, cout, 1, 1), value=0.0)])
    return b.op("Mul", [b.op("LeakyRelu", [y], alpha=0.2), b.const(hm.f32(float(np.sqrt(2))))])


def stylegan(res: int, top: int) -> onnx.ModelProto:
    """StyleGAN2's synthesis (see the module docstring) from 4x4 to ``res`` x ``res``, ``top``
    channels up to 32x32, halved at each resolution above."""
    b = hm._Builder(92)
    style = "x"
    for _ in range(8):
        style = b.op("LeakyRelu", [b.op("Gemm", [style, b.weight((512, 512), scale=1.0 / np.sqrt(512)), b.weight((512,))],
                                        transB=1)], alpha=0.2)  # fmt: skip
    x, c, side = b.weight((1, top, 4, 4), scale=1.0), top, 4
    x = _styled_layer(b, x, style, c, c, side)
    rgb = _modulated(b, x, style, c, 3, 1, demodulate=False)
    while side < res:
        side *= 2
        cout = top if side <= 32 else max(16, c // 2)
        up = b.op("Resize", [x, "", b.const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")
        x = _styled_layer(b, _styled_layer(b, up, style, c, cout, side), style, cout, cout, side)
        c = cout
        rgb_up = b.op("Resize", [rgb, "", b.const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")
        rgb = b.op("Add", [rgb_up, _modulated(b, x, style, c, 3, 1, demodulate=False)])
    return b.model("stylegan", hm.graph_input([1, 512]), rgb)


def deepfm(rows: int, fields: int, vocab: int, k: int, hidden: int) -> onnx.ModelProto:
    """DeepFM (see the module docstring) over ``rows`` rows of ``fields`` ids each into one table
    of ``fields * vocab`` rows, embeddings of ``k``."""
    b = hm._Builder(93)
    table = b.weight((fields * vocab, k), scale=0.01)
    emb = b.op("Gather", [table, "ids"], axis=0)  # [rows, fields, k]
    total = b.op("ReduceSum", [emb, b.const(hm.i64([1]))], keepdims=0)  # [rows, k]
    squares = b.op("ReduceSum", [b.op("Mul", [emb, emb]), b.const(hm.i64([1]))], keepdims=0)
    fm = b.op("Mul", [b.op("ReduceSum", [b.op("Sub", [b.op("Mul", [total, total]), squares]), b.const(hm.i64([1]))],
                           keepdims=1), b.const(hm.f32(0.5))])  # fmt: skip
    first = b.op("ReduceSum", [b.op("Gather", [b.weight((fields * vocab, 1), scale=0.01), "ids"], axis=0), b.const(hm.i64([1]))],
                 keepdims=0)  # fmt: skip
    deep, c = b.op("Reshape", [emb, b.const(hm.i64([rows, fields * k]))]), fields * k
    for n in (hidden, hidden):
        deep, c = b.op("Relu", [b.op("Gemm", [deep, b.weight((n, c), scale=1.0 / np.sqrt(c)), b.weight((n,))], transB=1)]), n
    deep = b.op("Gemm", [deep, b.weight((1, c), scale=1.0 / np.sqrt(c)), b.weight((1,))], transB=1)
    out = b.op("Sigmoid", [b.op("Add", [b.op("Add", [fm, first]), deep])])
    return b.model("deepfm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [rows, fields])], out)


def _pyramid(b: hm._Builder, x: str, c: int, side: int, bins: tuple[int, ...]) -> tuple[str, int]:
    """PSPNet's pyramid pooling module over a ``c``-channel ``side`` x ``side`` map."""
    parts, branch = [x], c // 4
    for n in bins:
        k = side // n
        pooled = b.op("AveragePool", [x], kernel_shape=[k, k], strides=[k, k])
        y = _conv(b, pooled, c, branch)
        parts.append(b.op("Resize", [y, "", "", b.const(hm.i64([1, branch, side, side]))], mode="linear",
                          coordinate_transformation_mode="pytorch_half_pixel"))  # fmt: skip
    return _concat(b, parts), c + branch * len(bins)


def pspnet(res: int, c: int, bins: tuple[int, ...], classes: int = 21) -> onnx.ModelProto:
    """PSPNet (see the module docstring) over a ``res`` x ``res`` RGB image, a ``c``-channel
    backbone at 1/8 resolution."""
    b = hm._Builder(94)
    x = _conv(b, "x", 3, c // 8, (3, 3), stride=2)
    x = _conv(b, x, c // 8, c // 4, (3, 3), stride=2)
    x = _conv(b, x, c // 4, c // 2, (3, 3), stride=2)
    x = _conv(b, _conv(b, x, c // 2, c, (3, 3), dilation=2), c, c, (3, 3), dilation=4)
    side = res // 8
    x, cc = _pyramid(b, x, c, side, bins)
    x = _conv(b, _conv(b, x, cc, c // 2, (3, 3)), c // 2, classes, relu=False)
    out = b.op("Resize", [x, "", "", b.const(hm.i64([1, classes, res, res]))], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")  # fmt: skip
    return b.model("pspnet", hm.graph_input([1, 3, res, res]), out)


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "inception_w050": partial(inception, 0.5),
    "inception_w100r17": partial(inception, 1.0, 17),
    "poolformer_r56c64": partial(poolformer, 56, 64, (2, 2)),
    "poolformer_r28c128": partial(poolformer, 28, 128, (4, 2)),
    "stylegan_r64c256": partial(stylegan, 64, 256),
    "stylegan_r128c128": partial(stylegan, 128, 128),
    "deepfm_r1024f26": partial(deepfm, 1024, 26, 10_000, 16, 400),
    "deepfm_r4096f39": partial(deepfm, 4096, 39, 5_000, 10, 256),
    "pspnet_r384c256": partial(pspnet, 384, 256, (1, 2, 3, 6)),
    "pspnet_r256c512": partial(pspnet, 256, 512, (1, 2, 4, 8)),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
