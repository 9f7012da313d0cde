"""The second batch of unseen models for the host CPU fidelity check (the ``unseen2`` family of
:mod:`heldout_models`): kernels the project's own models and ``cnn_modern`` do not run.

- ``decoder``: a GPT-like decoder (Gather embedding, LayerNorm, causal attention whose mask is a
  constant of -1e4 above the diagonal added before the Softmax: denormals in exp, SiLU MLP);
- ``mnv3``: MobileNetV3-like (HardSwish fused into the convs, squeeze-and-excitation with
  HardSigmoid, 3x3 and 5x5 depthwise);
- ``resnext``: ResNeXt-like (3x3 convs of 32 groups of 4-8 channels: one im2col + SGEMM per group).

Two sizes each (:data:`UNSEEN2_SIZES`): the first is the one the masked-Softmax, HardSwish and
grouped-conv rules were developed on (``decoder_s128``, ``mnv3_r160``, ``resnext_r112``); the second
was not looked at until the rules were done.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper

__all__ = ["MODELS", "UNSEEN2_SIZES", "build_unseen2", "decoder_model", "mnv3_model", "resnext_model"]

#: Family member -> its sizes, developed-on first: builder keyword arguments per size name.
UNSEEN2_SIZES: dict[str, dict[str, dict[str, int]]] = {
    "decoder": {"s128": {"seq": 128}, "s256": {"seq": 256}},
    "mnv3": {"r160": {"res": 160}, "r224": {"res": 224}},
    "resnext": {"r112": {"res": 112}, "r160": {"res": 160}},
}


def _input(shape: list[int]) -> list[Any]:
    return [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]


def _conv(b: Any, x: str, cin: int, cout: int, k: int = 3, s: int = 1, g: int = 1) -> str:
    ins = [x, b.weight((cout, cin // g, k, k), scale=0.1), b.weight((cout,))]
    return str(b.op("Conv", ins, pads=[(k - 1) // 2] * 4, strides=[s, s], group=g))


def resnext_model(res: int = 112, seed: int = 11) -> Any:
    """A 7x7 stem, max pool, four bottlenecks whose 3x3 conv has 32 groups, global pool, Gemm."""
    from heldout_models import _Builder

    b = _Builder(seed)
    x = b.op("Relu", [_conv(b, "x", 3, 64, 7, 2)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for cout, s in [(128, 1), (128, 1), (256, 2), (256, 1)]:
        h = b.op("Relu", [_conv(b, x, c, cout, 1)])
        h = b.op("Relu", [_conv(b, h, cout, cout, 3, s, g=32)])
        h = _conv(b, h, cout, cout, 1)
        sc = x if (s == 1 and c == cout) else _conv(b, x, c, cout, 1, s)
        x = b.op("Relu", [b.op("Add", [h, sc])])
        c = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.model("resnext", _input([1, 3, res, res]), b.op("Gemm", [x, b.weight((1000, c)), b.weight((1000,))], transB=1))


def mnv3_model(res: int = 160, seed: int = 12) -> Any:
    """Inverted residuals with HardSwish, squeeze-and-excitation gated by HardSigmoid, Gemm head."""
    from heldout_models import _Builder

    b = _Builder(seed)

    def hs(t: str) -> str:
        return str(b.op("HardSwish", [t]))

    x = hs(_conv(b, "x", 3, 16, 3, 2))
    c = 16
    for cout, e, k, s, se in [(24, 4, 3, 2, 0), (24, 3, 3, 1, 0), (40, 3, 5, 2, 1), (40, 3, 5, 1, 1), (80, 6, 3, 2, 0),
                              (96, 4, 5, 1, 1)]:  # fmt: skip
        m = c * e
        h = hs(_conv(b, x, c, m, 1))
        h = hs(_conv(b, h, m, m, k, s, g=m))
        if se:
            z = b.op("Relu", [_conv(b, b.op("GlobalAveragePool", [h]), m, m // 4, 1)])
            h = b.op("Mul", [h, b.op("HardSigmoid", [_conv(b, z, m // 4, m, 1)])])
        h = _conv(b, h, m, cout, 1)
        x = b.op("Add", [x, h]) if (s == 1 and c == cout) else h
        c = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [hs(_conv(b, x, c, 576, 1))])])
    return b.model("mnv3", _input([1, 3, res, res]), b.op("Gemm", [x, b.weight((1000, 576)), b.weight((1000,))], transB=1))


def decoder_model(seq: int = 128, width: int = 256, heads: int = 4, layers: int = 3, seed: int = 14) -> Any:
    """Pre-norm decoder blocks with a constant causal mask (-1e4 above the diagonal), logits over 5000."""
    from heldout_models import _Builder, _layer_norm

    b = _Builder(seed)
    hd = width // heads
    x = b.op("Add", [b.op("Gather", [b.weight((5000, width)), "ids"]), b.weight((1, seq, width))])
    causal = b.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1))
    for _ in range(layers):
        h = _layer_norm(b, x, width)
        sp = b.const(np.array([1, seq, heads, hd], np.int64))

        def proj(t: str, perm: list[int], sp: str = sp) -> str:
            return str(b.op("Transpose", [b.op("Reshape", [b.op("MatMul", [t, b.weight((width, width))]), sp])], perm=perm))

        q, k, v = proj(h, [0, 2, 1, 3]), proj(h, [0, 2, 3, 1]), proj(h, [0, 2, 1, 3])
        s = b.op("Add", [b.op("Div", [b.op("MatMul", [q, k]), b.const(np.array(np.sqrt(hd), np.float32))]), causal])
        a = b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])
        a = b.op("Reshape", [b.op("Transpose", [a], perm=[0, 2, 1, 3]), b.const(np.array([1, seq, width], np.int64))])
        x = b.op("Add", [x, b.op("MatMul", [a, b.weight((width, width))])])
        h = _layer_norm(b, x, width)
        g = b.op("MatMul", [h, b.weight((width, 4 * width))])
        g = b.op("Mul", [g, b.op("Sigmoid", [g])])
        x = b.op("Add", [x, b.op("MatMul", [g, b.weight((4 * width, width))])])
    x = _layer_norm(b, x, width)
    logits = b.op("MatMul", [x, b.weight((width, 5000))])
    return b.model("decoder", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])], logits)


#: Family member -> its builder.
MODELS = {"decoder": decoder_model, "mnv3": mnv3_model, "resnext": resnext_model}


def build_unseen2(out_dir: Path) -> list[Path]:
    """Every :data:`UNSEEN2_SIZES` model, as ``<member>_<size>.onnx``."""
    from heldout_models import _save

    return [_save(MODELS[m](**kw), out_dir, f"{m}_{size}") for m, sizes in UNSEEN2_SIZES.items() for size, kw in sizes.items()]
