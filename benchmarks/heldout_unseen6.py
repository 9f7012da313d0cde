"""The sixth batch of unseen models for the host CPU fidelity check: four families no bundled or
held-out model resembled, fp32, opset 17, batch 1, built after the constant-folding and padded-row
changes and run as built.

- ``rrdb``: ESRGAN's residual-in-residual dense blocks (3x3 convs of 32 channels over the
  ``Concat`` of every earlier output, LeakyRelu, residuals scaled by 0.2), then a x2 nearest
  ``Resize`` and a conv;
- ``hrnet``: an HRNet-like stage (three branches at full, half and quarter resolution, each two
  residual 3x3 blocks, then every branch fused into every other: strided convs down, 1x1 convs and
  bilinear ``Resize`` up, summed, Relu);
- ``ssd``: an SSD-like head (a small conv backbone, class and box convs on three scales, each
  output ``Transpose``-d channels-last, ``Reshape``-d to rows, ``Concat``-ed, ``Softmax`` over the
  classes);
- ``gcn``: a graph convolutional network on a dense normalized adjacency (``MatMul`` of the
  adjacency and the features, then a linear layer, Relu; three layers, mean pooling, a classifier).

Each family has two sizes (:data:`SIZES`). ``python benchmarks/heldout_unseen6.py DIR --chip FP.yaml``
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

__all__ = ["SIZES", "build_unseen6"]

_x, _i64, _f32 = hm.graph_input, hm.i64, hm.f32  # the batches' shared helpers


def _conv(b: hm._Builder, x: str, cin: int, cout: int, k: int = 3, stride: int = 1) -> str:
    return b.op("Conv", [x, b.weight((cout, cin, k, k)), b.weight((cout,))], pads=[k // 2] * 4, strides=[stride] * 2)


def _dense_block(b: hm._Builder, x: str, c: int, growth: int = 16) -> str:
    feats = [x]
    for i in range(4):
        cin = c + i * growth
        inp = feats[0] if i == 0 else b.op("Concat", feats, axis=1)
        feats.append(b.op("LeakyRelu", [_conv(b, inp, cin, growth)], alpha=0.2))
    out = _conv(b, b.op("Concat", feats, axis=1), c + 4 * growth, c)
    return b.op("Add", [x, b.op("Mul", [out, b.const(_f32(0.2))])])


def rrdb(res: int, c: int = 32, blocks: int = 2) -> onnx.ModelProto:
    b = hm._Builder(21)
    x = _conv(b, "x", 3, c)
    h = x
    for _ in range(blocks):
        r = _dense_block(b, _dense_block(b, _dense_block(b, h, c), c), c)
        h = b.op("Add", [h, b.op("Mul", [r, b.const(_f32(0.2))])])
    h = b.op("Add", [x, _conv(b, h, c, c)])
    up = b.op("Resize", [h, "", b.const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")
    return b.model("rrdb", _x([1, 3, res, res]), _conv(b, b.op("LeakyRelu", [_conv(b, up, c, c)], alpha=0.2), c, 3))


def _basic(b: hm._Builder, x: str, c: int) -> str:
    y = _conv(b, b.op("Relu", [_conv(b, x, c, c)]), c, c)
    return b.op("Relu", [b.op("Add", [x, y])])


def hrnet(res: int, widths: tuple[int, int, int] = (32, 64, 128)) -> onnx.ModelProto:
    """A stem to ``res / 4``, then one stage of three branches exchanging their features."""
    b = hm._Builder(22)
    stem = b.op("Relu", [_conv(b, b.op("Relu", [_conv(b, "x", 3, 64, stride=2)]), 64, widths[0], stride=2)])
    branches = [stem]
    for i in (1, 2):
        branches.append(b.op("Relu", [_conv(b, branches[-1], widths[i - 1], widths[i], stride=2)]))
    branches = [_basic(b, _basic(b, x, c), c) for x, c in zip(branches, widths)]
    side = res // 4
    fused = []
    for j, cj in enumerate(widths):
        terms = []
        for i, (x, ci) in enumerate(zip(branches, widths)):
            if i == j:
                terms.append(x)
            elif i > j:  # up: a 1x1 conv, then bilinear to branch j's size
                y = _conv(b, x, ci, cj, k=1)
                size = b.const(_i64([1, cj, side >> j, side >> j]))
                terms.append(b.op("Resize", [y, "", "", size], mode="linear"))
            else:  # down: strided 3x3 convs
                y = x
                for step in range(j - i):
                    y = _conv(b, y, ci if step == 0 else cj, cj, stride=2)
                terms.append(y)
        fused.append(b.op("Relu", [b.op("Sum", terms)]))
    ups = [fused[0]] + [b.op("Resize", [f, "", "", b.const(_i64([1, c, side, side]))], mode="linear") for f, c in zip(fused[1:], widths[1:])]
    head = _conv(b, b.op("Concat", ups, axis=1), sum(widths), 17, k=1)
    return b.model("hrnet", _x([1, 3, res, res]), head)


def ssd(res: int, classes: int = 21, anchors: int = 6) -> onnx.ModelProto:
    b = hm._Builder(23)
    x, c = "x", 3
    feats = []
    for i, cout in enumerate((32, 64, 128, 256, 256)):
        x, c = b.op("Relu", [_conv(b, x, c, cout, stride=2)]), cout
        if i >= 2:
            feats.append((x, c, res >> (i + 1)))
    scores: list[str] = []
    boxes: list[str] = []
    for f, c, side in feats:
        for out, width, dst in ((classes, 3, scores), (4, 3, boxes)):
            y = b.op("Transpose", [_conv(b, f, c, anchors * out, k=width)], perm=[0, 2, 3, 1])
            dst.append(b.op("Reshape", [y, b.const(_i64([1, side * side * anchors, out]))]))
    conf = b.op("Softmax", [b.op("Concat", scores, axis=1)], axis=-1)
    loc = b.op("Concat", boxes, axis=1)
    return b.model("ssd", _x([1, 3, res, res]), b.op("Concat", [conf, loc], axis=2))


def gcn(nodes: int, feats: int = 128, hidden: int = 256, layers: int = 3, classes: int = 10) -> onnx.ModelProto:
    """GCN layers ``Relu(A (H W) + b)`` on a dense normalized adjacency ``A`` (a weight: a fixed
    graph), mean-pooled, classified."""
    b = hm._Builder(24)
    rng = np.random.default_rng(24)
    adj = (rng.random((nodes, nodes)) < 8.0 / nodes).astype(np.float32) + np.eye(nodes, dtype=np.float32)
    deg = adj.sum(1)
    a = b.const((adj / np.sqrt(deg[:, None] * deg[None, :])).astype(np.float32))
    h, width = "x", feats
    for _ in range(layers):
        h = b.op("Relu", [b.op("Add", [b.op("MatMul", [a, b.op("MatMul", [h, b.weight((width, hidden))])]), b.weight((hidden,))])])
        width = hidden
    pooled = b.op("ReduceMean", [h], axes=[0], keepdims=1)
    return b.model("gcn", _x([nodes, feats]), b.op("MatMul", [pooled, b.weight((hidden, classes))]))


#: File stem -> builder, two sizes a family; all built after the changes of 2026-12-05 and run as they are.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "rrdb_r64": lambda: rrdb(64),
    "rrdb_r96": lambda: rrdb(96),
    "hrnet_r256": lambda: hrnet(256),
    "hrnet_r192": lambda: hrnet(192, (24, 48, 96)),
    "ssd_r320": lambda: ssd(320),
    "ssd_r256": lambda: ssd(256),
    "gcn_n1024": lambda: gcn(1024),
    "gcn_n2708": lambda: gcn(2708, 256, 128),
}


def build_unseen6(out_dir: Path) -> list[Path]:
    """Write every model of :data:`SIZES` into ``out_dir``; their paths."""
    return hm.build_sizes(SIZES, out_dir)


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
