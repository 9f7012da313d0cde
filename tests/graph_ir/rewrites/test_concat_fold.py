"""concat_fold: proven on random graphs; nested concats and split-then-concat."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import get_pass
from tests.graph_ir.rewrites.proving import proven
from tests.graph_ir.rewrites.strategies import models


@settings(max_examples=30, deadline=None)
@given(model=models(ops=("Concat", "Split", "Relu", "Conv")))
def test_random_graphs(model: onnx.ModelProto) -> None:
    proven("concat_fold", model)


def _model(nodes: list[onnx.NodeProto], y_channels: int, inits: list[onnx.TensorProto] | None = None, extra: tuple[str, ...] = ()) -> onnx.ModelProto:
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, y_channels, 2])]
    outs += [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in extra]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2])], outs, inits or [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_nested_concats_flatten_with_a_negative_axis() -> None:
    m = _model([
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Concat", ["x", "r"], ["c1"], name="inner", axis=-2),
        helper.make_node("Concat", ["r", "c1", "x"], ["y"], name="outer", axis=1),
    ], 16)  # fmt: skip
    result = proven("concat_fold", m)
    assert [s.nodes for s in result.applied] == [("inner", "outer")]
    (concat,) = [n for n in result.model.graph.node if n.op_type == "Concat"]
    assert list(concat.input) == ["r", "x", "r", "x"]


def test_inner_concat_read_elsewhere_is_skipped() -> None:
    m = _model([
        helper.make_node("Concat", ["x", "x"], ["c1"], name="inner", axis=1),
        helper.make_node("Concat", ["c1", "x"], ["y"], name="outer", axis=1),
    ], 12, extra=("c1",))  # fmt: skip
    result = get_pass("concat_fold")(m)
    assert [(s.nodes, s.reason) for s in result.skipped] == [(("inner", "outer"), "inner concat's output is read elsewhere")]


def test_split_outputs_concatenated_back_are_the_input() -> None:
    sizes = numpy_helper.from_array(np.asarray([1, 3], dtype=np.int64), "sizes")
    m = _model([
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Concat", ["a", "b", "r"], ["y"], name="cat", axis=1),
    ], 8, [sizes])  # fmt: skip
    result = proven("concat_fold", m)
    assert [n.op_type for n in result.model.graph.node] == ["Relu", "Concat"]


def test_split_outputs_out_of_order_stay() -> None:
    sizes = numpy_helper.from_array(np.asarray([1, 3], dtype=np.int64), "sizes")
    m = _model([
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1),
        helper.make_node("Concat", ["b", "a"], ["y"], name="cat", axis=1),
    ], 4, [sizes])  # fmt: skip
    assert not get_pass("concat_fold")(m).applied
