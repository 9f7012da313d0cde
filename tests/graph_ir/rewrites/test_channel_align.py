"""channel_align: conv output channels padded to the channel atom, proven numerically."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import PassOptions, get_pass
from graph_ir.rewrites.check import equivalent, prove
from graph_ir.rewrites.edit import attr, is_weightless
from tests.graph_ir.rewrites.proving import bundled
from tests.graph_ir.rewrites.strategies import models

ALIGN = get_pass("channel_align")
F = TensorProto.FLOAT


def _convs(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Conv name -> its weight's dims."""
    inits = {t.name: list(t.dims) for t in model.graph.initializer}
    return {n.name: inits[n.input[1]] for n in model.graph.node if n.op_type == "Conv"}


def _chain(seed: int, c: int, n1: int, n2: int, tail: str) -> onnx.ModelProto:
    """``conv1 (n1) -> SiLU -> [depthwise 3x3 ->] conv2 (n2) -> tail`` (tail: a graph output, a
    Concat with the input, or a Relu)."""
    rng = np.random.default_rng(seed)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["y1"], name="conv1", pads=[1] * 4),
        helper.make_node("Sigmoid", ["y1"], ["s1"], name="sig"),
        helper.make_node("Mul", ["y1", "s1"], ["a1"], name="silu"),
        helper.make_node("Conv", ["a1", "wd"], ["d1"], name="dw", group=n1, pads=[1] * 4),
        helper.make_node("MaxPool", ["d1"], ["p1"], name="pool", kernel_shape=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["y2"], name="conv2"),
    ]
    inits = [w("w1", n1, c, 3, 3), w("b1", n1), w("wd", n1, 1, 3, 3), w("w2", n2, n1, 1, 1)]
    out = "y2"
    if tail == "concat":
        nodes += [helper.make_node("MaxPool", ["x"], ["xp"], kernel_shape=[2, 2]),
                  helper.make_node("Concat", ["y2", "xp"], ["z"], name="cat", axis=1)]  # fmt: skip
        out = "z"
    elif tail == "relu":
        nodes.append(helper.make_node("Relu", ["y2"], ["z"], name="relu"))
        out = "z"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", F, [1, c, 8, 8])],
        [helper.make_tensor_value_info(out, F, None), helper.make_tensor_value_info("a1", F, None)], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), c=st.integers(1, 5), n1=st.integers(2, 7), n2=st.integers(1, 7),
       atom=st.sampled_from([4, 8]), tail=st.sampled_from(["output", "concat", "relu"]))  # fmt: skip
def test_padded_chain_is_exact(seed: int, c: int, n1: int, n2: int, atom: int, tail: str) -> None:
    model = _chain(seed, c, n1, n2, tail)
    result = ALIGN(model, PassOptions(channel_atom=atom))
    convs = _convs(result.model)
    applied = {s.nodes[0] for s in result.applied}
    assert ("conv1" in applied) == (n1 % atom != 0)
    for name in applied:
        assert convs[name][0] % atom == 0
    if "conv1" in applied:  # padded through SiLU, the depthwise conv and the pool, to conv2's inputs
        assert convs["dw"][0] == convs["conv2"][1] == convs["conv1"][0]
    check = equivalent(model, result.model)
    assert check.equal, check.line()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models(ops=("Conv", "Relu", "Add", "Mul", "Concat", "Split", "BatchNormalization"), max_nodes=8),
       atom=st.sampled_from([4, 8]))  # fmt: skip
def test_random_graphs_stay_equal(model: onnx.ModelProto, atom: int) -> None:
    result = ALIGN(model, PassOptions(channel_atom=atom))
    for site in result.applied:
        assert _convs(result.model)[site.nodes[0]][0] % atom == 0
    check = equivalent(model, result.model)
    assert check.equal, check.line()


def test_conv_read_only_by_concat_is_skipped() -> None:
    model = _chain(0, 3, 6, 5, "concat")
    result = ALIGN(model, PassOptions(channel_atom=8))
    reasons = {s.nodes[0]: s.reason for s in result.skipped}
    assert reasons == {"conv2": "no reader takes padded channels; padding would only add a Slice"}
    assert [s.nodes for s in result.applied] == [("conv1",)]


def test_atom_zero_changes_nothing() -> None:
    model = _chain(0, 3, 6, 5, "relu")
    result = ALIGN(model, PassOptions(channel_atom=0))
    assert not result.applied and not result.skipped
    assert [n.op_type for n in result.model.graph.node] == [n.op_type for n in model.graph.node]


def test_grouped_conv_is_skipped() -> None:
    model = _chain(0, 4, 6, 5, "relu")
    g = model.graph
    g.node[0].attribute.append(helper.make_attribute("group", 2))
    g.initializer[0].CopyFrom(numpy_helper.from_array(np.ones((6, 2, 3, 3), np.float32), "w1"))
    result = ALIGN(model, PassOptions(channel_atom=8))
    assert ("conv1",) not in [s.nodes for s in result.applied]
    assert {s.nodes[0]: s.reason for s in result.skipped}["conv1"].startswith("grouped conv (group=2)")


#: bundled model -> convs padded to 32 channels (the NPU's array width on the bundled RK3588).
BUNDLED = {"mobilenetv2": 5, "squeezenet11": 5, "yolov5m": 7, "yolov5n": 5, "yolov8n": 9}


@pytest.mark.parametrize("name", ["mobilenetv2", "squeezenet11"])
def test_bundled_cnn_is_equal_with_random_weights(name: str) -> None:
    result, check = prove(ALIGN, bundled(name), PassOptions(channel_atom=32))
    assert len(result.applied) == BUNDLED[name]
    assert check.equal and check.inputs >= 5, check.line()


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_weightless_sites(name: str) -> None:
    result = ALIGN(bundled(name), PassOptions(channel_atom=32))
    assert len(result.applied) == BUNDLED[name] and is_weightless(result.model)
    convs = _convs(result.model)
    groups = {n.name: attr(n, "group", 1) for n in result.model.graph.node if n.op_type == "Conv"}
    for site in result.applied:
        assert convs[site.nodes[0]][0] % 32 == 0
    assert all(convs[n][0] == groups[n] for n in convs if groups[n] > 1)  # depthwise padded along
