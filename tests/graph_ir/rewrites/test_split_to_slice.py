"""split_to_slice: proven on random graphs; unread outputs get no Slice; unknown sizes skip."""

from __future__ import annotations

import onnx
from hypothesis import given, settings
from onnx import TensorProto, helper

from graph_ir.rewrites import get_pass
from tests.graph_ir.rewrites.proving import proven
from tests.graph_ir.rewrites.strategies import models


@settings(max_examples=30, deadline=None)
@given(model=models(ops=("Split", "Concat", "Relu", "Conv", "Add")))
def test_random_graphs(model: onnx.ModelProto) -> None:
    result = proven("split_to_slice", model)
    assert not any(n.op_type == "Split" for n in result.model.graph.node)


def _model(split: onnx.NodeProto, outputs: dict[str, list[int | None]], x: list[int | str]) -> onnx.ModelProto:
    g = helper.make_graph(
        [split], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, s) for o, s in outputs.items()],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_even_split_with_an_unread_part() -> None:
    m = _model(helper.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=-1), {"a": [2, 3], "c": [2, 3]}, [2, 9])
    result = proven("split_to_slice", m)
    assert [n.op_type for n in result.model.graph.node] == ["Slice", "Slice"]


def test_even_split_of_a_dynamic_axis_is_skipped() -> None:
    m = _model(helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1), {"a": [2, None], "b": [2, None]}, [2, "n"])
    result = get_pass("split_to_slice")(m)
    assert [(s.nodes, s.reason) for s in result.skipped] == [(("split",), "split axis has no static size")]
