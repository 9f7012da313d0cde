"""group_split: a grouped Conv into Split + one Conv per group + Concat, proven numerically."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import get_pass
from graph_ir.rewrites.check import equivalent
from graph_ir.rewrites.edit import attr, is_weightless, new_initializer
from tests.graph_ir.rewrites.proving import bundled
from tests.graph_ir.rewrites.strategies import models

SPLIT = get_pass("group_split")


@st.composite
def grouped_convs(draw: st.DrawFn) -> onnx.ModelProto:
    """One Conv with random groups (2-4), input channels per group (2-3: not depthwise), output
    channels per group, kernel, stride, pads, dilation and bias; seeded weights."""
    g = draw(st.integers(2, 4))
    cg, ng = draw(st.integers(2, 3)), draw(st.integers(1, 3))
    k, stride, dil = draw(st.sampled_from([1, 3])), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad, size = draw(st.integers(0, k // 2 + 1)), draw(st.integers(5, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inits = [numpy_helper.from_array(rng.standard_normal((g * ng, cg, k, k)).astype(np.float32), "w")]
    inputs = ["x", "w"]
    if draw(st.booleans()):
        inits.append(numpy_helper.from_array(rng.standard_normal(g * ng).astype(np.float32), "b"))
        inputs.append("b")
    conv = helper.make_node(
        "Conv", inputs, ["y"], name="conv", group=g, kernel_shape=[k, k], strides=[stride] * 2,
        pads=[pad] * 4, dilations=[dil] * 2,
    )  # fmt: skip
    graph = helper.make_graph(
        [conv, helper.make_node("Relu", ["y"], ["z"], name="relu")], "grouped",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, g * cg, size, size])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


@settings(max_examples=25, deadline=None)
@given(model=grouped_convs())
def test_random_grouped_conv_splits_exactly(model: onnx.ModelProto) -> None:
    groups = int(attr(model.graph.node[0], "group"))
    result = SPLIT(model)
    assert [s.nodes for s in result.applied] == [("conv",)]
    assert ops(result.model) == ["Split", *["Conv"] * groups, "Concat", "Relu"]
    assert all(a.i == 1 for n in result.model.graph.node for a in n.attribute if a.name == "group")
    check = equivalent(model, result.model)
    assert check.equal, check.line()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models(ops=("Conv", "Relu", "Concat", "Add"), max_nodes=6))
def test_random_graphs_stay_equal(model: onnx.ModelProto) -> None:
    result = SPLIT(model)
    grouped = sum(1 for n in model.graph.node for a in n.attribute if a.name == "group" and a.i > 1)
    assert len(result.applied) + len(result.skipped) == grouped
    check = equivalent(model, result.model)
    assert check.equal, check.line()


def test_depthwise_is_skipped_with_reason() -> None:
    """Depthwise convs (MobileNet) are grouped but left alone, each with its reason."""
    result = SPLIT(bundled("mobilenetv1"))
    assert not result.applied and len(result.skipped) == 13
    assert all(s.reason.startswith("depthwise") and not s.legal for s in result.skipped)


def test_weightless_split_keeps_shapes_and_stays_weightless() -> None:
    model = _weightless_grouped()
    result = SPLIT(model)
    assert is_weightless(result.model)
    weights = {t.name: list(t.dims) for t in result.model.graph.initializer if t.name.endswith(".weight")}
    assert sorted(weights.values()) == [[4, 3, 3, 3]] * 2


def _weightless_grouped() -> onnx.ModelProto:
    """A weightless [8, 3, 3, 3] conv with group 2 (absent external data)."""
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=2, pads=[1] * 4)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    new_initializer(graph, "w", None, [8, 3, 3, 3])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
