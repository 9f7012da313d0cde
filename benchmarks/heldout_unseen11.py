"""The eleventh batch of unseen models for the host CPU fidelity check: four families no
held-out model resembled, two sizes each, built and run once as they came (nothing in hwsim was
changed for them):

- ``vocoder``: a HiFi-GAN-like vocoder: a 7-tap 1-D conv over mel frames, then per stage a
  ``LeakyRelu``, a strided 1-D ``ConvTranspose`` (upsampling) and a residual block of two dilated
  3-tap 1-D convs; a last conv to one channel and ``Tanh``;
- ``deeplab``: a DeepLabV3-like segmenter: strided 3x3 convs to 1/8 of the input, an atrous
  spatial pyramid (a 1x1 conv, three 3x3 convs dilated 6 / 12 / 18, a global-pool branch
  ``Resize`` d back), ``Concat``, a 1x1 projection, a classifier and a bilinear ``Resize`` x8;
- ``dcgan``: a DCGAN generator: a noise vector through 4x4 ``ConvTranspose`` s (stride 2),
  each with ``BatchNormalization`` and ``Relu``, to a ``Tanh`` image;
- ``nerf``: a NeRF-like MLP over sample points: positional encoding by ``MatMul`` with the
  frequencies, ``Sin`` and ``Cos``, eight 256-wide layers with the encoding concatenated back at
  the fifth, a density head and a colour head fed the view direction's encoding;
- ``pix2pix``: a pix2pix-like U-Net generator: 4x4 stride-2 convs down, 4x4 stride-2
  ``ConvTranspose`` s up with skip ``Concat`` s, built after the col2im change and held out from it.

``python benchmarks/heldout_unseen11.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "dcgan", "deeplab", "nerf", "pix2pix", "vocoder"]


def _conv1d(b: hm._Builder, x: str, cin: int, cout: int, k: int, dilation: int = 1) -> str:
    pad = dilation * (k - 1) // 2
    return b.op("Conv", [x, b.weight((cout, cin, k)), b.weight((cout,))], pads=[pad, pad], dilations=[dilation])


def vocoder(frames: int, width: int, ups: tuple[int, ...] = (8, 8, 2, 2)) -> onnx.ModelProto:
    """HiFi-GAN-like, from ``(1, 80, frames)`` mel frames to ``frames * prod(ups)`` samples."""
    b = hm._Builder(41)
    x, c = _conv1d(b, "x", 80, width, 7), width
    for u in ups:
        x = b.op("LeakyRelu", [x], alpha=0.1)
        x = b.op("ConvTranspose", [x, b.weight((c, c // 2, 2 * u)), b.weight((c // 2,))],
                 strides=[u], pads=[u // 2, u // 2])  # fmt: skip
        c //= 2
        for d in (1, 3):
            y = _conv1d(b, b.op("LeakyRelu", [x], alpha=0.1), c, c, 3, d)
            x = b.op("Add", [x, _conv1d(b, b.op("LeakyRelu", [y], alpha=0.1), c, c, 3, 1)])
    y = b.op("Tanh", [_conv1d(b, b.op("LeakyRelu", [x], alpha=0.01), c, 1, 7)])
    return b.model("vocoder", hm.graph_input([1, 80, frames]), y)


def _conv_relu(b: hm._Builder, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, dilation: int = 1) -> str:
    pad = dilation * (k - 1) // 2
    conv = b.op("Conv", [x, b.weight((cout, cin, k, k)), b.weight((cout,))], pads=[pad] * 4, strides=[stride] * 2,
                dilations=[dilation] * 2)  # fmt: skip
    return b.op("Relu", [conv])


def deeplab(res: int, width: int = 64, classes: int = 21) -> onnx.ModelProto:
    """DeepLabV3-like on a ``res`` x ``res`` image (see the module docstring)."""
    b = hm._Builder(42)
    x, c = "x", 3
    for cout in (width // 2, width, 2 * width):  # three stride-2 stages: 1/8
        x = _conv_relu(b, _conv_relu(b, x, c, cout, stride=2), cout, cout)
        c = cout
    side = res // 8
    branches = [_conv_relu(b, x, c, width, k=1)] + [_conv_relu(b, x, c, width, dilation=d) for d in (6, 12, 18)]
    pooled = _conv_relu(b, b.op("GlobalAveragePool", [x]), c, width, k=1)
    sizes = b.const(hm.i64([1, width, side, side]))
    branches.append(b.op("Resize", [pooled, "", "", sizes], mode="linear"))
    y = _conv_relu(b, b.op("Concat", branches, axis=1), 5 * width, width, k=1)
    logits = b.op("Conv", [_conv_relu(b, y, width, width), b.weight((classes, width, 1, 1)), b.weight((classes,))])
    scales = b.const(np.array([1.0, 1.0, 8.0, 8.0], np.float32))
    return b.model("deeplab", hm.graph_input([1, 3, res, res]), b.op("Resize", [logits, "", scales], mode="linear"))


def dcgan(res: int, ngf: int, z: int = 100) -> onnx.ModelProto:
    """A DCGAN generator from a ``(1, z, 1, 1)`` noise vector to a ``res`` x ``res`` RGB image."""
    b = hm._Builder(43)
    stages = int(np.log2(res)) - 2  # 4x4 after the first, doubling each
    c = ngf * 2 ** (stages - 1)
    x = b.op("ConvTranspose", ["x", b.weight((z, c, 4, 4))])
    for i in range(stages):
        ones, zeros = b.weight((c,), value=1.0), b.weight((c,), value=0.0)
        x = b.op("Relu", [b.op("BatchNormalization", [x, ones, zeros, b.weight((c,), value=0.0), b.weight((c,), value=1.0)])])
        cout = 3 if i == stages - 1 else c // 2
        x = b.op("ConvTranspose", [x, b.weight((c, cout, 4, 4))], strides=[2, 2], pads=[1] * 4)
        c = cout
    return b.model("dcgan", hm.graph_input([1, z, 1, 1]), b.op("Tanh", [x]))


def _encoding(b: hm._Builder, x: str, bands: int) -> tuple[str, int]:
    """``[x, sin(x F), cos(x F)]`` for 3-D points ``x`` and ``bands`` octaves per axis; its width."""
    freqs = np.zeros((3, 3 * bands), np.float32)
    for a in range(3):
        freqs[a, a * bands : (a + 1) * bands] = 2.0 ** np.arange(bands) * np.pi
    xf = b.op("MatMul", [x, b.const(freqs)])
    return b.op("Concat", [x, b.op("Sin", [xf]), b.op("Cos", [xf])], axis=-1), 3 + 6 * bands


def nerf(points: int, width: int = 256) -> onnx.ModelProto:
    """A NeRF-like MLP over ``points`` samples: inputs ``x`` (points) and ``d`` (view directions)."""
    b = hm._Builder(44)
    enc, w_enc = _encoding(b, "x", 10)
    denc, w_denc = _encoding(b, "d", 4)
    h, k = enc, w_enc
    for i in range(8):
        if i == 4:
            h, k = b.op("Concat", [h, enc], axis=-1), width + w_enc
        h = b.op("Relu", [b.op("Gemm", [h, b.weight((width, k)), b.weight((width,))], transB=1)])
        k = width
    sigma = b.op("Relu", [b.op("Gemm", [h, b.weight((1, width)), b.weight((1,))], transB=1)])
    feat = b.op("Gemm", [h, b.weight((width, width)), b.weight((width,))], transB=1)
    hc = b.op("Relu", [b.op("Gemm", [b.op("Concat", [feat, denc], axis=-1), b.weight((width // 2, width + w_denc)),
                                     b.weight((width // 2,))], transB=1)])  # fmt: skip
    rgb = b.op("Sigmoid", [b.op("Gemm", [hc, b.weight((3, width // 2)), b.weight((3,))], transB=1)])
    inputs = [*hm.graph_input([points, 3]), helper.make_tensor_value_info("d", onnx.TensorProto.FLOAT, [points, 3])]
    return b.model("nerf", inputs, b.op("Concat", [rgb, sigma], axis=-1))


def pix2pix(res: int, ngf: int, depth: int = 5) -> onnx.ModelProto:
    """A pix2pix-like U-Net generator: ``depth`` 4x4 stride-2 convs down (``LeakyRelu``,
    ``BatchNormalization``), as many 4x4 stride-2 ``ConvTranspose`` s up (``Relu``), each
    concatenated with its encoder's output, and a ``Tanh`` image (built after the col2im change,
    held out from it)."""
    b = hm._Builder(45)

    def bn(x: str, c: int) -> str:
        ones, zeros = b.weight((c,), value=1.0), b.weight((c,), value=0.0)
        return b.op("BatchNormalization", [x, ones, zeros, b.weight((c,), value=0.0), b.weight((c,), value=1.0)])

    x, c, skips = "x", 3, []
    for i in range(depth):
        cout = ngf * 2 ** min(i, 3)
        x = b.op("Conv", [x, b.weight((cout, c, 4, 4)), b.weight((cout,))], strides=[2, 2], pads=[1] * 4)
        x, c = b.op("LeakyRelu", [bn(x, cout) if i else x], alpha=0.2), cout
        skips.append((x, c))
    skips.pop()
    for i in reversed(range(depth)):
        cout = 3 if i == 0 else ngf * 2 ** min(i - 1, 3)
        x = b.op("ConvTranspose", [x, b.weight((c, cout, 4, 4)), b.weight((cout,))], strides=[2, 2], pads=[1] * 4)
        if i == 0:
            break
        skip, cs = skips.pop()
        x, c = b.op("Concat", [b.op("Relu", [bn(x, cout)]), skip], axis=1), cout + cs
    return b.model("pix2pix", hm.graph_input([1, 3, res, res]), b.op("Tanh", [x]))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "vocoder_f32c256": partial(vocoder, 32, 256),
    "vocoder_f64c128": partial(vocoder, 64, 128),
    "deeplab_r256": partial(deeplab, 256),
    "deeplab_r192w96": partial(deeplab, 192, 96),
    "dcgan_r64g64": partial(dcgan, 64, 64),
    "dcgan_r128g32": partial(dcgan, 128, 32),
    "nerf_p4096": partial(nerf, 4096),
    "nerf_p1024w128": partial(nerf, 1024, 128),
    "pix2pix_r128g32": partial(pix2pix, 128, 32),
    "pix2pix_r256g16": partial(pix2pix, 256, 16),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
