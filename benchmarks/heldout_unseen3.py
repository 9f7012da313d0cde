"""The third batch of unseen models for the host CPU fidelity check: six families no bundled or
held-out model resembled, batch 1, fp32, opset 17.

- ``espcn``: super-resolution (5x5 and 3x3 convs with Tanh, a last conv of ``r * r`` filters,
  ``DepthToSpace``);
- ``prelu``: a CNN with a per-channel ``PRelu`` after each conv, a Gemm and an ``ArgMax`` head;
- ``densenet``: dense blocks (BatchNormalization, Relu, 1x1 and 3x3 convs, a channel ``Concat``
  per layer), a transition conv and ``AveragePool``;
- ``swin``: one Swin-like block (windows of 7 x 7 by six-axis Reshape/Transpose, relative
  position bias, Erf-Gelu MLP);
- ``w2v``: a wav2vec-like feature encoder (strided 1-D convs, ``InstanceNormalization``, Gelu);
- ``einsum``: attention written with two ``Einsum`` s.

``espcn`` and ``prelu`` have two sizes (:data:`SIZES`): the PRelu and DepthToSpace probes and the
NCHWc rule for any number of output channels were developed on the first; the second was built
after them. Run ``python benchmarks/heldout_unseen3.py DIR [--chip FP.yaml]``: the files in ``DIR``,
and with a fingerprinted chip file each one's ``hwsim validate`` (1 thread) in a table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "build_unseen3"]

_x, _i64, _f32 = hm.graph_input, hm.i64, hm.f32  # the batches' shared helpers


def espcn(res: int, r: int) -> onnx.ModelProto:
    b = hm._Builder(0)
    x = b.op("Tanh", [b.op("Conv", ["x", b.weight((64, 1, 5, 5)), b.weight((64,))], pads=[2] * 4)])
    x = b.op("Tanh", [b.op("Conv", [x, b.weight((32, 64, 3, 3)), b.weight((32,))], pads=[1] * 4)])
    x = b.op("Conv", [x, b.weight((r * r, 32, 3, 3)), b.weight((r * r,))], pads=[1] * 4)
    return b.model("espcn", _x([1, 1, res, res]), b.op("DepthToSpace", [x], blocksize=r, mode="CRD"))


def prelu(res: int) -> onnx.ModelProto:
    b = hm._Builder(0)
    x, cin, c = "x", 3, 32
    for i in range(4):
        x = b.op("Conv", [x, b.weight((c, cin, 3, 3)), b.weight((c,))], pads=[1] * 4, strides=[2 if i else 1] * 2)
        x = b.op("PRelu", [x, b.weight((c, 1, 1), value=0.25)])
        cin, c = c, 2 * c
    x = b.op("Gemm", [b.op("Flatten", [b.op("GlobalAveragePool", [x])]), b.weight((1000, cin)), b.weight((1000,))], transB=1)
    return b.model("prelu", _x([1, 3, res, res]), b.op("ArgMax", [x], axis=1))


def _bn_relu(b: hm._Builder, x: str, c: int) -> str:
    ones, zeros = b.weight((c,), value=1.0), b.weight((c,), value=0.0)
    return b.op("Relu", [b.op("BatchNormalization", [x, ones, zeros, b.weight((c,), value=0.0), b.weight((c,), value=1.0)])])


def densenet(res: int, growth: int = 32, layers: int = 6) -> onnx.ModelProto:
    b = hm._Builder(0)
    c = 64
    x = b.op("Conv", ["x", b.weight((c, 3, 3, 3)), b.weight((c,))], pads=[1] * 4)
    for block in range(2):
        for _ in range(layers):
            y = b.op("Conv", [_bn_relu(b, x, c), b.weight((4 * growth, c, 1, 1))])
            y = b.op("Conv", [_bn_relu(b, y, 4 * growth), b.weight((growth, 4 * growth, 3, 3))], pads=[1] * 4)
            x, c = b.op("Concat", [x, y], axis=1), c + growth
        if block == 0:
            x, c = b.op("Conv", [b.op("Relu", [x]), b.weight((c // 2, c, 1, 1))]), c // 2
            x = b.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
    return b.model("densenet", _x([1, 3, res, res]), b.op("GlobalAveragePool", [x]))


def _windows(b: hm._Builder, x: str, side: int, win: int, c: int, out: list[int]) -> str:
    n = side // win
    x = b.op("Reshape", [x, b.const(_i64([1, n, win, n, win, c]))])
    return b.op("Reshape", [b.op("Transpose", [x], perm=[0, 1, 3, 2, 4, 5]), b.const(_i64(out))])


def swin(side: int, c: int = 96, win: int = 7, heads: int = 3) -> onnx.ModelProto:
    b = hm._Builder(0)
    nw, hd, t = (side // win) ** 2, c // heads, win * win
    y = _windows(b, hm._layer_norm(b, "x", c), side, win, c, [nw, t, c])
    qkv = b.op("Add", [b.op("MatMul", [y, b.weight((c, 3 * c))]), b.weight((3 * c,))])
    qkv = b.op("Transpose", [b.op("Reshape", [qkv, b.const(_i64([nw, t, 3, heads, hd]))])], perm=[2, 0, 3, 1, 4])
    q, k, v = (b.op("Gather", [qkv, b.const(np.array(i, np.int64))], axis=0) for i in range(3))
    s = b.op("MatMul", [b.op("Mul", [q, b.const(np.array(hd**-0.5, np.float32))]), b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    p = b.op("Softmax", [b.op("Add", [s, b.weight((1, heads, t, t))])], axis=-1)
    o = b.op("Reshape", [b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3]), b.const(_i64([nw, t, c]))])
    o = b.op("Add", [b.op("MatMul", [o, b.weight((c, c))]), b.weight((c,))])
    x = b.op("Add", ["x", _windows(b, o, side, win, c, [1, side * side, c])])
    h = hm._gelu(b, b.op("Add", [b.op("MatMul", [hm._layer_norm(b, x, c), b.weight((c, 4 * c))]), b.weight((4 * c,))]))
    x = b.op("Add", [x, b.op("Add", [b.op("MatMul", [h, b.weight((4 * c, c))]), b.weight((c,))])])
    return b.model("swin", _x([1, side * side, c]), x)


def w2v(samples: int, c: int = 256) -> onnx.ModelProto:
    b = hm._Builder(0)
    x = b.op("Conv", ["x", b.weight((c, 1, 10))], strides=[5])
    x = hm._gelu(b, b.op("InstanceNormalization", [x, b.weight((c,), value=1.0), b.weight((c,), value=0.0)]))
    for k in (3, 3, 3, 3, 2, 2):
        x = hm._gelu(b, b.op("Conv", [x, b.weight((c, c, k))], strides=[2]))
    return b.model("w2v", _x([1, 1, samples]), x)


def einsum(seq: int, c: int = 256, heads: int = 4) -> onnx.ModelProto:
    b = hm._Builder(0)
    hd = c // heads

    def proj() -> str:
        return b.op("Reshape", [b.op("MatMul", ["x", b.weight((c, c))]), b.const(_i64([1, seq, heads, hd]))])

    q, k, v = proj(), proj(), proj()
    s = b.op("Mul", [b.op("Einsum", [q, k], equation="bqhd,bkhd->bhqk"), b.const(np.array(hd**-0.5, np.float32))])
    o = b.op("Einsum", [b.op("Softmax", [s], axis=-1), v], equation="bhqk,bkhd->bqhd")
    o = b.op("MatMul", [b.op("Reshape", [o, b.const(_i64([1, seq, c]))]), b.weight((c, c))])
    return b.model("einsum", _x([1, seq, c]), b.op("Add", ["x", o]))


#: File stem -> builder: developed-on sizes first, then the ones built after the rules.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "espcn_r128x3": lambda: espcn(128, 3),
    "prelu_r96": lambda: prelu(96),
    "espcn_r160x2": lambda: espcn(160, 2),
    "prelu_r128": lambda: prelu(128),
    "densenet_r56": lambda: densenet(56),
    "swin_r56": lambda: swin(56),
    "w2v_n16000": lambda: w2v(16000),
    "einsum_s128": lambda: einsum(128),
}


def build_unseen3(out_dir: Path) -> list[Path]:
    """Write every model of :data:`SIZES` into ``out_dir``; their paths."""
    return hm.build_sizes(SIZES, out_dir)


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
