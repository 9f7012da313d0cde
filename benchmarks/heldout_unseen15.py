"""The fifteenth batch of unseen models for the host CPU fidelity check: five more families no
held-out model resembled, two sizes each, built after the fourteenth batch's changes and run as
they came:

- ``decode``: one step of a GPT-like decoder with a key/value cache: the past keys and values of
  ``past`` tokens come in as inputs and the new token's are ``Concat`` ed to them, so every product
  is a matrix-vector one and the LM head streams its weights;
- ``scache``: the same step over a static cache of ``cache`` slots, as the exporters of fixed-shape
  decoders make it: the new key and value written into their slot by ``ScatterND``, attention over
  every slot with an additive mask;
- ``mishnet``: a YOLOv4-tiny-like CSP backbone: convs with BatchNormalization, Mish as PyTorch
  exports it before opset 18 (``x * Tanh(Softplus(x))``), the channel ``Split`` of each CSP block,
  ``MaxPool`` down and a nearest ``Resize`` up to a second head;
- ``arcface``: an IR-ResNet face embedder (InsightFace's ``iresnet``): BatchNormalization before
  each conv, ``PRelu``, strided 3x3 blocks with 1x1 shortcuts, a ``Gemm`` from the flattened map,
  a BatchNormalization over the embedding and ``LpNormalization``;
- ``tabular``: a batch of table rows: each categorical column ``OneHot`` -encoded, concatenated
  with the numeric columns, then an MLP.

``python benchmarks/heldout_unseen15.py DIR --chip FP.yaml`` writes them and validates each
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

__all__ = ["SIZES", "arcface", "decode", "mishnet", "scache", "tabular"]


def _heads(b: hm._Builder, t: str, heads: int, hd: int) -> str:
    """``[1, 1, width]`` -> ``[1, heads, 1, hd]``."""
    return b.op("Transpose", [b.op("Reshape", [t, b.const(hm.i64([1, 1, heads, hd]))])], perm=[0, 2, 1, 3])


def _step(b: hm._Builder, x: str, width: int, heads: int, cache: Callable[[str, str], tuple[str, str]], mask: str | None) -> str:
    """One decoder layer on one token: attention of its query over the cache ``cache(k, v)`` gives
    (the new token's key and value put in), then the MLP, each with a residual."""
    hd = width // heads
    h = hm._layer_norm(b, x, width)
    qkv = b.op("Add", [b.op("MatMul", [h, b.weight((width, 3 * width))]), b.weight((3 * width,))])
    q, k, v = (b.name("q"), b.name("k"), b.name("v"))
    b.nodes.append(helper.make_node("Split", [qkv, b.const(hm.i64([width] * 3))], [q, k, v], name=b.name("Split"), axis=-1))
    keys, values = cache(_heads(b, k, heads, hd), _heads(b, v, heads, hd))
    scores = b.op("Mul", [b.op("MatMul", [_heads(b, q, heads, hd), b.op("Transpose", [keys], perm=[0, 1, 3, 2])]),
                          b.const(hm.f32(1.0 / np.sqrt(hd)))])  # fmt: skip
    if mask is not None:
        scores = b.op("Add", [scores, mask])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), values])
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), b.const(hm.i64([1, 1, width]))])
    x = b.op("Add", [x, b.op("Add", [b.op("MatMul", [ctx, b.weight((width, width))]), b.weight((width,))])])
    up = b.op("Add", [b.op("MatMul", [hm._layer_norm(b, x, width), b.weight((width, 4 * width))]), b.weight((4 * width,))])
    down = b.op("Add", [b.op("MatMul", [hm._gelu(b, up), b.weight((4 * width, width))]), b.weight((width,))])
    return b.op("Add", [x, down])


def _cache_inputs(layers: int, heads: int, length: int, hd: int) -> list[onnx.ValueInfoProto]:
    return [helper.make_tensor_value_info(f"past_{kv}_{i}", TensorProto.FLOAT, [1, heads, length, hd])
            for i in range(layers) for kv in ("key", "value")]  # fmt: skip


def decode(past: int, width: int, heads: int, layers: int, vocab: int) -> onnx.ModelProto:
    """One decoding step after ``past`` cached tokens (see the module docstring)."""
    b = hm._Builder(70)
    x = "x"
    for i in range(layers):
        def cat(k: str, v: str, i: int = i) -> tuple[str, str]:
            return (b.op("Concat", [f"past_key_{i}", k], axis=2), b.op("Concat", [f"past_value_{i}", v], axis=2))

        x = _step(b, x, width, heads, cat, None)
    logits = b.op("MatMul", [hm._layer_norm(b, x, width), b.weight((width, vocab))])
    inputs = hm.graph_input([1, 1, width]) + _cache_inputs(layers, heads, past, width // heads)
    return b.model("decode", inputs, logits)


def scache(cache: int, pos: int, width: int, heads: int, layers: int) -> onnx.ModelProto:
    """One decoding step at slot ``pos`` of a static cache of ``cache`` slots (see the module docstring)."""
    b = hm._Builder(71)
    slot = b.const(np.array([[[[0, h, pos]] for h in range(heads)]], np.int64))  # [1, heads, 1, 3]
    mask = b.const(np.where(np.arange(cache) <= pos, 0.0, -1e4).astype(np.float32).reshape(1, 1, 1, cache))
    x = "x"
    for i in range(layers):
        def put(k: str, v: str, i: int = i) -> tuple[str, str]:
            return (b.op("ScatterND", [f"past_key_{i}", slot, k]), b.op("ScatterND", [f"past_value_{i}", slot, v]))

        x = _step(b, x, width, heads, put, mask)
    inputs = hm.graph_input([1, 1, width]) + _cache_inputs(layers, heads, cache, width // heads)
    return b.model("scache", inputs, hm._layer_norm(b, x, width))


def _cbm(b: hm._Builder, x: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
    """Conv, BatchNormalization and Mish (``x * tanh(softplus(x))``)."""
    y = b.op("Conv", [x, b.weight((cout, cin, k, k), scale=1.0 / np.sqrt(cin * k * k))], pads=[k // 2] * 4, strides=[stride] * 2)
    y = hm.batch_norm(b, y, cout)
    return b.op("Mul", [y, b.op("Tanh", [b.op("Softplus", [y])])])


def mishnet(res: int, width: int) -> onnx.ModelProto:
    """A YOLOv4-tiny-like backbone and two heads at ``res`` x ``res`` (see the module docstring)."""
    b = hm._Builder(72)
    x = _cbm(b, _cbm(b, "x", 3, width, 3, 2), width, 2 * width, 3, 2)
    c, feats = 2 * width, []
    for _ in range(3):
        y = _cbm(b, x, c, c, 3)
        half = [b.name("half"), b.name("half")]
        b.nodes.append(helper.make_node("Split", [y, b.const(hm.i64([c // 2, c // 2]))], half, name=b.name("Split"), axis=1))
        r1 = _cbm(b, half[1], c // 2, c // 2, 3)
        r2 = _cbm(b, r1, c // 2, c // 2, 3)
        t = _cbm(b, b.op("Concat", [r2, r1], axis=1), c, c, 1)
        feats.append(t)
        x = b.op("MaxPool", [b.op("Concat", [y, t], axis=1)], kernel_shape=[2, 2], strides=[2, 2])
        c *= 2
    top = _cbm(b, x, c, c // 2, 1)
    up = b.op("Resize", [_cbm(b, top, c // 2, c // 4, 1), "", b.const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")
    mid = _cbm(b, b.op("Concat", [up, feats[-1]], axis=1), c // 4 + c // 2, c // 2, 3)
    heads = [b.op("Conv", [t, b.weight((255, ch, 1, 1))]) for t, ch in ((top, c // 2), (mid, c // 2))]
    return b.model("mishnet", hm.graph_input([1, 3, res, res]),
                   b.op("Concat", [b.op("Flatten", [h]) for h in heads], axis=1))  # fmt: skip


def arcface(res: int, widths: tuple[int, ...], blocks: int, embed: int) -> onnx.ModelProto:
    """An IR-ResNet embedder over a ``res`` x ``res`` face (see the module docstring)."""
    b = hm._Builder(73)

    def conv(t: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
        w = b.weight((cout, cin, k, k), scale=1.0 / np.sqrt(cin * k * k))
        return b.op("Conv", [t, w], pads=[k // 2] * 4, strides=[stride] * 2)

    x = b.op("PRelu", [hm.batch_norm(b, conv("x", 3, widths[0], 3), widths[0]), b.weight((widths[0], 1, 1), value=0.25)])
    c = widths[0]
    for w in widths:
        for i in range(blocks):
            stride = 2 if i == 0 else 1
            y = conv(hm.batch_norm(b, x, c), c, w, 3)
            y = hm.batch_norm(b, conv(b.op("PRelu", [hm.batch_norm(b, y, w), b.weight((w, 1, 1), value=0.25)]), w, w, 3, stride), w)
            short = x if i else hm.batch_norm(b, conv(x, c, w, 1, 2), w)
            x, c = b.op("Add", [y, short]), w
    side = res // 2 ** len(widths)
    flat = b.op("Flatten", [hm.batch_norm(b, x, c)])
    emb = b.op("Gemm", [flat, b.weight((embed, c * side * side), scale=0.01), b.weight((embed,))], transB=1)
    return b.model("arcface", hm.graph_input([1, 3, res, res]), b.op("LpNormalization", [hm.batch_norm(b, emb, embed)], p=2, axis=1))


def tabular(rows: int, depths: tuple[int, ...], numeric: int, hidden: int) -> onnx.ModelProto:
    """An MLP over ``rows`` table rows, one ``OneHot`` per categorical column of ``depths`` values."""
    b = hm._Builder(74)
    values = b.const(np.array([0.0, 1.0], np.float32))
    parts = ["x"]
    for i, depth in enumerate(depths):
        col = b.op("Gather", ["cats", b.const(np.array(i, np.int64))], axis=1)  # [rows]
        parts.append(b.op("OneHot", [col, b.const(hm.i64([depth])), values], axis=-1))
    x, c = b.op("Concat", parts, axis=1), numeric + sum(depths)
    for n in (hidden, hidden // 2):
        x, c = b.op("Relu", [b.op("Gemm", [x, b.weight((n, c), scale=1.0 / np.sqrt(c)), b.weight((n,))], transB=1)]), n
    inputs = [*hm.graph_input([rows, numeric]), helper.make_tensor_value_info("cats", TensorProto.INT64, [rows, len(depths)])]
    return b.model("tabular", inputs, b.op("Gemm", [x, b.weight((1, c)), b.weight((1,))], transB=1))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "decode_p256w512l4": partial(decode, 256, 512, 8, 4, 16000),
    "decode_p1024w768l2": partial(decode, 1024, 768, 12, 2, 32000),
    "scache_c512w512l4": partial(scache, 512, 300, 512, 8, 4),
    "scache_c2048w384l3": partial(scache, 2048, 1500, 384, 6, 3),
    "mishnet_r320w16": partial(mishnet, 320, 16),
    "mishnet_r416w32": partial(mishnet, 416, 32),
    "arcface_r112w32b2": partial(arcface, 112, (32, 64, 128, 256), 2, 256),
    "arcface_r112w64b1": partial(arcface, 112, (64, 128, 256, 512), 1, 512),
    "tabular_r256c8h512": partial(tabular, 256, (100, 100, 50, 50, 20, 20, 10, 10), 13, 512),
    "tabular_r2048c4h256": partial(tabular, 2048, (1000, 200, 100, 100), 20, 256),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
