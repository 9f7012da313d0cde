"""group_merge: Split -> parallel Convs -> Concat into one grouped Conv, proven numerically, and
the round trip with group_split."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import get_pass
from graph_ir.rewrites.check import equivalent
from graph_ir.rewrites.edit import attr
from tests.graph_ir.rewrites.proving import bundled
from tests.graph_ir.rewrites.test_group_split import grouped_convs, ops

MERGE = get_pass("group_merge")
SPLIT = get_pass("group_split")


def _parallel(seed: int = 0, parts: int = 3, sizes: tuple[int, ...] = (), extra: bool = False) -> onnx.ModelProto:
    """``x [1, 2*parts, 6, 6]`` split in ``parts`` along channels, a 3x3 conv on each, concatenated
    (after an extra input when ``extra``)."""
    rng = np.random.default_rng(seed)
    sizes = sizes or (2,) * parts
    parts = len(sizes)
    names = [f"p{i}" for i in range(parts)]
    inits = [numpy_helper.from_array(np.asarray(sizes, np.int64), "sizes")]
    nodes = [helper.make_node("Split", ["x", "sizes"], names, name="split", axis=1)]
    for i, c in enumerate(sizes):
        inits.append(numpy_helper.from_array(rng.standard_normal((3, c, 3, 3)).astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), f"b{i}"))
        nodes.append(helper.make_node("Conv", [names[i], f"w{i}", f"b{i}"], [f"y{i}"], name=f"conv{i}", pads=[1] * 4))
    cat_in = (["x"] if extra else []) + [f"y{i}" for i in range(parts)]
    nodes.append(helper.make_node("Concat", cat_in, ["z"], name="concat", axis=1))
    graph = helper.make_graph(
        nodes, "parallel", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, sum(sizes), 6, 6])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), parts=st.integers(2, 4), extra=st.booleans())
def test_parallel_convs_merge_exactly(seed: int, parts: int, extra: bool) -> None:
    model = _parallel(seed, parts, extra=extra)
    result = MERGE(model)
    assert len(result.applied) == 1
    convs = [n for n in result.model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 1 and attr(convs[0], "group") == parts
    assert ops(result.model) == (["Conv", "Concat"] if extra else ["Conv"])
    check = equivalent(model, result.model)
    assert check.equal, check.line()


@settings(max_examples=20, deadline=None)
@given(model=grouped_convs())
def test_split_then_merge_round_trips(model: onnx.ModelProto) -> None:
    split = SPLIT(model).model
    merged = MERGE(split)
    assert len(merged.applied) == 1
    assert ops(merged.model) == ["Conv", "Relu"]
    assert attr(merged.model.graph.node[0], "group") == attr(model.graph.node[0], "group")
    check = equivalent(model, merged.model)
    assert check.equal, check.line()


def test_unequal_parts_are_skipped() -> None:
    result = MERGE(_parallel(sizes=(2, 3)))
    assert not result.applied
    assert [s.reason for s in result.skipped] == ["convs have different weight shapes [(3, 2, 3, 3), (3, 3, 3, 3)]"]


def test_differing_dilations_are_skipped() -> None:
    model = _parallel()
    conv = model.graph.node[2]
    del conv.attribute[:]
    conv.attribute.extend([helper.make_attribute("pads", [2] * 4), helper.make_attribute("dilations", [2, 2])])
    result = MERGE(model)
    assert [s.reason for s in result.skipped] == ["convs differ in attributes (kernel, strides, pads, dilations or groups)"]


def test_concat_out_of_slice_order_is_skipped() -> None:
    model = _parallel()
    concat = model.graph.node[-1]
    concat.input[0], concat.input[1] = concat.input[1], concat.input[0]
    result = MERGE(model)
    assert [s.reason for s in result.skipped] == ["conv outputs are not side by side in slice order in the Concat"]
    assert result.model.graph.node[0].op_type == "Split"


def test_yolov8n_splits_are_skipped_with_reasons() -> None:
    """YOLOv8's C2f splits feed a bottleneck chain and the Concat directly: not parallel convs."""
    result = MERGE(bundled("yolov8n"))
    assert not result.applied and len(result.skipped) == 8
    assert all("is not read by exactly one Conv" in s.reason for s in result.skipped)
