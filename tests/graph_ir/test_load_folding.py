"""graph_ir.onnx_import: ops over constants are computed when the model loads, as onnxruntime's
ConstantFolding does: checked against the nodes onnxruntime's own optimized model keeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.onnx_import import from_model_proto

#: Shape-preserving ops onnxruntime's basic level neither fuses nor removes (4 x 4 floats).
_UNARY = ("Relu", "Neg", "Tanh", "Sigmoid", "Transpose")
_BINARY = ("Sub", "Mul", "MatMul")  # no Add: MatMul + Add fuses into Gemm


def _model(nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray], out: str) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [4, 4])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _kept_by_onnxruntime(model: onnx.ModelProto, tmp: Path) -> set[str]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(tmp / "opt.onnx")
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return {n.name for n in onnx.load(str(tmp / "opt.onnx")).graph.node}


@st.composite
def _graphs(draw: st.DrawFn) -> onnx.ModelProto:
    """A chain of ops, each reading the value before it (the first: ``x`` or a weight) and, if
    binary, ``x``, a fresh weight or an earlier value; nothing dead, so nothing else to remove."""
    rng = np.random.default_rng(0)
    values: list[str] = ["x"]
    inits: dict[str, np.ndarray] = {}
    nodes: list[onnx.NodeProto] = []

    def pick() -> str:
        if draw(st.booleans()):
            inits[f"w{len(inits)}"] = rng.standard_normal((4, 4)).astype(np.float32)
            return f"w{len(inits) - 1}"
        return draw(st.sampled_from(values))

    prev = pick()
    for i in range(draw(st.integers(2, 8))):
        op = draw(st.sampled_from(_UNARY + _BINARY))
        ins = [prev] if op in _UNARY else [prev, pick()]
        nodes.append(helper.make_node(op, ins, [f"v{i}"], name=f"n{i}"))
        prev = f"v{i}"
        values.append(prev)
    nodes.append(helper.make_node("Mul", [prev, "x"], ["y"], name="out"))  # the output reads x
    return _model(nodes, inits, "y")


@settings(max_examples=30, deadline=None)
@given(_graphs())
def test_the_ops_left_are_the_ones_onnxruntime_runs(
    tmp_path_factory: pytest.TempPathFactory, model: onnx.ModelProto
) -> None:
    kept = _kept_by_onnxruntime(model, tmp_path_factory.mktemp("ort"))
    graph = from_model_proto(model, source="m.onnx")
    assert set(graph.order) == kept


def test_a_folded_value_is_a_weight_of_the_op_that_reads_it() -> None:
    w = np.ones((4, 4), np.float32)
    nodes = [
        helper.make_node("Transpose", ["w"], ["wt"], name="t"),
        helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm"),
    ]
    graph = from_model_proto(_model(nodes, {"w": w}, "y"), source="m.onnx")
    assert graph.order == ("mm",)
    assert [t.is_weight for t in graph.op("mm").inputs] == [False, True]


def test_a_graph_output_made_of_constants_and_weight_dequantization_stay() -> None:
    nodes = [helper.make_node("Neg", ["w"], ["y"], name="neg")]
    assert from_model_proto(
        _model(nodes, {"w": np.ones((4, 4), np.float32)}, "y"), source="m.onnx"
    ).order == ("neg",)
    q: dict[str, np.ndarray] = {
        "wq": np.ones((4, 4), np.int8),
        "s": np.array(0.1, np.float32),
        "z": np.array(0, np.int8),
    }
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"], name="dq"),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]  # fmt: skip
    assert from_model_proto(_model(nodes, q, "y"), source="m.onnx").order == ("dq", "mm")


def test_an_initializer_a_caller_may_override_is_not_a_constant(tmp_path: Path) -> None:
    """From IR 4 on, an initializer also listed as a graph input takes the value a caller gives:
    onnxruntime folds nothing that reads it."""
    nodes = [
        helper.make_node("Transpose", ["w"], ["wt"], name="t"),
        helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm"),
    ]
    model = _model(nodes, {"w": np.ones((4, 4), np.float32)}, "y")
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 4]))
    assert (
        set(from_model_proto(model, source="m.onnx").order)
        == _kept_by_onnxruntime(model, tmp_path)
        == {"t", "mm"}
    )
