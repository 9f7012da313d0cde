"""dw_pw: depthwise + 1x1 merged into one conv, and a conv whose weights factor split into
depthwise + pointwise; both proven numerically."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import get_pass
from graph_ir.rewrites.check import equivalent
from graph_ir.rewrites.edit import attr, is_weightless, new_initializer
from tests.graph_ir.rewrites.proving import bundled

DW_PW = get_pass("dw_pw")


@st.composite
def dw_then_pw(draw: st.DrawFn) -> onnx.ModelProto:
    """A depthwise conv (random channels, multiplier, kernel, stride, pads, dilation, bias) read
    only by a 1x1 conv (random outputs, bias); seeded weights."""
    c, m, n = draw(st.integers(1, 5)), draw(st.integers(1, 2)), draw(st.integers(1, 6))
    k, stride, dil = draw(st.sampled_from([3, 5])), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad = draw(st.integers(0, k // 2 * dil))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inits = [
        numpy_helper.from_array(rng.standard_normal((c * m, 1, k, k)).astype(np.float32), "dw.w"),
        numpy_helper.from_array(rng.standard_normal((n, c * m, 1, 1)).astype(np.float32), "pw.w"),
    ]
    dw_in, pw_in = ["x", "dw.w"], ["h", "pw.w"]
    for inputs, size, name in ((dw_in, c * m, "dw.b"), (pw_in, n, "pw.b")):
        if draw(st.booleans()):
            inits.append(numpy_helper.from_array(rng.standard_normal(size).astype(np.float32), name))
            inputs.append(name)
    nodes = [
        helper.make_node("Conv", dw_in, ["h"], name="dw", group=c, kernel_shape=[k, k],
                         strides=[stride] * 2, pads=[pad] * 4, dilations=[dil] * 2),
        helper.make_node("Conv", pw_in, ["y"], name="pw"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "dwpw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 11, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=25, deadline=None)
@given(model=dw_then_pw())
def test_depthwise_then_pointwise_merges_exactly(model: onnx.ModelProto) -> None:
    result = DW_PW(model)
    assert [s.nodes for s in result.applied] == [("dw", "pw")]
    (conv,) = result.model.graph.node
    assert conv.op_type == "Conv" and attr(conv, "group", 1) == 1
    check = equivalent(model, result.model)
    assert check.equal, check.line()


@settings(max_examples=25, deadline=None)
@given(model=dw_then_pw())
def test_merged_conv_splits_back_exactly(model: onnx.ModelProto) -> None:
    """With multiplier 1 the merged weights factor by construction and split back into a
    depthwise + 1x1 pair; with multiplier 2 each input channel mixes two filters (rank 2), so the
    split is skipped (and a one-channel conv is depthwise already). Either way the outputs stay
    equal."""
    channels = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    multiplier = model.graph.initializer[0].dims[0] // channels
    split = DW_PW(DW_PW(model).model)
    if multiplier == 1 and channels > 1:
        assert len(split.applied) == 1 and [n.op_type for n in split.model.graph.node] == ["Conv", "Conv"]
        assert attr(split.model.graph.node[0], "group") == channels
    check = equivalent(model, split.model)
    assert check.equal, check.line()


def test_random_regular_conv_is_skipped_with_reason() -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1] * 4)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    result = DW_PW(model)
    assert not result.applied
    assert [s.reason for s in result.skipped] == ["weights do not factor as a depthwise filter per input channel times a 1x1"]


def test_weightless_merge_has_the_merged_shape_and_split_is_skipped() -> None:
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "dw.w"], ["h"], name="dw", group=4, pads=[1] * 4),
         helper.make_node("Conv", ["h", "pw.w"], ["y"], name="pw"),
         helper.make_node("Conv", ["y", "k.w"], ["z"], name="regular", pads=[1] * 4)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    )  # fmt: skip
    for name, shape in (("dw.w", [4, 1, 3, 3]), ("pw.w", [6, 4, 1, 1]), ("k.w", [2, 6, 3, 3])):
        new_initializer(graph, name, None, shape)
    result = DW_PW(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert [s.nodes for s in result.applied] == [("dw", "pw")]
    assert [s.reason for s in result.skipped] == ["weightless: no values to check that the weights factor"]
    assert is_weightless(result.model)
    merged = next(n for n in result.model.graph.node if n.output[0] == "y")
    weight = next(t for t in result.model.graph.initializer if t.name == merged.input[1])
    assert list(weight.dims) == [6, 4, 3, 3]


def test_mobilenet_depthwise_is_followed_by_clip() -> None:
    """MobileNet's depthwise convs feed a ReLU6 (Clip), not the 1x1 directly: no exact merge."""
    result = DW_PW(bundled("mobilenetv1"))
    assert not result.applied
    reasons = [s.reason for s in result.skipped if len(s.nodes) == 1 and "depthwise" in s.reason]
    assert reasons == ["depthwise output is read by Clip, not only by a 1x1 Conv"] * 13
