"""The twentieth batch of unseen models for the host CPU fidelity check: five families whose ops
share weights, two sizes each, built after the nineteenth batch's change (a weight read by many
ops counts once towards what a loop of runs keeps cached) and run as they came:

- ``albert``: ALBERT: factorized embeddings (a ``Gather`` of 128 wide, a product up to the width),
  then one encoder layer's weights used by every layer;
- ``tiedlm``: a GPT-like decoder whose output layer is its embedding table transposed;
- ``siamese``: two images through one CNN's weights, their embeddings' L1 distance scored;
- ``raftgru``: RAFT's update operator: a convolutional GRU of 1x5 and 5x1 convs iterated with the
  same weights over a 1/8-resolution map;
- ``retina``: RetinaNet's heads: one class subnet and one box subnet (four 3x3 convs each) run on
  every level of a feature pyramid.

``python benchmarks/heldout_unseen20.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share
from heldout_unseen18 import _conv  # a conv with "same" padding and a bias

__all__ = ["SIZES", "albert", "raftgru", "retina", "siamese", "tiedlm"]


class _Shared(hm._Builder):
    """A builder that, between :meth:`share` and :meth:`own`, hands out the weights it made since
    the last :meth:`own` again, in the order they were made: the same layer built twice reads the
    same weights."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.made: list[str] = []
        self.again: list[str] | None = None

    def weight(self, shape: Sequence[int], scale: float = 0.05, value: float | None = None) -> str:
        if self.again is not None:
            return self.again.pop(0)
        name = super().weight(shape, scale, value)
        self.made.append(name)
        return name

    def own(self) -> None:
        self.made, self.again = [], None

    def share(self) -> None:
        self.again = list(self.made)


def _encoder_layer(b: hm._Builder, x: str, mask: str, seq: int, width: int, heads: int) -> str:
    x = hm._layer_norm(b, b.op("Add", [x, hm._attention(b, x, mask, seq, width, heads)]), width)
    h = hm._gelu(b, b.op("Add", [b.op("MatMul", [x, b.weight((width, 4 * width))]), b.weight((4 * width,))]))
    h = b.op("Add", [b.op("MatMul", [h, b.weight((4 * width, width))]), b.weight((width,))])
    return hm._layer_norm(b, b.op("Add", [x, h]), width)


def albert(seq: int, width: int, layers: int, vocab: int = 30000) -> onnx.ModelProto:
    """ALBERT (see the module docstring) over ``seq`` tokens, ``layers`` layers of one layer's weights."""
    b = _Shared(120)
    x = b.op("MatMul", [b.op("Gather", [b.weight((vocab, 128)), "ids"]), b.weight((128, width))])
    x = hm._layer_norm(b, b.op("Add", [x, b.weight((1, seq, width))]), width)
    mask = b.op("Unsqueeze", [b.op("Mul", [b.op("Sub", [b.const(hm.f32(1.0)), "mask"]), b.const(hm.f32(-1e4))]),
                              b.const(hm.i64([1, 2]))])  # fmt: skip
    b.own()
    for i in range(layers):
        if i:
            b.share()
        x = _encoder_layer(b, x, mask, seq, width, width // 64)
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq]),
              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, seq])]  # fmt: skip
    return b.model("albert", inputs, x)


def tiedlm(seq: int, width: int, layers: int, vocab: int) -> onnx.ModelProto:
    """A decoder (see the module docstring) over ``seq`` tokens whose logits are its hidden states
    times its embedding table transposed."""
    b = hm._Builder(121)
    table = b.weight((vocab, width), scale=0.02)
    x = b.op("Add", [b.op("Gather", [table, "ids"]), b.weight((1, seq, width), scale=0.02)])
    causal = b.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1).reshape(1, 1, seq, seq))
    for _ in range(layers):
        x = _encoder_layer(b, x, causal, seq, width, width // 64)
    logits = b.op("MatMul", [x, b.op("Transpose", [table], perm=[1, 0])])
    return b.model("tiedlm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])], logits)


def _tower(b: _Shared, x: str, widths: Sequence[int]) -> str:
    c = 3
    for w in widths:
        x = b.op("MaxPool", [b.op("Relu", [_conv(b, b.op("Relu", [_conv(b, x, c, w, 3)]), w, w, 3)])], kernel_shape=[2, 2],
                 strides=[2, 2])  # fmt: skip
        c = w
    return b.op("Flatten", [b.op("GlobalAveragePool", [x])])


def siamese(res: int, widths: tuple[int, ...]) -> onnx.ModelProto:
    """A Siamese network (see the module docstring) over two ``res`` x ``res`` RGB images."""
    b = _Shared(122)
    left = _tower(b, "x", widths)
    b.share()
    right = _tower(b, "y", widths)
    b.own()
    dist = b.op("Abs", [b.op("Sub", [left, right])])
    score = b.op("Sigmoid", [b.op("Gemm", [dist, b.weight((1, widths[-1]), scale=0.1), b.weight((1,))], transB=1)])
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, res, res]) for n in ("x", "y")]
    return b.model("siamese", inputs, score)


def _sep_conv(b: hm._Builder, x: str, cin: int, cout: int, k: tuple[int, int]) -> str:
    w = b.weight((cout, cin, *k), scale=1.0 / np.sqrt(cin * k[0] * k[1]))
    return b.op("Conv", [x, w, b.weight((cout,))], pads=[k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2])


def _conv_gru(b: hm._Builder, h: str, x: str, hidden: int, cin: int, k: tuple[int, int]) -> str:
    hx = b.op("Concat", [h, x], axis=1)
    z = b.op("Sigmoid", [_sep_conv(b, hx, hidden + cin, hidden, k)])
    r = b.op("Sigmoid", [_sep_conv(b, hx, hidden + cin, hidden, k)])
    q = b.op("Tanh", [_sep_conv(b, b.op("Concat", [b.op("Mul", [r, h]), x], axis=1), hidden + cin, hidden, k)])
    return b.op("Add", [b.op("Mul", [b.op("Sub", [b.const(hm.f32(1.0)), z]), h]), b.op("Mul", [z, q])])


def raftgru(height: int, width: int, iters: int, hidden: int = 128, cin: int = 256) -> onnx.ModelProto:
    """RAFT's update operator (see the module docstring) iterated ``iters`` times over a
    ``height`` x ``width`` map: the context and motion features ``x`` fixed, the hidden state updated."""
    b = _Shared(123)
    h = b.op("Tanh", [_conv(b, "x", cin, hidden, 3)])
    b.own()
    flow = []
    for i in range(iters):
        if i:
            b.share()
        h = _conv_gru(b, h, "x", hidden, cin, (1, 5))
        h = _conv_gru(b, h, "x", hidden, cin, (5, 1))
        flow.append(_conv(b, b.op("Relu", [_conv(b, h, hidden, 256, 3)]), 256, 2, 3))
    return b.model("raftgru", hm.graph_input([1, cin, height, width]), b.op("Concat", flow, axis=1))


def _subnet(b: _Shared, x: str, c: int, out: int) -> str:
    for _ in range(4):
        x = b.op("Relu", [_conv(b, x, c, c, 3)])
    return _conv(b, x, c, out, 3)


def retina(res: int, c: int, anchors: int = 9, classes: int = 80) -> onnx.ModelProto:
    """RetinaNet's heads (see the module docstring) on a pyramid of ``c`` channels from 1/8 to
    1/128 of a ``res`` x ``res`` image (a stride-2 conv per level, from a stride-8 stem)."""
    b = _Shared(124)
    x = b.op("Relu", [_conv(b, "x", 3, c // 4, 8, stride=8)])
    x = b.op("Relu", [_conv(b, x, c // 4, c, 3)])
    levels = [x]
    for _ in range(4):
        levels.append(b.op("Relu", [_conv(b, levels[-1], c, c, 3, stride=2)]))
    outs = []
    for head, out in (("cls", anchors * classes), ("box", anchors * 4)):
        b.own()
        for i, level in enumerate(levels):
            if i:
                b.share()
            y = _subnet(b, level, c, out)
            outs.append(b.op("Reshape", [b.op("Transpose", [y], perm=[0, 2, 3, 1]), b.const(hm.i64([1, -1]))]))
    b.own()
    return b.model("retina", hm.graph_input([1, 3, res, res]), b.op("Concat", outs, axis=1))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "albert_s128w768l12": partial(albert, 128, 768, 12),
    "albert_s256w512l6": partial(albert, 256, 512, 6),
    "tiedlm_s128w512l2v16k": partial(tiedlm, 128, 512, 2, 16000),
    "tiedlm_s64w768l2v32k": partial(tiedlm, 64, 768, 2, 32000),
    "siamese_r128w32": partial(siamese, 128, (32, 64, 128, 256)),
    "siamese_r96w64": partial(siamese, 96, (64, 128, 256)),
    "raftgru_h32w48i8": partial(raftgru, 32, 48, 8),
    "raftgru_h46w62i4": partial(raftgru, 46, 62, 4),
    "retina_r256c128": partial(retina, 256, 128),
    "retina_r384c96": partial(retina, 384, 96),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
