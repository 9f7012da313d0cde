"""The twenty-fourth batch of unseen models for the host CPU fidelity check: five families none of
the earlier batches has, each a published architecture at a small input so that a run takes about
1 to 20 ms on one thread, two sizes each:

- ``vqvae``: a VQ-VAE (van den Oord et al. 2017): an encoder of two 4x4 stride-2 convs with
  ``Relu``, a 3x3 conv and two residual blocks (``Relu``, 3x3 conv, ``Relu``, 1x1 conv, ``Add``),
  a 1x1 conv to the code width, then the vector quantizer as PyTorch exports it (``Transpose`` to
  channels last, ``Reshape`` to one row per pixel, the squared distances to every code by
  ``ReduceSumSquare`` (via ``Mul`` and ``ReduceSum``), a ``MatMul`` with the codebook and the
  codebook's norms, ``ArgMin``, a ``Gather`` of the codes, back to channels first), and a decoder of
  a 3x3 conv, two residual blocks and two 4x4 stride-2 ``ConvTranspose``;
- ``nbeats``: N-BEATS, generic (Oreshkin et al. 2020): blocks of four ``Gemm`` + ``Relu`` layers,
  a ``Gemm`` to the backcast and forecast coefficients and a ``Gemm`` each to the backcast
  (``Sub`` from the block's input) and the forecast (``Add``ed over blocks); one size a batch of
  32 short windows, the other one window through 30 blocks of 512 (110 MB of weights);
- ``tsm``: a Temporal Shift Module ResNet (Lin et al. 2019) over 8 frames: each residual block
  first shifts an eighth of its channels one frame back and an eighth one frame forward
  (``Reshape`` to frames, ``Slice``, ``Pad`` with zeros on the time axis, ``Concat``, ``Reshape``
  back), then the basic block (3x3 convs, ``BatchNormalization``, ``Relu``, ``Add``); the head pools
  each frame, averages over frames (``ReduceMean``) and classifies (``Gemm``);
- ``hourglass``: a stacked hourglass (Newell et al. 2016) for pose: a 7x7 stride-2 stem, pre-activation
  bottleneck residuals (``BatchNormalization``, ``Relu``, 1x1, 3x3, 1x1 convs, ``Add``), hourglasses
  of depth 4 (2x2 ``MaxPool`` down, nearest ``Resize`` up, the skip branch's residual ``Add``ed),
  1x1 heads to 16 heatmaps and, between stacks, the heatmaps mapped back and ``Add``ed;
- ``patchtst``: PatchTST (Nie et al. 2023), channel-independent: reversible instance normalization
  (``ReduceMean``, ``Sub``, ``Sqrt`` of the variance, ``Div``), patches of 16 at stride 8 after an
  edge ``Pad`` (a ``Gather`` of the patch positions), a ``MatMul`` patch embedding with a position
  table, encoder layers with ``BatchNormalization`` over the model width (between ``Transpose``s)
  instead of LayerNorm, the flatten head to the horizon, and the normalization undone.

``python benchmarks/heldout_unseen24.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "hourglass", "nbeats", "patchtst", "tsm", "vqvae"]


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: int, stride: int = 1, bias: bool = True) -> str:
    """A ``k`` x ``k`` conv padded to ``ceil(in / stride)`` outputs (``(k - stride) / 2`` a side for
    an even ``k``)."""
    pad = k // 2 if k % 2 else (k - stride) // 2
    ins = [x, b.weight((cout, cin, k, k), scale=1.0 / np.sqrt(cin * k * k))]
    if bias:
        ins.append(b.weight((cout,)))
    return b.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)


def _vq_residual(b: hm._Builder, x: str, c: int, hidden: int) -> str:
    """VQ-VAE's residual block: ``Relu``, 3x3 conv to ``hidden``, ``Relu``, 1x1 conv back, ``Add``."""
    y = _conv(b, b.op("Relu", [_conv(b, b.op("Relu", [x]), c, hidden, 3)]), hidden, c, 1)
    return b.op("Add", [x, y])


def _quantize(b: hm._Builder, z: str, res: int, dim: int, codes: int) -> str:
    """The vector quantizer as exported: the nearest of ``codes`` codebook rows for each pixel."""
    book = b.weight((codes, dim), scale=1.0 / np.sqrt(dim))
    flat = b.op("Reshape", [b.op("Transpose", [z], perm=[0, 2, 3, 1]), b.const(hm.i64([-1, dim]))])
    z2 = b.op("ReduceSum", [b.op("Mul", [flat, flat]), b.const(hm.i64([1]))], keepdims=1)
    e2 = b.op("ReduceSum", [b.op("Mul", [book, book]), b.const(hm.i64([1]))], keepdims=0)
    cross = b.op("MatMul", [flat, b.op("Transpose", [book], perm=[1, 0])])
    dist = b.op("Add", [b.op("Sub", [z2, b.op("Mul", [cross, b.const(hm.f32(2.0))])]), e2])
    idx = b.op("ArgMin", [dist], axis=1, keepdims=0)
    q = b.op("Reshape", [b.op("Gather", [book, idx], axis=0), b.const(hm.i64([1, res, res, dim]))])
    return b.op("Transpose", [q], perm=[0, 3, 1, 2])


def vqvae(res: int, hidden: int, dim: int, codes: int) -> onnx.ModelProto:
    """A VQ-VAE at ``res`` x ``res`` RGB: ``hidden`` channels, codes of ``dim`` from a book of
    ``codes`` (see the module docstring)."""
    b = hm._Builder(161)
    x = b.op("Relu", [_conv(b, "x", 3, hidden // 2, 4, 2)])
    x = _conv(b, b.op("Relu", [_conv(b, x, hidden // 2, hidden, 4, 2)]), hidden, hidden, 3)
    for _ in range(2):
        x = _vq_residual(b, x, hidden, hidden // 4)
    q = _quantize(b, _conv(b, b.op("Relu", [x]), hidden, dim, 1), res // 4, dim, codes)
    y = _conv(b, q, dim, hidden, 3)
    for _ in range(2):
        y = _vq_residual(b, y, hidden, hidden // 4)
    for cin, cout in ((hidden, hidden // 2), (hidden // 2, 3)):
        w = b.weight((cin, cout, 4, 4), scale=1.0 / np.sqrt(cin * 4))
        y = b.op("ConvTranspose", [b.op("Relu", [y]), w, b.weight((cout,))], kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    return b.model("vqvae", hm.graph_input([1, 3, res, res]), y)


def _fc(b: hm._Builder, x: str, k: int, n: int, bias: bool = True) -> str:
    ins = [x, b.weight((n, k), scale=1.0 / np.sqrt(k))]
    return b.op("Gemm", [*ins, b.weight((n,))] if bias else ins, transB=1)


def nbeats(batch: int, lookback: int, horizon: int, width: int, blocks: int, theta: int = 32) -> onnx.ModelProto:
    """N-BEATS generic: ``blocks`` blocks of four ``width`` layers over a ``lookback`` window, the
    forecast of ``horizon`` summed over blocks (see the module docstring)."""
    b = hm._Builder(162)
    residual, forecast = "x", None
    for _ in range(blocks):
        h, k = residual, lookback
        for _ in range(4):
            h, k = b.op("Relu", [_fc(b, h, k, width)]), width
        back = _fc(b, _fc(b, h, width, theta, bias=False), theta, lookback)
        fore = _fc(b, _fc(b, h, width, theta, bias=False), theta, horizon)
        residual = b.op("Sub", [residual, back])
        forecast = fore if forecast is None else b.op("Add", [forecast, fore])
    assert forecast is not None
    return b.model("nbeats", hm.graph_input([batch, lookback]), forecast)


def _shift(b: hm._Builder, x: str, frames: int, c: int, res: int) -> str:
    """TSM's shift: an eighth of the channels one frame back, an eighth one frame forward."""
    v = b.op("Reshape", [x, b.const(hm.i64([1, frames, c, res, res]))])
    fold = c // 8

    def part(lo: int, hi: int, t0: int, t1: int) -> str:
        return b.op("Slice", [v, b.const(hm.i64([t0, lo])), b.const(hm.i64([t1, hi])), b.const(hm.i64([1, 2]))])

    back = b.op("Pad", [part(0, fold, 1, frames), b.const(hm.i64([0, 0, 0, 0, 0, 0, 1, 0, 0, 0]))])
    fore = b.op("Pad", [part(fold, 2 * fold, 0, frames - 1), b.const(hm.i64([0, 1, 0, 0, 0, 0, 0, 0, 0, 0]))])
    y = b.op("Concat", [back, fore, part(2 * fold, c, 0, frames)], axis=2)
    return b.op("Reshape", [y, b.const(hm.i64([frames, c, res, res]))])


def _bn(b: hm._Builder, x: str, c: int) -> str:
    return hm.batch_norm(b, x, c)


def _tsm_block(b: hm._Builder, x: str, cin: int, cout: int, stride: int, frames: int, res: int) -> str:
    """A shifted basic block: the shift, 3x3 conv + BN + ``Relu``, 3x3 conv + BN, the residual (a
    strided 1x1 conv + BN where the shape changes), ``Add``, ``Relu``."""
    y = b.op("Relu", [_bn(b, _conv(b, _shift(b, x, frames, cin, res), cin, cout, 3, stride, bias=False), cout)])
    y = _bn(b, b.op("Conv", [y, b.weight((cout, cout, 3, 3), scale=1.0 / np.sqrt(cout * 9))], pads=[1] * 4), cout)
    if stride > 1 or cin != cout:
        w = b.weight((cout, cin, 1, 1), scale=1.0 / np.sqrt(cin))
        x = _bn(b, b.op("Conv", [x, w], strides=[stride, stride]), cout)
    return b.op("Relu", [b.op("Add", [y, x])])


def tsm(frames: int, res: int, widths: Sequence[int], classes: int = 174) -> onnx.ModelProto:
    """A TSM ResNet of two basic blocks a stage of ``widths`` over ``frames`` frames of ``res`` x
    ``res`` (see the module docstring)."""
    b = hm._Builder(163)
    x = b.op("Relu", [_bn(b, _conv(b, "x", 3, widths[0], 7, 2, bias=False), widths[0])])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, r = widths[0], res // 4
    for i, width in enumerate(widths):
        for j in range(2):
            stride = 2 if i and not j else 1
            x, c, r = _tsm_block(b, x, c, width, stride, frames, r), width, r // stride
    pooled = b.op("Reshape", [b.op("GlobalAveragePool", [x]), b.const(hm.i64([1, frames, c]))])
    y = _fc(b, b.op("ReduceMean", [pooled], axes=[1], keepdims=0), c, classes)
    return b.model("tsm", hm.graph_input([frames, 3, res, res]), y)


def _pre_residual(b: hm._Builder, x: str, cin: int, cout: int) -> str:
    """A pre-activation bottleneck: (BN, ``Relu``, conv) x 3 (1x1 to half, 3x3, 1x1 out), ``Add``ed
    to the input (through a 1x1 conv where the width changes)."""
    mid, y, c = cout // 2, x, cin
    for k, n in ((1, mid), (3, mid), (1, cout)):
        y, c = _conv(b, b.op("Relu", [_bn(b, y, c)]), c, n, k), n
    skip = x if cin == cout else _conv(b, x, cin, cout, 1)
    return b.op("Add", [y, skip])


def _hourglass(b: hm._Builder, x: str, c: int, depth: int) -> str:
    """One hourglass level: the skip residual beside MaxPool, residual, the inner level (a residual
    at the bottom), residual, nearest ``Resize`` x2; the two ``Add``ed."""
    up1 = _pre_residual(b, x, c, c)
    low = _pre_residual(b, b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]), c, c)
    low = _hourglass(b, low, c, depth - 1) if depth > 1 else _pre_residual(b, low, c, c)
    low = _pre_residual(b, low, c, c)
    scales = b.const(np.array([1, 1, 2, 2], np.float32))
    up2 = b.op("Resize", [low, "", scales], mode="nearest")
    return b.op("Add", [up1, up2])


def hourglass(res: int, c: int, stacks: int, joints: int = 16) -> onnx.ModelProto:
    """A stacked hourglass at ``res`` x ``res`` of ``c`` channels and ``stacks`` stacks; the last
    stack's ``joints`` heatmaps at a quarter of the input (see the module docstring)."""
    b = hm._Builder(164)
    x = b.op("Relu", [_bn(b, _conv(b, "x", 3, c // 2, 7, 2), c // 2)])
    x = b.op("MaxPool", [_pre_residual(b, x, c // 2, c)], kernel_shape=[2, 2], strides=[2, 2])
    x = _pre_residual(b, _pre_residual(b, x, c, c), c, c)
    heat = x
    for s in range(stacks):
        y = _pre_residual(b, _hourglass(b, x, c, 4), c, c)
        y = b.op("Relu", [_bn(b, _conv(b, y, c, c, 1), c)])
        heat = _conv(b, y, c, joints, 1)
        if s < stacks - 1:
            x = b.op("Add", [b.op("Add", [x, _conv(b, y, c, c, 1)]), _conv(b, heat, joints, c, 1)])
    return b.model("hourglass", hm.graph_input([1, 3, res, res]), heat)


def _revin(b: hm._Builder, x: str) -> tuple[str, str, str]:
    """Reversible instance normalization over time (axis 1): the normalized series, mean and std."""
    mean = b.op("ReduceMean", [x], axes=[1], keepdims=1)
    centred = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Mul", [centred, centred])], axes=[1], keepdims=1)
    std = b.op("Sqrt", [b.op("Add", [var, b.const(hm.f32(1e-5))])])
    return b.op("Div", [centred, std]), mean, std


def _tst_norm(b: hm._Builder, x: str, d: int) -> str:
    """PatchTST's BatchNorm over the model width: ``Transpose`` to (series, d, patches), BN, back."""
    return b.op("Transpose", [_bn(b, b.op("Transpose", [x], perm=[0, 2, 1]), d)], perm=[0, 2, 1])


def _tst_attention(b: hm._Builder, x: str, m: int, n: int, d: int, heads: int) -> str:
    hd = d // heads
    split = b.const(hm.i64([m, n, heads, hd]))

    def proj(perm: list[int]) -> str:
        y = b.op("Add", [b.op("MatMul", [x, b.weight((d, d), scale=1.0 / np.sqrt(d))]), b.weight((d,))])
        return b.op("Transpose", [b.op("Reshape", [y, split])], perm=perm)

    q, k, v = proj([0, 2, 1, 3]), proj([0, 2, 3, 1]), proj([0, 2, 1, 3])
    scores = b.op("Mul", [b.op("MatMul", [q, k]), b.const(hm.f32(1.0 / np.sqrt(hd)))])
    ctx = b.op("Transpose", [b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const(hm.i64([m, n, d]))])
    return b.op("Add", [b.op("MatMul", [ctx, b.weight((d, d), scale=1.0 / np.sqrt(d))]), b.weight((d,))])


def _tst_layer(b: hm._Builder, x: str, m: int, n: int, d: int, heads: int) -> str:
    x = _tst_norm(b, b.op("Add", [x, _tst_attention(b, x, m, n, d, heads)]), d)
    h = b.op("Add", [b.op("MatMul", [x, b.weight((d, 2 * d), scale=1.0 / np.sqrt(d))]), b.weight((2 * d,))])
    h = b.op("Add", [b.op("MatMul", [hm._gelu(b, h), b.weight((2 * d, d), scale=1.0 / np.sqrt(2 * d))]), b.weight((d,))])
    return _tst_norm(b, b.op("Add", [x, h]), d)


def patchtst(lookback: int, series: int, horizon: int, d: int, heads: int, layers: int, patch: int = 16, stride: int = 8) -> onnx.ModelProto:
    """PatchTST over ``series`` channels of a ``lookback`` window to a ``horizon`` forecast (see the
    module docstring)."""
    b = hm._Builder(165)
    x, mean, std = _revin(b, "x")
    x = b.op("Transpose", [x], perm=[0, 2, 1])  # (1, series, lookback)
    x = b.op("Pad", [x, b.const(hm.i64([0, 0, 0, 0, 0, stride]))], mode="edge")
    n = (lookback + stride - patch) // stride + 1
    starts = np.arange(n)[:, None] * stride + np.arange(patch)[None, :]
    x = b.op("Gather", [x, b.const(starts.astype(np.int64))], axis=2)  # (1, series, n, patch)
    x = b.op("Reshape", [x, b.const(hm.i64([series, n, patch]))])
    x = b.op("Add", [b.op("MatMul", [x, b.weight((patch, d), scale=1.0 / np.sqrt(patch))]), b.weight((d,))])
    x = b.op("Add", [x, b.weight((n, d), scale=0.02)])
    for _ in range(layers):
        x = _tst_layer(b, x, series, n, d, heads)
    flat = b.op("Reshape", [x, b.const(hm.i64([series, n * d]))])
    y = b.op("Add", [b.op("MatMul", [flat, b.weight((n * d, horizon), scale=1.0 / np.sqrt(n * d))]), b.weight((horizon,))])
    y = b.op("Transpose", [b.op("Reshape", [y, b.const(hm.i64([1, series, horizon]))])], perm=[0, 2, 1])
    return b.model("patchtst", hm.graph_input([1, lookback, series]), b.op("Add", [b.op("Mul", [y, std]), mean]))


SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "vqvae_r64c128k512": partial(vqvae, 64, 128, 64, 512),
    "vqvae_r128c128k1024": partial(vqvae, 128, 128, 64, 1024),
    "nbeats_b32w256x10": partial(nbeats, 32, 120, 24, 256, 10),
    "nbeats_b1w512x30": partial(nbeats, 1, 120, 24, 512, 30),
    "tsm_t8r64w32": partial(tsm, 8, 64, (32, 64, 128, 256)),
    "tsm_t8r96w64": partial(tsm, 8, 96, (64, 128, 256, 512)),
    "hourglass_r128c64s1": partial(hourglass, 128, 64, 1),
    "hourglass_r192c128s2": partial(hourglass, 192, 128, 2),
    "patchtst_l336m7": partial(patchtst, 336, 7, 96, 128, 16, 3),
    "patchtst_l512m21": partial(patchtst, 512, 21, 96, 128, 16, 3),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
