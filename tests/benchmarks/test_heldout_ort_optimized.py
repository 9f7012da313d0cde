"""``benchmarks/heldout_ort_optimized.py``: a model saved by onnxruntime after its optimizations
holds contrib ops, and hwsim imports it with none left to the unknown-op path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph_ir.onnx_import import load_onnx
from tests.helpers import load_benchmarks

bench = load_benchmarks("heldout_ort_optimized")


def _conv_block(path: Path) -> None:
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w2", "b2"], ["g"]), helper.make_node("Relu", ["g"], ["y"])]  # fmt: skip
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), k)
             for k, s in (("w", (8, 3, 3, 3)), ("b", (8,)), ("w2", (8, 4)), ("b2", (4,)))]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_optimized_files_hold_contrib_ops_and_import(tmp_path: Path, monkeypatch: object) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _conv_block(src / "cnn.onnx")
    import sys

    monkeypatch.setattr(sys, "argv", ["heldout_ort_optimized.py", str(src), str(out)])  # type: ignore[attr-defined]
    assert bench.main() == 0
    berts = ["bert_opt_l4s128w256.onnx", "bert_opt_l4s256w384.onnx"]
    assert sorted(p.name for p in out.glob("*.onnx")) == [*berts, "cnn.onnx", "cnn_ortx.onnx"]
    assert bench.contrib_counts(out / "cnn_ortx.onnx") == {"FusedConv": 1, "FusedGemm": 1}
    graph = load_onnx(out / "cnn_ortx.onnx")
    assert graph.unknown_ops == ()
    assert sum(op.macs for op in graph.ops()) == sum(op.macs for op in load_onnx(src / "cnn.onnx").ops())
    bert = load_onnx(out / berts[0])  # every contrib op of an optimized BERT lowered: none costed as a copy
    assert bert.unknown_ops == ()
    assert any(w.startswith("onnxruntime contrib ops lowered") and "Attention x4" in w for w in bert.warnings)
