"""The fifth batch of unseen models for the host CPU fidelity check: five families no bundled or
held-out model resembled, fp32, opset 17, batch 1, built after the Einsum change and run untouched.

- ``mixer``: MLP-Mixer blocks (LayerNormalization, the token-mixing MLP between two
  ``Transpose(0, 2, 1)``, Erf-Gelu, the channel-mixing MLP, residual Adds);
- ``crnn``: a text-line recognizer (3x3 convs with Relu and MaxPool over a 32-row image, the
  columns made a sequence by ``Transpose`` and ``Reshape``, a bidirectional LSTM of hidden 128,
  a per-step classifier and ``LogSoftmax``);
- ``whisper``: a Whisper-like audio encoder (two 1-D convs of 3 taps, the second strided, with
  Erf-Gelu, positions added, pre-LayerNorm encoder layers);
- ``mobilevit``: MobileViT blocks (a 3x3 and a 1x1 conv, the map unfolded into 2x2 patches by
  six-axis ``Reshape``/``Transpose``, attention over the patches, folded back, a 1x1 conv, a
  ``Concat`` with the block's input and a 3x3 conv);
- ``detr``: a DETR-like decoder layer (self-attention over 100 queries, cross-attention to the
  flattened feature map, a Relu FFN, post-LayerNorm).

Each family has two sizes (:data:`SIZES`). ``python benchmarks/heldout_unseen5.py DIR --chip FP.yaml``
writes them and validates each (:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "build_unseen5"]

_x, _i64, _f32 = hm.graph_input, hm.i64, hm.f32  # the batches' shared helpers


def _linear(b: hm._Builder, x: str, cin: int, cout: int) -> str:
    return b.op("Add", [b.op("MatMul", [x, b.weight((cin, cout))]), b.weight((cout,))])


def _mlp(b: hm._Builder, x: str, c: int, hidden: int) -> str:
    return _linear(b, hm._gelu(b, _linear(b, x, c, hidden)), hidden, c)


def mixer(tokens: int, c: int, blocks: int = 2) -> onnx.ModelProto:
    """MLP-Mixer blocks over ``(1, tokens, c)``: token mixing with a hidden width of twice the
    tokens, channel mixing with one of four times ``c``."""
    b = hm._Builder(11)
    x = "x"
    for _ in range(blocks):
        t = b.op("Transpose", [hm._layer_norm(b, x, c)], perm=[0, 2, 1])  # (1, c, tokens)
        x = b.op("Add", [x, b.op("Transpose", [_mlp(b, t, tokens, tokens * 2)], perm=[0, 2, 1])])
        x = b.op("Add", [x, _mlp(b, hm._layer_norm(b, x, c), c, 4 * c)])
    return b.model("mixer", _x([1, tokens, c]), hm._layer_norm(b, x, c))


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, relu: bool = True) -> str:
    y = b.op("Conv", [x, b.weight((cout, cin, k, k)), b.weight((cout,))], pads=[k // 2] * 4, strides=[stride] * 2)
    return b.op("Relu", [y]) if relu else y


def crnn(width: int, hidden: int = 128, classes: int = 37) -> onnx.ModelProto:
    """A 32-row text line: convs 64-128-256-256, MaxPools to 1 row and a quarter of the columns,
    a bidirectional LSTM over the columns, a classifier per step."""
    b = hm._Builder(12)
    x = b.op("MaxPool", [_conv(b, "x", 1, 64)], kernel_shape=[2, 2], strides=[2, 2])
    x = b.op("MaxPool", [_conv(b, x, 64, 128)], kernel_shape=[2, 2], strides=[2, 2])
    x = b.op("MaxPool", [_conv(b, _conv(b, x, 128, 256), 256, 256)], kernel_shape=[2, 1], strides=[2, 1])
    x = b.op("MaxPool", [_conv(b, x, 256, 256)], kernel_shape=[4, 1], strides=[4, 1])  # (1, 256, 1, w/4)
    steps = width // 4
    seq = b.op("Transpose", [b.op("Reshape", [x, b.const(_i64([1, 256, steps]))])], perm=[2, 0, 1])  # (steps, 1, 256)
    y = b.op("LSTM", [seq, b.weight((2, 4 * hidden, 256)), b.weight((2, 4 * hidden, hidden)), b.weight((2, 8 * hidden))],
             hidden_size=hidden, direction="bidirectional")  # fmt: skip
    y = b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 1, 3]), b.const(_i64([steps, 2 * hidden]))])
    return b.model("crnn", _x([1, 1, 32, width]), b.op("LogSoftmax", [_linear(b, y, 2 * hidden, classes)], axis=-1))


def whisper(frames: int, c: int, heads: int = 6, layers: int = 2, mels: int = 80) -> onnx.ModelProto:
    b = hm._Builder(13)
    x = hm._gelu(b, b.op("Conv", ["x", b.weight((c, mels, 3)), b.weight((c,))], pads=[1, 1]))
    x = hm._gelu(b, b.op("Conv", [x, b.weight((c, c, 3)), b.weight((c,))], pads=[1, 1], strides=[2]))
    seq = frames // 2
    x = b.op("Add", [b.op("Transpose", [x], perm=[0, 2, 1]), b.weight((1, seq, c))])
    mask = b.const(np.zeros((1, 1, 1, seq), np.float32))
    for _ in range(layers):
        x = b.op("Add", [x, hm._attention(b, hm._layer_norm(b, x, c), mask, seq, c, heads)])
        x = b.op("Add", [x, _mlp(b, hm._layer_norm(b, x, c), c, 4 * c)])
    return b.model("whisper", _x([1, mels, frames]), hm._layer_norm(b, x, c))


def _unfold(b: hm._Builder, x: str, d: int, side: int) -> str:
    """``(1, d, side, side)`` -> ``(4, side² / 4, d)``: the four pixels of each 2x2 patch as four
    sequences over the patches (MobileViT's unfolding)."""
    h = side // 2
    y = b.op("Reshape", [x, b.const(_i64([1, d, h, 2, h, 2]))])
    y = b.op("Transpose", [y], perm=[0, 3, 5, 2, 4, 1])  # (1, 2, 2, h, h, d)
    return b.op("Reshape", [y, b.const(_i64([4, h * h, d]))])


def _fold(b: hm._Builder, x: str, d: int, side: int) -> str:
    h = side // 2
    y = b.op("Reshape", [x, b.const(_i64([1, 2, 2, h, h, d]))])
    y = b.op("Transpose", [y], perm=[0, 5, 3, 1, 4, 2])  # (1, d, h, 2, h, 2)
    return b.op("Reshape", [y, b.const(_i64([1, d, side, side]))])


def _patch_attention(b: hm._Builder, x: str, seq: int, d: int, heads: int) -> str:
    """Attention within each of the four pixel sequences ``(4, seq, d)``."""
    hd = d // heads
    split = b.const(_i64([4, seq, heads, hd]))
    q, k, v = (b.op("Transpose", [b.op("Reshape", [_linear(b, x, d, d), split])], perm=perm)
               for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))  # fmt: skip
    s = b.op("Mul", [b.op("MatMul", [q, k]), b.const(np.array(hd**-0.5, np.float32))])
    o = b.op("Transpose", [b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])], perm=[0, 2, 1, 3])
    return _linear(b, b.op("Reshape", [o, b.const(_i64([4, seq, d]))]), d, d)


def mobilevit(side: int, c: int, d: int, layers: int = 2, heads: int = 4) -> onnx.ModelProto:
    """A stem conv to ``c`` channels at ``side``, then one MobileViT block of width ``d``."""
    b = hm._Builder(14)
    x = _conv(b, "x", 3, c, stride=2)
    y = _conv(b, _conv(b, x, c, c), c, d, k=1, relu=False)
    seq = (side // 2) ** 2
    t = _unfold(b, y, d, side)
    for _ in range(layers):
        t = b.op("Add", [t, _patch_attention(b, hm._layer_norm(b, t, d), seq, d, heads)])
        t = b.op("Add", [t, _mlp(b, hm._layer_norm(b, t, d), d, 2 * d)])
    y = _conv(b, _fold(b, hm._layer_norm(b, t, d), d, side), d, c, k=1)
    return b.model("mobilevit", _x([1, 3, 2 * side, 2 * side]), _conv(b, b.op("Concat", [x, y], axis=1), 2 * c, c))


def _cross_attention(b: hm._Builder, q_in: str, kv_in: str, nq: int, nk: int, c: int, heads: int) -> str:
    hd = c // heads
    q = b.op("Transpose", [b.op("Reshape", [_linear(b, q_in, c, c), b.const(_i64([1, nq, heads, hd]))])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [_linear(b, kv_in, c, c), b.const(_i64([1, nk, heads, hd]))])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [_linear(b, kv_in, c, c), b.const(_i64([1, nk, heads, hd]))])], perm=[0, 2, 1, 3])
    s = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.array(np.sqrt(hd), np.float32))])
    o = b.op("Transpose", [b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])], perm=[0, 2, 1, 3])
    return _linear(b, b.op("Reshape", [o, b.const(_i64([1, nq, c]))]), c, c)


def detr(h: int, w: int, c: int = 256, queries: int = 100, heads: int = 8) -> onnx.ModelProto:
    """One decoder layer: queries (a weight) attend to themselves, then to the ``h`` x ``w`` map
    ``x`` flattened with positions added; post-LayerNorm, a Relu FFN of 2048."""
    b = hm._Builder(15)
    mem = b.op("Add", [b.op("Transpose", [b.op("Reshape", ["x", b.const(_i64([1, c, h * w]))])], perm=[0, 2, 1]),
                       b.weight((1, h * w, c))])  # fmt: skip
    t = b.weight((1, queries, c))
    t = hm._layer_norm(b, b.op("Add", [t, _cross_attention(b, t, t, queries, queries, c, heads)]), c)
    t = hm._layer_norm(b, b.op("Add", [t, _cross_attention(b, t, mem, queries, h * w, c, heads)]), c)
    ffn = _linear(b, b.op("Relu", [_linear(b, t, c, 2048)]), 2048, c)
    return b.model("detr", _x([1, c, h, w]), hm._layer_norm(b, b.op("Add", [t, ffn]), c))


#: File stem -> builder, two sizes a family; all built after the changes of 2026-12-05 and run as they are.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "mixer_t196c256": lambda: mixer(196, 256),
    "mixer_t64c512": lambda: mixer(64, 512),
    "crnn_w128": lambda: crnn(128),
    "crnn_w320": lambda: crnn(320),
    "whisper_f400c384": lambda: whisper(400, 384),
    "whisper_f800c256": lambda: whisper(800, 256, heads=4),
    "mobilevit_s32c96": lambda: mobilevit(32, 96, 144),
    "mobilevit_s16c128": lambda: mobilevit(16, 128, 192),
    "detr_h25w34": lambda: detr(25, 34),
    "detr_h20w20": lambda: detr(20, 20),
}


def build_unseen5(out_dir: Path) -> list[Path]:
    """Write every model of :data:`SIZES` into ``out_dir``; their paths."""
    return hm.build_sizes(SIZES, out_dir)


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
