"""The held-out models of op types no calibration model holds
(``benchmarks/heldout_function_ops.py``): each is a valid model hwsim costs op by op (function
ops expanded, no op left to the unknown-op path) and onnxruntime runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from graph_ir.onnx_import import load_onnx
from tests.helpers import load_benchmarks

bench = load_benchmarks("heldout_function_ops")


def test_every_model_is_costed_and_runs(tmp_path: Path) -> None:
    bench.transformer_block(tmp_path, "block", 32, 64, 4, 2, 1)
    bench.others(tmp_path)
    files = sorted(tmp_path.glob("*.onnx"))
    assert len(files) == 7
    for path in files:
        graph = load_onnx(path)
        assert graph.unknown_ops == (), path.name
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feeds = {i.name: np.random.default_rng(0).standard_normal(i.shape).astype(np.float32) for i in sess.get_inputs()}
        sess.run(None, feeds)
    block = load_onnx(tmp_path / "block.onnx")
    assert {"Softmax", "MatMul"} <= {op.op_type for op in block.ops()}  # the attention inside, expanded
