"""The thirteenth batch of unseen models for the host CPU fidelity check: seven more families no
held-out model resembled, two sizes each:

- ``quartznet``: a speech model of 1D depthwise-separable blocks (QuartzNet, Jasper): a depthwise
  ``Conv`` of kernel 33 over time, a pointwise one, ``BatchNormalization`` and ``Relu``, five of them
  with a residual;
- ``perceiver``: cross-attention from a few learned latents to a long input (Perceiver): queries
  from the latents, keys and values from the input, then a self-attention block over the latents;
- ``unpool``: an autoencoder whose decoder undoes its pools: ``MaxPool`` with its ``Indices``
  output, ``MaxUnpool`` by them (SegNet);
- ``cliptext``: a causal text encoder as CLIP's (token ``Gather``, a causal mask added to the
  scores, two blocks) whose output is the row of the end token, found by ``ArgMax`` over the ids;
- ``scan``: a selective-scan layer written with ``CumSum`` (a state space model without its
  kernel), in chunks of 64 steps as Mamba-2's SSD runs it: ``Softplus`` step sizes, a decay
  ``Exp`` of their cumulative sum, the input weighted and summed by ``CumSum``, gated by
  ``Sigmoid``. (First built over the whole sequence: the decay underflowed, ``Exp`` made
  subnormals and onnxruntime ran it 12x slower than its rate; no real model does that.)
- ``capsule``: a capsule layer (CapsNet): primary capsules by a conv, the ``squash`` non-linearity
  (``ReduceSum`` of squares, ``Sqrt``, ``Div``), predictions by a batched ``MatMul`` and two rounds
  of routing (``Softmax`` over the output capsules, weighted sums, agreement);
- ``linattn``, built after the first run and held out of what it changed: causal linear attention,
  running sums of ``k v^T`` by ``CumSum`` over the tokens (an outer axis).

``python benchmarks/heldout_unseen13.py DIR --chip FP.yaml`` writes them and validates each
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

__all__ = ["SIZES", "capsule", "cliptext", "linattn", "perceiver", "quartznet", "scan", "unpool"]



def quartznet(frames: int, width: int, blocks: int = 5, kernel: int = 33) -> onnx.ModelProto:
    """A mel-spectrogram (64 bins x ``frames``) through ``blocks`` depthwise-separable 1D blocks."""
    b = hm._Builder(50)
    x = b.op("Relu", [hm.batch_norm(b, b.op("Conv", ["x", b.weight((width, 64, 11))], pads=[5, 5], strides=[2]), width)])
    for _ in range(blocks):
        dw = b.op("Conv", [x, b.weight((width, 1, kernel))], group=width, pads=[kernel // 2] * 2)
        pw = hm.batch_norm(b, b.op("Conv", [dw, b.weight((width, width, 1))]), width)
        x = b.op("Relu", [b.op("Add", [pw, x])])
    return b.model("quartznet", hm.graph_input([1, 64, frames]), b.op("Conv", [x, b.weight((29, width, 1))]))


def _attention(b: hm._Builder, q_in: str, kv_in: str, width: int, heads: int, lq: int, lk: int) -> str:
    """Multi-head attention of ``lq`` queries over ``lk`` keys, projections included."""
    d = width // heads

    def split(x: str, n: int) -> str:
        r = b.op("Reshape", [x, b.const(hm.i64([n, heads, d]))])
        return b.op("Transpose", [r], perm=[1, 0, 2])

    q = split(b.op("MatMul", [q_in, b.weight((width, width))]), lq)
    k = split(b.op("MatMul", [kv_in, b.weight((width, width))]), lk)
    v = split(b.op("MatMul", [kv_in, b.weight((width, width))]), lk)
    scores = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 2, 1])]), b.const(hm.f32(d**-0.5))])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    merged = b.op("Reshape", [b.op("Transpose", [ctx], perm=[1, 0, 2]), b.const(hm.i64([lq, width]))])
    return b.op("MatMul", [merged, b.weight((width, width))])


def perceiver(inputs: int, latents: int, width: int, heads: int) -> onnx.ModelProto:
    """Learned latents attend to ``inputs`` tokens, then to themselves, each with an MLP."""
    b = hm._Builder(51)
    lat = b.weight((latents, width), scale=1.0)
    x = b.op("Add", [lat, _attention(b, hm._layer_norm(b, lat, width), hm._layer_norm(b, "x", width), width, heads, latents, inputs)])
    h = hm._layer_norm(b, x, width)
    x = b.op("Add", [x, _attention(b, h, h, width, heads, latents, latents)])
    mlp = b.op("MatMul", [hm._gelu(b, b.op("MatMul", [hm._layer_norm(b, x, width), b.weight((width, 4 * width))])),
                          b.weight((4 * width, width))])  # fmt: skip
    return b.model("perceiver", hm.graph_input([inputs, width]), b.op("Add", [x, mlp]))


def unpool(res: int, width: int) -> onnx.ModelProto:
    """Two conv + MaxPool (with indices) stages, then two MaxUnpool + conv stages back."""
    b = hm._Builder(52)
    x, c, saved = "x", 3, []
    for i in range(2):
        cout = width * 2**i
        x = b.op("Relu", [b.op("Conv", [x, b.weight((cout, c, 3, 3)), b.weight((cout,))], pads=[1] * 4)])
        out, idx = b.name("maxpool"), b.name("indices")
        b.nodes.append(helper.make_node("MaxPool", [x], [out, idx], name=b.name("MaxPool"), kernel_shape=[2, 2], strides=[2, 2]))
        saved.append(idx)
        x, c = out, cout
    for i in (1, 0):
        x = b.op("MaxUnpool", [x, saved[i]], kernel_shape=[2, 2], strides=[2, 2])
        cout = width * 2 ** (i - 1) if i else 3
        x = b.op("Conv", [x, b.weight((cout, c, 3, 3)), b.weight((cout,))], pads=[1] * 4)
        x, c = (b.op("Relu", [x]) if i else x), cout
    return b.model("unpool", hm.graph_input([1, 3, res, res]), x)


def cliptext(tokens: int, width: int, heads: int, vocab: int = 49408) -> onnx.ModelProto:
    """Token ids through a causal two-block encoder; the output is the end token's row."""
    b = hm._Builder(53)
    x = b.op("Add", [b.op("Gather", [b.weight((vocab, width)), "ids"], axis=0), b.weight((tokens, width))])
    mask = b.const(np.triu(np.full((tokens, tokens), -1e4, np.float32), 1))
    d = width // heads
    for _ in range(2):
        h = hm._layer_norm(b, x, width)
        q, k, v = (b.op("Transpose", [b.op("Reshape", [b.op("MatMul", [h, b.weight((width, width))]),
                                                        b.const(hm.i64([tokens, heads, d]))])], perm=[1, 0, 2])
                   for _ in range(3))  # fmt: skip
        s = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 2, 1])]), b.const(hm.f32(d**-0.5))]), mask])
        ctx = b.op("Reshape", [b.op("Transpose", [b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])], perm=[1, 0, 2]),
                               b.const(hm.i64([tokens, width]))])  # fmt: skip
        x = b.op("Add", [x, b.op("MatMul", [ctx, b.weight((width, width))])])
        ff = b.op("MatMul", [hm._gelu(b, b.op("MatMul", [hm._layer_norm(b, x, width), b.weight((width, 4 * width))])),
                             b.weight((4 * width, width))])  # fmt: skip
        x = b.op("Add", [x, ff])
    end = b.op("ArgMax", ["ids"], axis=0, keepdims=0)
    out = b.op("Gather", [hm._layer_norm(b, x, width), end], axis=0)
    return b.model("cliptext", [helper.make_tensor_value_info("ids", TensorProto.INT64, [tokens])],
                   b.op("MatMul", [out, b.weight((width, width))]))  # fmt: skip


def scan(length: int, width: int, layers: int = 2, chunk: int = 64) -> onnx.ModelProto:
    """``layers`` selective-scan layers over ``length`` steps of ``width`` channels, in chunks of
    ``chunk`` steps as Mamba-2's SSD computes them (a decay over a whole sequence underflows)."""
    b = hm._Builder(54)
    x = "x"
    axis = b.const(hm.i64([1]))
    blocks, flat = b.const(hm.i64([length // chunk, chunk, width])), b.const(hm.i64([length, width]))
    for _ in range(layers):
        h = hm._layer_norm(b, x, width)
        step = b.op("Softplus", [b.op("MatMul", [h, b.weight((width, width))])])
        u = b.op("Reshape", [b.op("Mul", [b.op("MatMul", [h, b.weight((width, width))]), step]), blocks])
        decay = b.op("Exp", [b.op("Neg", [b.op("CumSum", [b.op("Reshape", [step, blocks]), axis])])])
        state = b.op("Reshape", [b.op("Mul", [b.op("CumSum", [b.op("Div", [u, decay]), axis]), decay]), flat])
        gate = b.op("Sigmoid", [b.op("MatMul", [h, b.weight((width, width))])])
        x = b.op("Add", [x, b.op("MatMul", [b.op("Mul", [state, gate]), b.weight((width, width))])])
    return b.model("scan", hm.graph_input([length, width]), x)


def linattn(tokens: int, width: int, heads: int, layers: int = 2) -> onnx.ModelProto:
    """Causal linear attention (Katharopoulos et al. 2020): ``elu(q) + 1`` and ``elu(k) + 1`` as the
    feature maps, the running sums of ``k v^T`` and of ``k`` by ``CumSum`` over the tokens, each
    token's query read against them; an MLP after each of ``layers`` layers."""
    b = hm._Builder(56)
    d = width // heads
    x, axis = "x", b.const(hm.i64([0]))

    def feature(t: str) -> str:
        r = b.op("Reshape", [b.op("MatMul", [t, b.weight((width, width))]), b.const(hm.i64([tokens, heads, d]))])
        return b.op("Add", [b.op("Elu", [r]), b.const(hm.f32(1.0))])

    for _ in range(layers):
        h = hm._layer_norm(b, x, width)
        q, k = feature(h), feature(h)
        v = b.op("Reshape", [b.op("MatMul", [h, b.weight((width, width))]), b.const(hm.i64([tokens, heads, 1, d]))])
        kv = b.op("CumSum", [b.op("Mul", [b.op("Unsqueeze", [k, b.const(hm.i64([3]))]), v]), axis])  # [t, h, d, d]
        num = b.op("MatMul", [b.op("Unsqueeze", [q, b.const(hm.i64([2]))]), kv])  # [t, h, 1, d]
        den = b.op("ReduceSum", [b.op("Mul", [q, b.op("CumSum", [k, axis])]), b.const(hm.i64([-1]))], keepdims=1)
        att = b.op("Div", [b.op("Reshape", [num, b.const(hm.i64([tokens, heads, d]))]), den])
        x = b.op("Add", [x, b.op("MatMul", [b.op("Reshape", [att, b.const(hm.i64([tokens, width]))]), b.weight((width, width))])])
        ff = b.op("MatMul", [hm._gelu(b, b.op("MatMul", [hm._layer_norm(b, x, width), b.weight((width, 2 * width))])),
                             b.weight((2 * width, width))])  # fmt: skip
        x = b.op("Add", [x, ff])
    return b.model("linattn", hm.graph_input([tokens, width]), x)


def _squash(b: hm._Builder, s: str) -> str:
    """``|s|^2 / (1 + |s|^2) * s / |s|`` over the last axis."""
    n2 = b.op("ReduceSum", [b.op("Mul", [s, s]), b.const(hm.i64([-1]))], keepdims=1)
    scale = b.op("Div", [n2, b.op("Mul", [b.op("Add", [n2, b.const(hm.f32(1.0))]), b.op("Sqrt", [b.op("Add", [n2, b.const(hm.f32(1e-7))])])])])
    return b.op("Mul", [s, scale])


def capsule(res: int, prim_maps: int, classes: int = 10, routing: int = 2) -> onnx.ModelProto:
    """A conv, primary capsules of 8 values, class capsules of 16 by dynamic routing."""
    b = hm._Builder(55)
    f = b.op("Relu", [b.op("Conv", ["x", b.weight((256, 1, 9, 9)), b.weight((256,))])])
    prim = b.op("Conv", [f, b.weight((prim_maps * 8, 256, 9, 9)), b.weight((prim_maps * 8,))], strides=[2, 2])
    side = (res - 8 - 9) // 2 + 1  # after the 9x9 conv and the 9x9 conv of stride 2
    n = prim_maps * side * side
    grid = b.op("Reshape", [prim, b.const(hm.i64([prim_maps, 8, side * side]))])
    u = _squash(b, b.op("Reshape", [b.op("Transpose", [grid], perm=[0, 2, 1]), b.const(hm.i64([n, 1, 1, 8]))]))
    uhat = b.op("MatMul", [u, b.weight((n, classes, 8, 16))])  # [n, classes, 1, 16]
    uhat = b.op("Reshape", [uhat, b.const(hm.i64([n, classes, 16]))])
    logits = b.const(np.zeros((n, classes, 1), np.float32))
    v = ""
    for r in range(routing):
        c = b.op("Softmax", [logits], axis=1)
        v = _squash(b, b.op("ReduceSum", [b.op("Mul", [c, uhat]), b.const(hm.i64([0]))], keepdims=1))  # [1, classes, 16]
        if r < routing - 1:
            agree = b.op("ReduceSum", [b.op("Mul", [uhat, v]), b.const(hm.i64([-1]))], keepdims=1)
            logits = b.op("Add", [logits, agree])
    return b.model("capsule", hm.graph_input([1, 1, res, res]), v)


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "quartznet_t800w256": partial(quartznet, 800, 256),
    "quartznet_t1600w128": partial(quartznet, 1600, 128),
    "perceiver_n2048l128w256": partial(perceiver, 2048, 128, 256, 8),
    "perceiver_n8192l64w128": partial(perceiver, 8192, 64, 128, 4),
    "unpool_r128w32": partial(unpool, 128, 32),
    "unpool_r224w16": partial(unpool, 224, 16),
    "cliptext_t77w512": partial(cliptext, 77, 512, 8),
    "cliptext_t77w256": partial(cliptext, 77, 256, 4),
    "scan_l1024w256": partial(scan, 1024, 256),
    "scan_l4096w128": partial(scan, 4096, 128),
    "linattn_t512w256": partial(linattn, 512, 256, 4),
    "linattn_t2048w128": partial(linattn, 2048, 128, 4),
    "capsule_r28m32": partial(capsule, 28, 32),
    "capsule_r36m16": partial(capsule, 36, 16),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
