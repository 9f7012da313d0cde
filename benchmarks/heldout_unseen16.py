"""The sixteenth batch of unseen models for the host CPU fidelity check: two more families no
held-out model resembled, two sizes each, built after the fifteenth batch's changes and run as
they came:

- ``wavenet``: WaveNet's stack over raw audio: per layer a dilated causal 1-D conv (``Pad`` on the
  left, dilations 1, 2, 4, ... 512 repeated), the gated activation ``Tanh(a) * Sigmoid(b)`` of its
  two halves (``Split``), a 1x1 residual and a 1x1 skip conv, the skips summed, then two 1x1 convs;
- ``t5``: a T5-like encoder whose relative position bias is computed at run time as the exporters
  leave it: positions by ``Range``, their differences bucketed (``Abs``, ``Less``, ``Log``,
  ``Div``, ``Cast``, ``Min``, ``Where``) and looked up in a bias table (``Gather``), added to every
  layer's scores; T5's norm by hand (``Pow``, ``ReduceMean``, ``Sqrt``, ``Div``), a ReLU MLP.

``python benchmarks/heldout_unseen16.py DIR --chip FP.yaml`` writes them and validates each
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

__all__ = ["SIZES", "t5", "wavenet"]


def _conv1d(b: hm._Builder, x: str, cin: int, cout: int, k: int = 1, **attrs: object) -> str:
    return b.op("Conv", [x, b.weight((cout, cin, k), scale=1.0 / np.sqrt(cin * k)), b.weight((cout,))], **attrs)


def wavenet(samples: int, channels: int, stacks: int) -> onnx.ModelProto:
    """WaveNet (see the module docstring) over ``samples`` samples, ``channels`` residual channels,
    ``stacks`` stacks of ten dilated layers."""
    b = hm._Builder(80)
    x = _conv1d(b, "x", 1, channels)
    skips = []
    for _ in range(stacks):
        for d in (2**i for i in range(10)):
            pad = b.op("Pad", [x, b.const(hm.i64([0, 0, d, 0, 0, 0]))])
            h = _conv1d(b, pad, channels, 2 * channels, 2, dilations=[d])
            a, g = b.name("a"), b.name("g")
            b.nodes.append(helper.make_node("Split", [h, b.const(hm.i64([channels, channels]))], [a, g], name=b.name("Split"), axis=1))
            z = b.op("Mul", [b.op("Tanh", [a]), b.op("Sigmoid", [g])])
            skips.append(_conv1d(b, z, channels, channels))
            x = b.op("Add", [x, _conv1d(b, z, channels, channels)])
    out = b.op("Relu", [b.op("Sum", skips)])
    out = _conv1d(b, b.op("Relu", [_conv1d(b, out, channels, channels)]), channels, 256)
    return b.model("wavenet", hm.graph_input([1, 1, samples]), out)


def _t5_norm(b: hm._Builder, x: str, width: int) -> str:
    var = b.op("ReduceMean", [b.op("Pow", [x, b.const(hm.f32(2.0))])], axes=[-1], keepdims=1)
    return b.op("Mul", [b.weight((width,), value=1.0), b.op("Div", [x, b.op("Sqrt", [b.op("Add", [var, b.const(hm.f32(1e-6))])])])])


def _position_bias(b: hm._Builder, seq: int, heads: int, buckets: int = 32, distance: int = 128) -> str:
    """T5's bidirectional relative position bias, ``[1, heads, seq, seq]``, computed at run time."""
    pos = b.op("Range", [b.const(np.array(0, np.int64)), b.const(np.array(seq, np.int64)), b.const(np.array(1, np.int64))])
    rel = b.op("Sub", [b.op("Unsqueeze", [pos, b.const(hm.i64([0]))]), b.op("Unsqueeze", [pos, b.const(hm.i64([1]))])])
    half = buckets // 2
    side = b.op("Mul", [b.op("Cast", [b.op("Greater", [rel, b.const(np.array(0, np.int64))])], to=TensorProto.INT64),
                        b.const(np.array(half, np.int64))])  # fmt: skip
    dist = b.op("Abs", [rel])
    exact = half // 2
    scaled = b.op("Div", [b.op("Log", [b.op("Div", [b.op("Cast", [dist], to=TensorProto.FLOAT), b.const(hm.f32(float(exact)))])]),
                          b.const(hm.f32(float(np.log(distance / exact))))])  # fmt: skip
    far = b.op("Add", [b.op("Cast", [b.op("Mul", [scaled, b.const(hm.f32(float(half - exact)))])], to=TensorProto.INT64),
                       b.const(np.array(exact, np.int64))])  # fmt: skip
    far = b.op("Min", [far, b.const(np.array(half - 1, np.int64))])
    bucket = b.op("Add", [side, b.op("Where", [b.op("Less", [dist, b.const(np.array(exact, np.int64))]), dist, far])])
    bias = b.op("Gather", [b.weight((buckets, heads)), bucket])  # [seq, seq, heads]
    return b.op("Unsqueeze", [b.op("Transpose", [bias], perm=[2, 0, 1]), b.const(hm.i64([0]))])


def t5(seq: int, width: int, heads: int, layers: int) -> onnx.ModelProto:
    """A T5-like encoder (see the module docstring) over ``seq`` embedded tokens."""
    b = hm._Builder(81)
    hd = width // heads
    bias = _position_bias(b, seq, heads)
    x = "x"
    for _ in range(layers):
        h = _t5_norm(b, x, width)

        def proj(perm: list[int], h: str = h) -> str:
            y = b.op("MatMul", [h, b.weight((width, width), scale=1.0 / np.sqrt(width))])
            return b.op("Transpose", [b.op("Reshape", [y, b.const(hm.i64([1, seq, heads, hd]))])], perm=perm)

        scores = b.op("Add", [b.op("MatMul", [proj([0, 2, 1, 3]), proj([0, 2, 3, 1])]), bias])
        ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), proj([0, 2, 1, 3])])
        ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), b.const(hm.i64([1, seq, width]))])
        x = b.op("Add", [x, b.op("MatMul", [ctx, b.weight((width, width), scale=1.0 / np.sqrt(width))])])
        up = b.op("Relu", [b.op("MatMul", [_t5_norm(b, x, width), b.weight((width, 4 * width), scale=1.0 / np.sqrt(width))])])
        x = b.op("Add", [x, b.op("MatMul", [up, b.weight((4 * width, width), scale=0.5 / np.sqrt(width))])])
    return b.model("t5", hm.graph_input([1, seq, width]), _t5_norm(b, x, width))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "wavenet_s16000c32x2": partial(wavenet, 16000, 32, 2),
    "wavenet_s4000c64x3": partial(wavenet, 4000, 64, 3),
    "t5_s128w512l4": partial(t5, 128, 512, 8, 4),
    "t5_s512w256l2": partial(t5, 512, 256, 4, 2),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
