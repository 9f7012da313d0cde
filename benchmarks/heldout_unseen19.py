"""The nineteenth batch of unseen models for the host CPU fidelity check: five more families no
held-out model resembled, two sizes each, built after the eighteenth batch and run as they came:

- ``seq2seq``: a greedy attention decoder unrolled over its steps as exporters leave a ``GRUCell``
  loop: per step the cell as products and gates (``Split``, ``Sigmoid``, ``Tanh``), Luong attention
  over the encoder's states (``MatMul``, ``Softmax``), an output layer, ``ArgMax`` and the next
  token's embedding (``Gather``): hundreds of small kernels;
- ``mfcc``: a keyword spotter on MFCCs: ``STFT`` power, a mel filterbank and a DCT as ``MatMul``s
  with ``Log`` between, then depthwise separable convs (DS-CNN);
- ``highway``: a character-aware word encoder: character embeddings (``Gather``), 1-D convs of
  widths 1-6 max-pooled over time (``ReduceMax``), two highway layers (``Sigmoid`` gates);
- ``widedeep``: Wide & Deep over table rows: a wide part of crossed ids (``Gather`` of one weight
  each, summed), eight embedding tables and dense features through an MLP, ``Sigmoid``;
- ``fusedmb``: EfficientNetV2-like stages: Fused-MBConv blocks (a 3x3 expansion conv, SiLU, a 1x1
  projection, a residual) then MBConv blocks with squeeze-and-excitation.

``python benchmarks/heldout_unseen19.py DIR --chip FP.yaml`` writes them and validates each
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
from heldout_unseen18 import _conv, _conv1d  # a conv with "same" padding and a bias

__all__ = ["SIZES", "fusedmb", "highway", "mfcc", "seq2seq", "widedeep"]


def _linear(b: hm._Builder, x: str, k: int, n: int) -> str:
    return b.op("Gemm", [x, b.weight((n, k), scale=1.0 / np.sqrt(k)), b.weight((n,))], transB=1)


def _gru_cell(b: hm._Builder, x: str, h: str, width: int, w: tuple[str, str]) -> str:
    """A ``GRUCell`` as exported: input and hidden products, gates split three ways."""
    gx, gh = (b.op("Gemm", [v, m], transB=1) for v, m in ((x, w[0]), (h, w[1])))
    parts = []
    for g in (gx, gh):
        names = [b.name("gate") for _ in range(3)]
        b.nodes.append(helper.make_node("Split", [g, b.const(hm.i64([width] * 3))], names, name=b.name("Split"), axis=1))
        parts.append(names)
    r = b.op("Sigmoid", [b.op("Add", [parts[0][0], parts[1][0]])])
    z = b.op("Sigmoid", [b.op("Add", [parts[0][1], parts[1][1]])])
    n = b.op("Tanh", [b.op("Add", [parts[0][2], b.op("Mul", [r, parts[1][2]])])])
    return b.op("Add", [b.op("Mul", [b.op("Sub", [b.const(hm.f32(1.0)), z]), n]), b.op("Mul", [z, h])])


def seq2seq(src: int, width: int, steps: int, vocab: int = 1000) -> onnx.ModelProto:
    """A greedy attention decoder (see the module docstring) over ``src`` encoder states of
    ``width``, unrolled over ``steps`` steps."""
    b = hm._Builder(110)
    emb = b.weight((vocab, width), scale=0.1)
    w = (b.weight((3 * width, width), scale=1.0 / np.sqrt(width)), b.weight((3 * width, width), scale=1.0 / np.sqrt(width)))
    attn_out, logits_w = b.weight((width, 2 * width), scale=1.0 / np.sqrt(2 * width)), b.weight((vocab, width), scale=0.1)
    enc = b.op("Reshape", ["x", b.const(hm.i64([src, width]))])
    h = b.op("ReduceMean", [enc], axes=[0], keepdims=1)  # [1, width]
    tok = b.op("Gather", [emb, b.const(hm.i64([0]))], axis=0)  # the start token, [1, width]
    tokens = []
    for _ in range(steps):
        h = _gru_cell(b, tok, h, width, w)
        attn = b.op("Softmax", [b.op("MatMul", [h, b.op("Transpose", [enc], perm=[1, 0])])], axis=-1)  # [1, src]
        ctx = b.op("MatMul", [attn, enc])
        out = b.op("Tanh", [b.op("Gemm", [b.op("Concat", [h, ctx], axis=1), attn_out], transB=1)])
        best = b.op("ArgMax", [b.op("Gemm", [out, logits_w], transB=1)], axis=1, keepdims=0)  # [1]
        tokens.append(best)
        tok = b.op("Gather", [emb, best], axis=0)
    return b.model("seq2seq", hm.graph_input([1, src, width]), b.op("Concat", tokens, axis=0))


def _ds_block(b: hm._Builder, x: str, c: int) -> str:
    dw = b.op("Relu", [hm.batch_norm(b, _conv(b, x, c, c, 3, group=c), c)])
    return b.op("Relu", [hm.batch_norm(b, _conv(b, dw, c, c, 1), c)])


def mfcc(samples: int, c: int, blocks: int, mels: int = 40, coeffs: int = 13) -> onnx.ModelProto:
    """A DS-CNN keyword spotter (see the module docstring) on MFCCs of ``samples`` samples at
    16 kHz (512-point frames every 160 samples)."""
    b = hm._Builder(111)
    frames = b.op("STFT", [b.op("Unsqueeze", ["x", b.const(hm.i64([-1]))]), b.const(np.array(160, np.int64)),
                           b.const(np.hanning(512).astype(np.float32)), b.const(np.array(512, np.int64))], onesided=1)  # fmt: skip
    power = b.op("ReduceSum", [b.op("Mul", [frames, frames]), b.const(hm.i64([-1]))], keepdims=0)  # [1, T, 257]
    mel = b.op("Log", [b.op("Add", [b.op("MatMul", [power, b.weight((257, mels), value=0.01)]), b.const(hm.f32(1e-6))])])
    feats = b.op("Unsqueeze", [b.op("MatMul", [mel, b.weight((mels, coeffs), scale=0.2)]), b.const(hm.i64([1]))])  # [1, 1, T, 13]
    x = b.op("Relu", [hm.batch_norm(b, b.op("Conv", [feats, b.weight((c, 1, 10, 4), scale=0.1)], strides=[2, 2],
                                                      pads=[4, 1, 5, 2]), c)])  # fmt: skip
    for _ in range(blocks):
        x = _ds_block(b, x, c)
    pooled = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    return b.model("mfcc", hm.graph_input([1, samples]), _linear(b, pooled, c, 12))


def highway(words: int, chars: int, char_vocab: int = 262, dim: int = 16) -> onnx.ModelProto:
    """A character-aware encoder (see the module docstring) of ``words`` words of ``chars``
    characters each."""
    b = hm._Builder(112)
    emb = b.op("Transpose", [b.op("Gather", [b.weight((char_vocab, dim), scale=0.1), "chars"], axis=0)], perm=[0, 2, 1])
    pooled, width = [], 0
    for k, filters in ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512)):
        conv = b.op("Tanh", [_conv1d(b, emb, dim, filters, k)])
        pooled.append(b.op("ReduceMax", [conv], axes=[2], keepdims=0))
        width += filters
    x = b.op("Concat", pooled, axis=1)
    for _ in range(2):
        gate = b.op("Sigmoid", [_linear(b, x, width, width)])
        carry = b.op("Relu", [_linear(b, x, width, width)])
        x = b.op("Add", [b.op("Mul", [gate, carry]), b.op("Mul", [b.op("Sub", [b.const(hm.f32(1.0)), gate]), x])])
    inputs = [helper.make_tensor_value_info("chars", TensorProto.INT64, [words, chars])]
    return b.model("highway", inputs, _linear(b, x, width, 512))


def widedeep(rows: int, cross_vocab: int, vocabs: tuple[int, ...], dense: int, hidden: tuple[int, ...]) -> onnx.ModelProto:
    """Wide & Deep (see the module docstring) over ``rows`` rows: 16 crossed ids into one wide
    table, one id per table of ``vocabs`` (embeddings of 32), ``dense`` numeric features."""
    b = hm._Builder(113)
    wide = b.op("ReduceSum", [b.op("Gather", [b.weight((cross_vocab, 1), scale=0.01), "cross"], axis=0), b.const(hm.i64([1]))],
                keepdims=0)  # fmt: skip
    parts = ["x"]
    for i, vocab in enumerate(vocabs):  # one id input a field, as exporters leave them
        parts.append(b.op("Gather", [b.weight((vocab, 32), scale=0.05), f"cat{i}"], axis=0))
    deep, c = b.op("Concat", parts, axis=1), dense + 32 * len(vocabs)
    for n in hidden:
        deep, c = b.op("Relu", [_linear(b, deep, c, n)]), n
    out = b.op("Sigmoid", [b.op("Add", [_linear(b, deep, c, 1), wide])])
    inputs = [*hm.graph_input([rows, dense]), helper.make_tensor_value_info("cross", TensorProto.INT64, [rows, 16]),
              *(helper.make_tensor_value_info(f"cat{i}", TensorProto.INT64, [rows]) for i in range(len(vocabs)))]  # fmt: skip
    return b.model("widedeep", inputs, out)


def _silu(b: hm._Builder, x: str) -> str:
    return b.op("Mul", [x, b.op("Sigmoid", [x])])


def _fused_mb(b: hm._Builder, x: str, c: int) -> str:
    return b.op("Add", [x, _conv(b, _silu(b, _conv(b, x, c, 4 * c, 3)), 4 * c, c, 1)])


def _mb_se(b: hm._Builder, x: str, c: int) -> str:
    e = 4 * c
    h = _silu(b, _conv(b, _silu(b, _conv(b, x, c, e, 1)), e, e, 3, group=e))
    se = b.op("Sigmoid", [_conv(b, _silu(b, _conv(b, b.op("GlobalAveragePool", [h]), e, c // 4, 1)), c // 4, e, 1)])
    return b.op("Add", [x, _conv(b, b.op("Mul", [h, se]), e, c, 1)])


def fusedmb(res: int, c: int, fused: int, mb: int) -> onnx.ModelProto:
    """EfficientNetV2-like stages (see the module docstring) over a ``res`` x ``res`` RGB image:
    ``fused`` Fused-MBConv blocks of ``c`` channels at 1/2, then ``mb`` MBConv blocks of ``2 c`` at 1/4."""
    b = hm._Builder(114)
    x = _silu(b, _conv(b, "x", 3, c, 3, stride=2))
    for _ in range(fused):
        x = _fused_mb(b, x, c)
    x = _silu(b, _conv(b, x, c, 2 * c, 3, stride=2))
    for _ in range(mb):
        x = _mb_se(b, x, 2 * c)
    return b.model("fusedmb", hm.graph_input([1, 3, res, res]), x)


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "seq2seq_s64w256t16": partial(seq2seq, 64, 256, 16),
    "seq2seq_s200w512t32": partial(seq2seq, 200, 512, 32),
    "mfcc_s16000c64": partial(mfcc, 16000, 64, 4),
    "mfcc_s32000c172": partial(mfcc, 32000, 172, 5),
    "highway_w256c20": partial(highway, 256, 20),
    "highway_w1024c16": partial(highway, 1024, 16),
    "widedeep_r512": partial(widedeep, 512, 100_000, (1000, 1000, 500, 500, 100, 100, 50, 50), 13, (1024, 512, 256)),
    "widedeep_r2048": partial(widedeep, 2048, 1_000_000, (10_000, 5_000, 1000, 1000, 100, 100, 10, 10), 20, (512, 256)),
    "fusedmb_r192c24": partial(fusedmb, 192, 24, 2, 3),
    "fusedmb_r256c32": partial(fusedmb, 256, 32, 3, 2),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
