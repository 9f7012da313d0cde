"""The twelfth batch of unseen models for the host CPU fidelity check: four more families no
held-out model resembled, two sizes each, built and run once as they came:

- ``gnn``: message passing over an edge list: each edge ``Gather`` s its source node's features,
  a shared ``MatMul`` transforms them, and ``ScatterElements`` (``reduction="add"``) sums them into
  the destination nodes; two layers with ``Relu``, a mean-pool readout and a linear head;
- ``srcubic``: super-resolution by a bicubic ``Resize`` (``mode="cubic"``) and a residual of three
  3x3 convs;
- ``moe``: a mixture-of-experts MLP block: a router ``MatMul`` and ``Softmax``, ``TopK`` (k = 2) of
  the gates, every expert's MLP run on every token, the chosen ones picked by ``GatherElements``
  and summed with their gates;
- ``pools``: a CNN whose downsampling is pooling of every kind onnxruntime has: ``MaxPool`` 3x3
  stride 2, ``AveragePool`` 2x2, ``LpPool`` (p = 2), then ``GlobalMaxPool`` and a ``Gemm``.

``python benchmarks/heldout_unseen12.py DIR --chip FP.yaml`` writes them and validates each
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

__all__ = ["SIZES", "gnn", "moe", "pools", "srcubic"]


def gnn(nodes: int, edges: int, width: int, seed: int = 46) -> onnx.ModelProto:
    """Two message-passing layers over ``edges`` random edges of ``nodes`` nodes (see the module
    docstring); inputs ``x`` (node features) and ``edges`` (int64, source and destination rows)."""
    b = hm._Builder(seed)
    rng = np.random.default_rng(seed)
    src = b.const(rng.integers(0, nodes, edges, dtype=np.int64))
    dst = b.const(np.repeat(rng.integers(0, nodes, edges, dtype=np.int64)[:, None], width, axis=1))
    h, k = "x", width
    for _ in range(2):
        msg = b.op("MatMul", [b.op("Gather", [h, src], axis=0), b.weight((k, width))])
        zeros = b.const(np.zeros((nodes, width), np.float32))
        agg = b.op("ScatterElements", [zeros, dst, msg], axis=0, reduction="add")
        h = b.op("Relu", [b.op("Add", [agg, b.op("MatMul", [h, b.weight((k, width))])])])
    pooled = b.op("ReduceMean", [h], axes=[0], keepdims=1)
    out = b.op("Gemm", [pooled, b.weight((16, width)), b.weight((16,))], transB=1)
    return b.model("gnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [nodes, width])], out)


def srcubic(res: int, scale: int, width: int = 32) -> onnx.ModelProto:
    """Bicubic upsampling of a ``res`` x ``res`` RGB image by ``scale``, plus a learned residual."""
    b = hm._Builder(47)
    up = b.op("Resize", ["x", "", b.const(np.array([1, 1, scale, scale], np.float32))], mode="cubic")
    y, c = up, 3
    for cout in (width, width, 3):
        y = b.op("Conv", [y, b.weight((cout, c, 3, 3)), b.weight((cout,))], pads=[1] * 4)
        y, c = (b.op("Relu", [y]) if cout != 3 else y), cout
    return b.model("srcubic", hm.graph_input([1, 3, res, res]), b.op("Add", [up, y]))


def moe(tokens: int, width: int, experts: int, hidden: int) -> onnx.ModelProto:
    """A mixture-of-experts block over ``tokens`` tokens (see the module docstring)."""
    b = hm._Builder(48)
    gates = b.op("Softmax", [b.op("MatMul", ["x", b.weight((width, experts))])], axis=-1)
    top = b.name("topk")
    idx = b.name("topk_idx")
    b.nodes.append(helper.make_node("TopK", [gates, b.const(hm.i64([2]))], [top, idx], name=b.name("TopK"), axis=-1))
    outs = []
    for _ in range(experts):
        h = b.op("Relu", [b.op("MatMul", ["x", b.weight((width, hidden))])])
        outs.append(b.op("Unsqueeze", [b.op("MatMul", [h, b.weight((hidden, width))]), b.const(hm.i64([1]))]))
    stacked = b.op("Concat", outs, axis=1)  # [tokens, experts, width]
    where = b.op("Expand", [b.op("Unsqueeze", [idx, b.const(hm.i64([2]))]), b.const(hm.i64([tokens, 2, width]))])
    chosen = b.op("GatherElements", [stacked, where], axis=1)  # [tokens, 2, width]
    mixed = b.op("ReduceSum", [b.op("Mul", [chosen, b.op("Unsqueeze", [top, b.const(hm.i64([2]))])]),
                               b.const(hm.i64([1]))], keepdims=0)  # fmt: skip
    return b.model("moe", hm.graph_input([tokens, width]), b.op("Add", ["x", mixed]))


def pools(res: int, width: int) -> onnx.ModelProto:
    """Convs downsampled by MaxPool, AveragePool and LpPool in turn, GlobalMaxPool and a Gemm."""
    b = hm._Builder(49)
    x, c = "x", 3
    for i, pool in enumerate(("MaxPool", "AveragePool", "LpPool")):
        cout = width * 2**i
        x = b.op("Relu", [b.op("Conv", [x, b.weight((cout, c, 3, 3)), b.weight((cout,))], pads=[1] * 4)])
        attrs: dict[str, object] = {"kernel_shape": [2, 2], "strides": [2, 2]}
        if pool == "MaxPool":
            attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4}
        elif pool == "LpPool":
            attrs["p"] = 2
        x, c = b.op(pool, [x], **attrs), cout
    head = b.op("Flatten", [b.op("GlobalMaxPool", [x])])
    return b.model("pools", hm.graph_input([1, 3, res, res]),
                   b.op("Gemm", [head, b.weight((100, c)), b.weight((100,))], transB=1))  # fmt: skip


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "gnn_n2000e16k": partial(gnn, 2000, 16_000, 64),
    "gnn_n10000e40kw32": partial(gnn, 10_000, 40_000, 32),
    "srcubic_r128x2": partial(srcubic, 128, 2),
    "srcubic_r96x3": partial(srcubic, 96, 3),
    "moe_t256e8": partial(moe, 256, 256, 8, 512),
    "moe_t64e16": partial(moe, 64, 384, 16, 768),
    "pools_r224w32": partial(pools, 224, 32),
    "pools_r160w48": partial(pools, 160, 48),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
