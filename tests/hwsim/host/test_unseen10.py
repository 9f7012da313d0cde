"""The tenth unseen batch (``benchmarks/heldout_unseen10.py``): DLRM-like recommendation models
that onnxruntime runs and hwsim reads, each sparse feature a Gather and a ReduceSum over its bag."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from graph_ir.onnx_import import load_onnx
from hwsim.host.measure import random_inputs
from tests.helpers import load_benchmarks


def test_each_model_runs_and_reads_as_built(tmp_path: Path) -> None:
    import onnxruntime as ort

    mod = load_benchmarks("heldout_models", "heldout_unseen10")
    assert set(mod.SIZES) == {"dlrm_b64t8", "dlrm_b256t8h1", "dlrm_b32t16r20k"}
    model = mod.dlrm(4, tables=3, rows=500, dim=16, bag=5)  # a small one of the same graph
    path = tmp_path / "dlrm.onnx"
    onnx.save(model, str(path))
    graph = load_onnx(path)
    types = [graph.op(n).op_type for n in graph.order]
    assert types.count("Gather") == types.count("ReduceSum") == 3 and "MatMul" in types
    pairs = next(graph.op(n) for n in graph.order if graph.op(n).op_type == "MatMul")
    assert pairs.outputs[0].shape == (4, 4, 4)  # (1 + tables) features crossed
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    y = sess.run(None, random_inputs(model, 0))[0]
    assert y.shape == (4, 1) and np.all((y > 0) & (y < 1))
