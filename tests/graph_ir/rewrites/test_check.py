"""The equivalence check: it passes equal models, catches a difference and names the output."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_ir.materialize import fill_absent_weights
from graph_ir.rewrites.check import CheckError, equivalent
from graph_ir.rewrites.edit import is_weightless, new_initializer
from tests.graph_ir.rewrites.proving import bundled


def _scaled(k: float, weightless: bool = False) -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["y"]), helper.make_node("Relu", ["x"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [4, 4]) for o in ("z", "y")],
    )  # fmt: skip
    if weightless:
        new_initializer(g, "k", None, (4,))
    else:
        g.initializer.append(numpy_helper.from_array(np.full(4, k, np.float32), "k"))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_equal_models() -> None:
    eq = equivalent(_scaled(2.0), _scaled(2.0))
    assert eq.equal and eq.inputs == 5 and eq.max_abs_error == 0.0


def test_a_difference_beyond_the_tolerance_is_caught_and_named() -> None:
    eq = equivalent(_scaled(2.0), _scaled(2.0 * (1 + 1e-3)))
    assert not eq.equal and eq.output == "y"
    assert 1e-4 < eq.max_rel_error < 2e-3
    assert "differs" in eq.line()


def test_a_difference_within_the_tolerance_passes() -> None:
    assert equivalent(_scaled(2.0), _scaled(2.0 * (1 + 1e-6))).equal


def test_weightless_models_are_refused() -> None:
    with pytest.raises(CheckError, match="weightless"):
        equivalent(_scaled(0.0, weightless=True), _scaled(2.0))


def test_materialized_weights_have_realistic_ranges() -> None:
    m = bundled("resnet50_v2")
    assert is_weightless(m)
    filled = fill_absent_weights(m, None, seed=0)
    assert not is_weightless(filled)
    inits = {t.name: numpy_helper.to_array(t) for t in filled.graph.initializer}
    for node in filled.graph.node:
        if node.op_type == "BatchNormalization":
            assert inits[node.input[4]].min() > 0 and inits[node.input[1]].min() > 0
    again = fill_absent_weights(m, None, seed=0)
    assert again.SerializeToString() == filled.SerializeToString()
