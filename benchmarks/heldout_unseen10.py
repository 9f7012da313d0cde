"""The tenth batch of unseen models for the host CPU fidelity check: DLRM-like recommendation
models, the most common CPU inference load no held-out model resembled.

Each takes a dense feature row through a bottom MLP (13 -> 512 -> 256 -> 64), looks up one bag of
indices per sparse feature in an embedding table (``Gather``, summed over the bag by ``ReduceSum``),
crosses the 1 + T feature vectors by a batched ``MatMul`` with their transpose, and scores the pair
products and the dense vector with a top MLP (-> 512 -> 256 -> 1, ``Sigmoid``):

- ``dlrm_b64t8``: batch 64, 8 tables of 100,000 x 64 (205 MB), bags of 20;
- ``dlrm_b256t8h1``: batch 256, the same tables, one index a feature;
- ``dlrm_b32t16r20k``: batch 32, 16 tables of 20,000 x 64, bags of 20.

``python benchmarks/heldout_unseen10.py DIR --chip FP.yaml`` writes them and validates each
(:func:`heldout_models.batch_main`). First run (2026-12-05 16:10, AMD EPYC, fingerprint ``fpK``):
+80.9 / -6.2 / +101.2 %; with a reduction's rows and blocks, ids spread over the tables and an
embedding's rows from the cache or DRAM as a loop of runs leaves them (17:20, ``fpN``): -10.0 / -5.5 /
-9.7 %; with a batched product's call per matrix (18:21, ``fpO``): -8.7 / -5.0 / -9.5 %
(``docs/fidelity_cpu.md``, "Reductions and embedding lookups").
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heldout_models as hm  # the builder the held-out families share

__all__ = ["SIZES", "dlrm"]


def _mlp(b: hm._Builder, x: str, widths: tuple[int, ...], last_relu: bool = True) -> str:
    for i, (k, n) in enumerate(itertools.pairwise(widths)):
        x = b.op("Gemm", [x, b.weight((n, k)), b.weight((n,))], transB=1)
        if last_relu or i < len(widths) - 2:
            x = b.op("Relu", [x])
    return x


def dlrm(batch: int, tables: int = 8, rows: int = 100_000, dim: int = 64, bag: int = 20, seed: int = 0) -> onnx.ModelProto:
    """A DLRM-like model (see the module docstring); inputs ``x`` (dense) and ``idx0``.. (int64 bags)."""
    b = hm._Builder(seed)
    dense = _mlp(b, "x", (13, 512, 256, dim))
    feats = [b.op("Unsqueeze", [dense, b.const(hm.i64([1]))])]
    inputs = hm.graph_input([batch, 13])
    for t in range(tables):
        inputs.append(helper.make_tensor_value_info(f"idx{t}", TensorProto.INT64, [batch, bag]))
        rows_t = b.op("Gather", [b.weight((rows, dim)), f"idx{t}"])  # [batch, bag, dim]
        feats.append(b.op("ReduceSum", [rows_t, b.const(hm.i64([1]))], keepdims=1))
    z = b.op("Concat", feats, axis=1)  # [batch, 1 + tables, dim]
    pairs = b.op("Flatten", [b.op("MatMul", [z, b.op("Transpose", [z], perm=[0, 2, 1])])])
    top = _mlp(b, b.op("Concat", [pairs, dense], axis=1), ((1 + tables) ** 2 + dim, 512, 256, 1), last_relu=False)
    return b.model("dlrm", inputs, b.op("Sigmoid", [top]))


#: File stem -> builder.
SIZES: dict[str, Callable[[], onnx.ModelProto]] = {
    "dlrm_b64t8": partial(dlrm, 64),
    "dlrm_b256t8h1": partial(dlrm, 256, bag=1),
    "dlrm_b32t16r20k": partial(dlrm, 32, tables=16, rows=20_000),
}


if __name__ == "__main__":
    raise SystemExit(hm.batch_main(__doc__, SIZES))
