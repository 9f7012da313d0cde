"""The twelfth unseen batch (``benchmarks/heldout_unseen12.py``): message passing by
ScatterElements, a bicubic Resize, a mixture of experts by TopK and GatherElements, and every
pooling kind, small ones of the same graphs, which onnxruntime runs and hwsim reads with the shapes
onnxruntime computes."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from graph_ir.onnx_import import load_onnx
from hwsim.host.measure import random_inputs
from tests.helpers import load_benchmarks

MOD = load_benchmarks("heldout_models", "heldout_unseen12")

CASES = {
    "gnn": (lambda: MOD.gnn(20, 60, 8), "ScatterElements", (1, 16)),
    "srcubic": (lambda: MOD.srcubic(8, 2, width=4), "Resize", (1, 3, 16, 16)),
    "moe": (lambda: MOD.moe(6, 8, 4, 16), "GatherElements", (6, 8)),
    "pools": (lambda: MOD.pools(32, 4), "LpPool", (1, 100)),
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_each_family_runs_and_reads_as_built(tmp_path: Path, family: str) -> None:
    import onnxruntime as ort

    build, op_type, out_shape = CASES[family]
    model = build()
    path = tmp_path / f"{family}.onnx"
    onnx.save(model, str(path))
    graph = load_onnx(path)
    assert op_type in {graph.op(n).op_type for n in graph.order}
    assert graph.outputs[0].shape == out_shape
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.run(None, random_inputs(model, 0))[0].shape == out_shape


def test_the_batch_has_two_sizes_of_each_family() -> None:
    assert sorted({stem.split("_")[0] for stem in MOD.SIZES}) == sorted(CASES)
    assert len(MOD.SIZES) == 2 * len(CASES)
