"""Held-out modern CNN families for the host CPU fidelity check (the ``cnn_modern`` family of
:mod:`heldout_models`): the kernels the project's own CNNs do not run.

- ``effnet``: EfficientNet-like (MBConv: 1x1 expand, 3x3 depthwise without a fused activation,
  squeeze-and-excitation with GlobalAveragePool into 1x1 convs, SiLU as ``x * Sigmoid(x)``);
- ``convnext``: ConvNeXt-like (7x7 depthwise, LayerNorm over channels between two Transposes,
  Erf-Gelu MLP as MatMuls);
- ``tcn``: a temporal conv net of 1-D dilated convs (onnxruntime runs them as im2col + SGEMM).

Two sizes each (:data:`CNN_MODERN_SIZES`): the first is the one the depthwise and 1-D conv laws
of ``cost_models/cpu.py`` were developed on (``effnet_r160``, ``convnext_r128``, ``tcn_l4000``);
the second was not looked at until the laws were done.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onnx import TensorProto, helper

__all__ = ["CNN_MODERN_SIZES", "MODELS", "build_cnn_modern", "convnext_model", "effnet_model", "tcn_model"]

#: Family member -> its sizes, developed-on first: builder keyword arguments per size name.
CNN_MODERN_SIZES: dict[str, dict[str, dict[str, int]]] = {
    "effnet": {"r160": {"res": 160}, "r224": {"res": 224}},
    "convnext": {"r128": {"res": 128}, "r192": {"res": 192}},
    "tcn": {"l4000": {"length": 4000}, "l2000c96": {"length": 2000, "ch": 96}},
}


def _silu(b: Any, x: str) -> str:
    return str(b.op("Mul", [x, b.op("Sigmoid", [x])]))


def _conv(b: Any, x: str, cin: int, cout: int, k: int = 3, s: int = 1, g: int = 1) -> str:
    ins = [x, b.weight((cout, cin // g, k, k), scale=0.1), b.weight((cout,))]
    return str(b.op("Conv", ins, pads=[(k - 1) // 2] * 4, strides=[s, s], group=g))


def _input(shape: list[int]) -> list[Any]:
    return [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]


def effnet_model(res: int = 160, seed: int = 1) -> Any:
    """MBConv blocks (expand 4) with squeeze-and-excitation, SiLU, then a 1000-way head."""
    from heldout_models import _Builder

    b = _Builder(seed)
    x, c = _silu(b, _conv(b, "x", 3, 16, 3, 2)), 16
    for cout, s in ((24, 2), (24, 1), (40, 2), (40, 1), (80, 2), (80, 1), (112, 1)):
        e = 4 * c
        h = _silu(b, _conv(b, _silu(b, _conv(b, x, c, e, 1)), e, e, 3, s, g=e))
        se = _silu(b, _conv(b, b.op("GlobalAveragePool", [h]), e, max(4, c // 4), 1))
        h = _conv(b, b.op("Mul", [h, b.op("Sigmoid", [_conv(b, se, max(4, c // 4), e, 1)])]), e, cout, 1)
        x, c = (b.op("Add", [x, h]) if s == 1 and cout == c else h), cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [_silu(b, _conv(b, x, c, 640, 1))])])
    return b.model("effnet", _input([1, 3, res, res]), b.op("Gemm", [x, b.weight((1000, 640)), b.weight((1000,))], transB=1))


def convnext_model(res: int = 128, seed: int = 2) -> Any:
    """A 4x4 stem, three stages of two ConvNeXt blocks (7x7 depthwise, LayerNorm, Gelu MLP)."""
    from heldout_models import _Builder, _gelu, _layer_norm

    b = _Builder(seed)
    x, c = _conv(b, "x", 3, 48, 4, 4), 48
    for stage in range(3):
        if stage:
            x, c = _conv(b, x, c, 2 * c, 2, 2), 2 * c
        for _ in range(2):
            h = b.op("Transpose", [_conv(b, x, c, c, 7, 1, g=c)], perm=[0, 2, 3, 1])
            h = b.op("Add", [b.op("MatMul", [_layer_norm(b, h, c), b.weight((c, 4 * c))]), b.weight((4 * c,))])
            h = b.op("Add", [b.op("MatMul", [_gelu(b, h), b.weight((4 * c, c))]), b.weight((c,))])
            x = b.op("Add", [x, b.op("Transpose", [h], perm=[0, 3, 1, 2])])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.model("convnext", _input([1, 3, res, res]), b.op("Gemm", [x, b.weight((100, c)), b.weight((100,))], transB=1))


def tcn_model(length: int = 4000, ch: int = 64, seed: int = 3) -> Any:
    """A k=7 stem, eight residual blocks of a dilated k=3 conv and a 1x1 conv, mean over time."""
    from heldout_models import _Builder

    b = _Builder(seed)
    x = b.op("Conv", ["x", b.weight((ch, 1, 7), scale=0.1), b.weight((ch,))], pads=[3, 3])
    for d in (1, 2, 4, 8, 16, 1, 2, 4):
        h = b.op("Relu", [b.op("Conv", [x, b.weight((ch, ch, 3), scale=0.05), b.weight((ch,))], pads=[d, d], dilations=[d])])
        h = b.op("Conv", [h, b.weight((ch, ch, 1), scale=0.05), b.weight((ch,))])
        x = b.op("Relu", [b.op("Add", [x, h])])
    x = b.op("ReduceMean", [x], axes=[2], keepdims=0)
    return b.model("tcn", _input([1, 1, length]), b.op("Gemm", [x, b.weight((10, ch)), b.weight((10,))], transB=1))


#: Family member -> its builder.
MODELS = {"effnet": effnet_model, "convnext": convnext_model, "tcn": tcn_model}


def build_cnn_modern(out_dir: Path) -> list[Path]:
    """Every :data:`CNN_MODERN_SIZES` model, as ``<member>_<size>.onnx``."""
    from heldout_models import _save

    return [_save(MODELS[m](**kw), out_dir, f"{m}_{size}") for m, sizes in CNN_MODERN_SIZES.items() for size, kw in sizes.items()]
