"""The twenty-first batch of unseen models for the host CPU fidelity check: five more families no
held-out model resembled, two sizes each, built after a run's own traffic was counted against the
L3 and run as they came:

- ``fnet``: FNet: each layer mixes its tokens by a Fourier transform instead of attention, the real
  part of a ``DFT`` over the hidden dimension then over the sequence, then the usual feed-forward;
- ``glow``: Glow's flow steps: ActNorm (a per-channel scale and shift), an invertible 1x1 conv, an
  affine coupling (half the channels through a small CNN that gives the other half's scale, by
  ``Sigmoid``, and shift) and the log-determinant's ``Log`` and ``ReduceSum``; levels joined by a
  squeeze (``SpaceToDepth``);
- ``capsnet``: a capsule network: a conv, primary capsules squashed, every capsule's prediction for
  every class by a broadcast ``MatMul``, and three iterations of routing by agreement
  (``Softmax`` over classes, weighted ``ReduceSum`` s, squash);
- ``perceiver``: Perceiver IO: a learned latent array cross-attends to a long input, self-attends,
  and one output query cross-attends to the latents;
- ``dcn``: Deep & Cross Network v2 on dense features: cross layers ``x0 * (xl W + b) + xl`` beside an
  MLP, both concatenated into a logit.

``python benchmarks/heldout_unseen21.py DIR --chip FP.yaml`` writes them and validates each
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
from heldout_unseen18 import _conv  # a conv with "same" padding and a bias

__all__ = ["SIZES", "capsnet", "dcn", "fnet", "glow", "perceiver"]


def _dense(b: hm._Builder, x: str, k: int, n: int) -> str:
    return b.op("Add", [b.op("MatMul", [x, b.weight((k, n), scale=1.0 / np.sqrt(k))]), b.weight((n,))])


def fnet(seq: int, width: int, layers: int, vocab: int = 8000) -> onnx.ModelProto:
    """FNet (see the module docstring) over ``seq`` tokens."""
    b = hm._Builder(130)
    x = hm._layer_norm(b, b.op("Add", [b.op("Gather", [b.weight((vocab, width)), "ids"]), b.weight((1, seq, width))]), width)
    starts, ends, axes = (b.const(hm.i64([v])) for v in (0, 1, 3))
    for _ in range(layers):
        spectrum = b.op("DFT", [b.op("DFT", [b.op("Unsqueeze", [x, b.const(hm.i64([3]))])], axis=2)], axis=1)
        mixed = b.op("Squeeze", [b.op("Slice", [spectrum, starts, ends, axes]), b.const(hm.i64([3]))])
        x = hm._layer_norm(b, b.op("Add", [x, mixed]), width)
        h = _dense(b, hm._gelu(b, _dense(b, x, width, 4 * width)), 4 * width, width)
        x = hm._layer_norm(b, b.op("Add", [x, h]), width)
    return b.model("fnet", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])], x)


def _flow_step(b: hm._Builder, x: str, c: int, hidden: int) -> tuple[str, str]:
    """One Glow step on ``c`` channels: (its output, its coupling's log-determinant)."""
    x = b.op("Add", [b.op("Mul", [x, b.weight((1, c, 1, 1), value=1.0)]), b.weight((1, c, 1, 1), value=0.0)])
    x = b.op("Conv", [x, b.weight((c, c, 1, 1), scale=1.0 / np.sqrt(c))])
    half = b.const(hm.i64([c // 2, c // 2]))
    xa, xb = (f"{stem}_{len(b.nodes)}" for stem in ("xa", "xb"))
    b.nodes.append(helper.make_node("Split", [x, half], [xa, xb], name=b.name("Split"), axis=1))
    h = b.op("Relu", [_conv(b, b.op("Relu", [_conv(b, xa, c // 2, hidden, 3)]), hidden, hidden, 1)])
    st = _conv(b, h, hidden, c, 3)
    shift = b.op("Slice", [st, b.const(hm.i64([0])), b.const(hm.i64([c // 2])), b.const(hm.i64([1]))])
    raw = b.op("Slice", [st, b.const(hm.i64([c // 2])), b.const(hm.i64([c])), b.const(hm.i64([1]))])
    scale = b.op("Sigmoid", [b.op("Add", [raw, b.const(hm.f32(2.0))])])
    yb = b.op("Mul", [b.op("Add", [xb, shift]), scale])
    logdet = b.op("ReduceSum", [b.op("Log", [scale])], keepdims=0)
    return b.op("Concat", [xa, yb], axis=1), logdet


def glow(res: int, levels: int, steps: int, hidden: int) -> onnx.ModelProto:
    """Glow's flow (see the module docstring) over a ``res`` x ``res`` RGB image, the log-determinant summed."""
    b = hm._Builder(131)
    x, c, total = "x", 3, ""
    for _ in range(levels):
        x, c = b.op("SpaceToDepth", [x], blocksize=2), 4 * c
        for _ in range(steps):
            x, logdet = _flow_step(b, x, c, hidden)
            total = b.op("Add", [total, logdet]) if total else logdet
    out = b.op("Add", [b.op("ReduceMean", [b.op("Mul", [x, x])], keepdims=0), total])
    return b.model("glow", hm.graph_input([1, 3, res, res]), out)


def _squash(b: hm._Builder, s: str, axis: int) -> str:
    """``s |s|^2 / (1 + |s|^2) / |s|`` along ``axis``."""
    sq = b.op("ReduceSum", [b.op("Mul", [s, s]), b.const(hm.i64([axis]))], keepdims=1)
    gain = b.op("Div", [sq, b.op("Mul", [b.op("Add", [sq, b.const(hm.f32(1.0))]),
                                         b.op("Sqrt", [b.op("Add", [sq, b.const(hm.f32(1e-8))])])])])  # fmt: skip
    return b.op("Mul", [s, gain])


def capsnet(res: int, classes: int, iterations: int = 3) -> onnx.ModelProto:
    """A capsule network (see the module docstring) over a ``res`` x ``res`` grey image."""
    b = hm._Builder(132)
    h = b.op("Relu", [b.op("Conv", ["x", b.weight((256, 1, 9, 9), scale=1 / 9), b.weight((256,))])])
    prim = b.op("Conv", [h, b.weight((256, 256, 9, 9), scale=1 / 144), b.weight((256,))], strides=[2, 2])
    side = (res - 8 - 8 + 1) // 2
    n = 32 * side * side
    u = b.op("Transpose", [b.op("Reshape", [prim, b.const(hm.i64([32, 8, side * side]))])], perm=[0, 2, 1])
    u = _squash(b, b.op("Reshape", [u, b.const(hm.i64([n, 1, 8, 1]))]), 2)
    u_hat = b.op("MatMul", [b.weight((n, classes, 16, 8), scale=0.1), u])  # [n, classes, 16, 1]
    logits = b.const(np.zeros((n, classes, 1, 1), np.float32))
    v = ""
    for i in range(iterations):
        c = b.op("Softmax", [logits], axis=1)
        v = _squash(b, b.op("ReduceSum", [b.op("Mul", [c, u_hat]), b.const(hm.i64([0]))], keepdims=1), 2)
        if i < iterations - 1:
            agree = b.op("ReduceSum", [b.op("Mul", [u_hat, v]), b.const(hm.i64([2]))], keepdims=1)
            logits = b.op("Add", [logits, agree])
    lengths = b.op("Sqrt", [b.op("ReduceSum", [b.op("Mul", [v, v]), b.const(hm.i64([2, 3]))], keepdims=0)])
    return b.model("capsnet", hm.graph_input([1, 1, res, res]), lengths)


def _cross_attention(b: hm._Builder, q_in: str, kv_in: str, nq: int, nk: int, dq: int, dkv: int, width: int) -> str:
    """Single-head attention of ``nq`` queries (``dq`` wide) over ``nk`` keys (``dkv`` wide), ``width`` inside."""
    q = _dense(b, q_in, dq, width)
    k = b.op("Transpose", [_dense(b, kv_in, dkv, width)], perm=[0, 2, 1])
    scores = b.op("Mul", [b.op("MatMul", [q, k]), b.const(hm.f32(1.0 / np.sqrt(width)))])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), _dense(b, kv_in, dkv, width)])
    return _dense(b, ctx, width, dq)


def perceiver(tokens: int, channels: int, latents: int, width: int, layers: int) -> onnx.ModelProto:
    """Perceiver IO (see the module docstring) over ``tokens`` inputs of ``channels`` each."""
    b = hm._Builder(133)
    lat = b.weight((1, latents, width), scale=0.02)
    z = hm._layer_norm(b, b.op("Add", [lat, _cross_attention(b, lat, "x", latents, tokens, width, channels, width)]), width)
    for _ in range(layers):
        z = hm._layer_norm(b, b.op("Add", [z, _cross_attention(b, z, z, latents, latents, width, width, width)]), width)
        h = _dense(b, hm._gelu(b, _dense(b, z, width, 4 * width)), 4 * width, width)
        z = hm._layer_norm(b, b.op("Add", [z, h]), width)
    query = b.weight((1, 1, width), scale=0.02)
    out = _dense(b, _cross_attention(b, query, z, 1, latents, width, width, width), width, 10)
    return b.model("perceiver", hm.graph_input([1, tokens, channels]), out)


def dcn(rows: int, dims: int, crosses: int, deep: tuple[int, ...]) -> onnx.ModelProto:
    """Deep & Cross Network v2 (see the module docstring) over ``rows`` rows of ``dims`` features."""
    b = hm._Builder(134)
    x = "x"
    for _ in range(crosses):
        x = b.op("Add", [b.op("Mul", ["x", _dense(b, x, dims, dims)]), x])
    h, k = "x", dims
    for n in deep:
        h, k = b.op("Relu", [_dense(b, h, k, n)]), n
    both = b.op("Concat", [x, h], axis=1)
    return b.model("dcn", hm.graph_input([rows, dims]), b.op("Sigmoid", [_dense(b, both, dims + k, 1)]))


SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "fnet_s128w256l4": partial(fnet, 128, 256, 4),
    "fnet_s512w384l2": partial(fnet, 512, 384, 2),
    "glow_r64l3s4h128": partial(glow, 64, 3, 4, 128),
    "glow_r32l2s8h256": partial(glow, 32, 2, 8, 256),
    "capsnet_r28c10": partial(capsnet, 28, 10),
    "capsnet_r36c32": partial(capsnet, 36, 32),
    "perceiver_t4096c64l128w256": partial(perceiver, 4096, 64, 128, 256, 2),
    "perceiver_t16384c32l256w384": partial(perceiver, 16384, 32, 256, 384, 1),
    "dcn_r512d256x3": partial(dcn, 512, 256, 3, (512, 256)),
    "dcn_r2048d512x4": partial(dcn, 2048, 512, 4, (1024, 512, 256)),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
