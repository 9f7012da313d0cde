"""graph_ir.prune: structured channel pruning keeps shapes consistent and cuts MACs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.onnx_import import from_model_proto, load_onnx
from graph_ir.prune import PruneError, prune_channels


def _chain(seed: int, residual: bool = False) -> onnx.ModelProto:
    """conv(3->8) BN relu, depthwise conv, SiLU (x * sigmoid x), conv(8->6), GAP, Flatten, Gemm(6->5)."""
    rng = np.random.default_rng(seed)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    inits = [init("w1", 8, 3, 3, 3), init("b1", 8), init("s", 8), init("bb", 8), init("mu", 8),
             numpy_helper.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 1, "var"),
             init("wd", 8, 1, 3, 3), init("w2", 6, 8, 1, 1), init("wg", 5, 6), init("bg", 5)]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "mu", "var"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", "wd"], ["d"], name="dw", group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["d"], ["sg"], name="sig"),
        helper.make_node("Mul", ["d", "sg"], ["silu"], name="silu"),
        helper.make_node("Conv", ["silu", "w2"], ["c2"], name="c2"),
        helper.make_node("GlobalAveragePool", ["c2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flat"),
        helper.make_node("Gemm", ["flat", "wg", "bg"], ["y"], name="fc", transB=1),
    ]
    if residual:  # c2's channels meet the input branch of another conv: c2 cannot be pruned
        inits.append(init("w3", 6, 3, 1, 1))
        nodes.insert(7, helper.make_node("Conv", ["x", "w3"], ["c3"], name="c3"))
        nodes.insert(8, helper.make_node("Add", ["c2", "c3"], ["sum"], name="add"))
        nodes[9].input[0] = "sum"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def _macs(model: onnx.ModelProto) -> dict[str, int]:
    return {op.name: op.macs for op in from_model_proto(model).ops()}


class TestPruneChannels:
    @settings(max_examples=8, deadline=None)
    @given(seed=st.integers(0, 2**16), fraction=st.sampled_from([0.125, 0.25, 0.5, 0.75]))
    def test_pruned_model_runs_in_onnxruntime_with_consistent_shapes(self, seed: int, fraction: float) -> None:
        model = _chain(seed)
        result = prune_channels(model, fraction)
        onnx.checker.check_model(result.model, full_check=True)
        x = np.ones((1, 3, 8, 8), np.float32)
        assert _run(result.model, x).shape == _run(model, x).shape == (1, 5)
        assert set(result.pruned) == {"c1", "c2"} if int(6 * fraction) else {"c1"}
        removed = int(8 * fraction) + int(6 * fraction)
        assert result.channels_removed == removed

    def test_macs_drop_as_the_kept_channels_say(self) -> None:
        model = _chain(0)
        before, after = _macs(model), _macs(prune_channels(model, 0.5).model)
        assert after["c1"] * 2 == before["c1"]  # 8 -> 4 output channels
        assert after["dw"] * 2 == before["dw"]  # depthwise follows c1's channels
        assert after["c2"] * 4 == before["c2"]  # 8 -> 4 input channels, 6 -> 3 output channels
        assert after["fc"] * 2 == before["fc"]  # 6 -> 3 input features

    def test_l1_norm_picks_the_channels_kept(self) -> None:
        model = _chain(1)
        w1 = next(t for t in model.graph.initializer if t.name == "w1")
        arr = numpy_helper.to_array(w1).copy()
        arr[[1, 4, 6, 7]] *= 1e-3  # the four weakest filters
        w1.CopyFrom(numpy_helper.from_array(arr, "w1"))
        pruned = prune_channels(model, 0.5).model
        kept = numpy_helper.to_array(next(t for t in pruned.graph.initializer if t.name == "w1"))
        np.testing.assert_array_equal(kept, arr[[0, 2, 3, 5]])
        bias = numpy_helper.to_array(next(t for t in pruned.graph.initializer if t.name == "b1"))
        np.testing.assert_array_equal(bias, numpy_helper.to_array(model.graph.initializer[1])[[0, 2, 3, 5]])

    def test_a_residual_add_keeps_its_producers_whole(self) -> None:
        result = prune_channels(_chain(2, residual=True), 0.5)
        assert "c1" in result.pruned
        kept = dict(result.kept)
        assert set(kept) == {"c2", "c3", "fc"}  # fc: its channels are the graph output
        assert "add" in kept["c2"]
        x = np.ones((1, 3, 8, 8), np.float32)
        assert _run(result.model, x).shape == (1, 5)

    def test_zero_keeps_the_model(self) -> None:
        model = _chain(3)
        result = prune_channels(model, 0.0)
        assert result.pruned == () and result.channels_removed == 0
        assert _macs(result.model) == _macs(model)

    @pytest.mark.parametrize("fraction", [-0.1, 1.0, float("nan")])
    def test_a_fraction_outside_0_1_is_refused(self, fraction: float) -> None:
        with pytest.raises(PruneError, match="prune fraction"):
            prune_channels(_chain(0), fraction)


def test_weightless_model_is_pruned_by_index_with_consistent_shapes() -> None:
    path = "examples/models/resnet18.onnx"
    model = onnx.load(path, load_external_data=False)
    result = prune_channels(model, 0.5)
    graph = from_model_proto(result.model)  # strict shape inference passes
    assert len(result.pruned) == 8  # conv1 of each basic block; the residual convs are kept
    assert 0.5 < graph.total_macs / load_onnx(path).total_macs < 0.6
    w = next(t for t in result.model.graph.initializer if t.name == "layer1.layer1.0.conv1.weight")
    assert list(w.dims) == [32, 64, 3, 3]
