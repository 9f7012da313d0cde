"""const_fold: proven on random graphs made constant; what it refuses."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import get_pass
from graph_ir.rewrites.edit import new_initializer
from tests.graph_ir.rewrites.proving import proven
from tests.graph_ir.rewrites.strategies import models


@st.composite
def constant_heads(draw: st.DrawFn) -> onnx.ModelProto:
    """A random graph whose input ``x`` became a constant, each output then added to a new
    graph input: everything before the Adds folds."""
    m: onnx.ModelProto = draw(models(ops=("Conv", "BatchNormalization", "Concat", "Split", "MatMul", "Mul", "Relu", "Reshape")))
    x = m.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    value = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).uniform(-1, 1, shape).astype(np.float32)
    m.graph.initializer.append(numpy_helper.from_array(value, "x"))
    del m.graph.input[:]
    outs = list(m.graph.output)
    del m.graph.output[:]
    for k, o in enumerate(outs):
        m.graph.input.append(helper.make_tensor_value_info(f"z{k}", TensorProto.FLOAT, None))
        m.graph.input[-1].type.CopyFrom(o.type)
        m.graph.node.append(helper.make_node("Add", [o.name, f"z{k}"], [f"y{k}"], name=f"head{k}"))
        m.graph.output.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
        m.graph.output[-1].type.CopyFrom(o.type)
    return m


@settings(max_examples=20, deadline=None)
@given(model=constant_heads())
def test_random_constant_graphs_fold_entirely(model: onnx.ModelProto) -> None:
    result = proven("const_fold", model)
    assert {n.op_type for n in result.model.graph.node} == {"Add"}
    assert not result.skipped


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], inits,
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_constant_node_chain_folds() -> None:
    c = helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.arange(3, dtype=np.float32)))
    m = _model([c, helper.make_node("Exp", ["c"], ["e"], name="exp"), helper.make_node("Add", ["x", "e"], ["y"], name="add")], [])
    result = proven("const_fold", m)
    assert [s.nodes for s in result.applied] == [("c",), ("exp",)]
    assert [n.op_type for n in result.model.graph.node] == ["Add"]


def test_weightless_input_is_skipped_with_its_reason() -> None:
    m = _model([helper.make_node("Exp", ["w"], ["e"], name="exp"), helper.make_node("Add", ["x", "e"], ["y"], name="add")], [])
    new_initializer(m.graph, "w", None, (3,))
    result = get_pass("const_fold")(m)
    assert [(s.nodes, s.reason) for s in result.skipped] == [(("exp",), "an input has no data (weightless model)")]


def test_random_op_is_not_folded() -> None:
    r = helper.make_node("RandomUniform", [], ["r"], name="rand", shape=[3])
    m = _model([r, helper.make_node("Add", ["x", "r"], ["y"], name="add")], [])
    result = get_pass("const_fold")(m)
    assert [(s.nodes, s.reason) for s in result.skipped] == [(("rand",), "RandomUniform is not deterministic")]
