"""Softmaxes behind a constant mask far below ln(FLT_MIN): found from the model's constants and
priced per masked element (:mod:`hwsim.host.ort_denormals`, :func:`cost_models.cpu.denormal_softmax_ns`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import TensorProto, helper, numpy_helper

from chips.schema import chip_from_dict
from cost_models.cpu import SOFTMAX_DENORMAL_ATTR
from graph_ir.onnx_import import load_onnx
from hwsim.host.ort_denormals import DENORMAL_BELOW, denormal_softmaxes, masked_elements
from hwsim.host.validate import cpu_chip, predict_nodes
from tests.helpers import host_chip

SEQ, HEADS = 8, 4


def masked_net(path: Path, value: float, how: str = "add", scale_after: float | None = None) -> onnx.ModelProto:
    """scores (1, HEADS, SEQ, SEQ) / 8 -> + causal mask of ``value`` (``how``: 'add' a constant, 'input' a graph
    input, 'where' a constant condition and fill) -> [* scale_after] -> Softmax."""
    mask = np.triu(np.full((SEQ, SEQ), value, np.float32), 1)
    inits = [numpy_helper.from_array(np.array(8.0, np.float32), "d")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, HEADS, SEQ, SEQ])]
    nodes = [helper.make_node("Div", ["x", "d"], ["s"], name="div")]
    if how == "where":
        inits += [numpy_helper.from_array(np.tril(np.ones((SEQ, SEQ), bool)), "keep"),
                  numpy_helper.from_array(np.array(value, np.float32), "fill")]  # fmt: skip
        nodes.append(helper.make_node("Where", ["keep", "s", "fill"], ["m"], name="mask"))
    else:
        if how == "input":
            inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [SEQ, SEQ]))
        else:
            inits.append(numpy_helper.from_array(mask, "mask"))
        nodes.append(helper.make_node("Add", ["s", "mask"], ["m"], name="mask"))
    last = "m"
    if scale_after is not None:
        inits.append(numpy_helper.from_array(np.array(scale_after, np.float32), "k"))
        nodes.append(helper.make_node("Mul", ["m", "k"], ["mk"], name="scale"))
        last = "mk"
    nodes.append(helper.make_node("Softmax", [last], ["y"], name="softmax", axis=-1))
    g = helper.make_graph(nodes, "masked", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, HEADS, SEQ, SEQ])],
                          inits)  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)
    return model


CAUSAL = HEADS * SEQ * (SEQ - 1) // 2


class TestDenormalSoftmaxes:
    @pytest.mark.parametrize(
        ("value", "how", "scale_after", "count"),
        [
            (-1e4, "add", None, CAUSAL),  # a decoder's causal mask
            (float("-inf"), "add", None, CAUSAL),
            (-30.0, "add", None, 0),  # exp(-30) is a normal float: no slower (measured 32.6 us as with 0)
            (-1e4, "input", None, 0),  # a mask fed at run time is data: not priced
            (-1e4, "where", None, CAUSAL),
            (-1e4, "add", 0.001, 0),  # scaled after the Add to -10: normal again
            (-1e3, "add", 0.5, CAUSAL),
        ],
    )
    def test_counts_the_masked_elements(self, tmp_path: Path, value: float, how: str, scale_after: float | None, count: int) -> None:
        model = masked_net(tmp_path / "m.onnx", value, how, scale_after)
        marks = denormal_softmaxes(load_onnx(tmp_path / "m.onnx"), model)
        assert (marks["softmax"].attrs[SOFTMAX_DENORMAL_ATTR] if "softmax" in marks else 0) == count

    def test_priced_at_the_units_figure(self, tmp_path: Path) -> None:
        model = masked_net(tmp_path / "m.onnx", -1e4)
        graph = load_onnx(tmp_path / "m.onnx")
        marks = denormal_softmaxes(graph, model)
        with_figure = cpu_chip(chip_from_dict(host_chip(softmax_denormal_ns=4.5)), 1)
        without = cpu_chip(chip_from_dict(host_chip()), 1)
        marked = predict_nodes(graph, with_figure, 1, set(), layout_kernels=marks)["softmax"]
        plain = predict_nodes(graph, with_figure, 1, set())["softmax"]
        assert marked.predicted_ns - plain.predicted_ns == pytest.approx(CAUSAL * 4.5)
        assert marked.stall_ns == pytest.approx(CAUSAL * 4.5)  # outside the efficiency: calibration fits the rest
        # a chip without the figure (every bundled one) predicts as before
        assert predict_nodes(graph, without, 1, set(), layout_kernels=marks)["softmax"].predicted_ns == pytest.approx(
            predict_nodes(graph, without, 1, set())["softmax"].predicted_ns)


@given(mask=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6),
                       elements=st.sampled_from([0.0, -1.0, -80.0, -90.0, -1e4, float("-inf")])),
       lead=st.integers(1, 3))  # fmt: skip
def test_masked_elements_is_the_broadcast_count(mask: np.ndarray, lead: int) -> None:
    shape = (lead, *mask.shape)
    assert masked_elements(mask, shape) == int(np.count_nonzero(np.broadcast_to(mask, shape) < DENORMAL_BELOW))
    if max(mask.shape) > 1:  # a mask that does not broadcast to the scores is no mask of theirs
        assert masked_elements(mask, (lead, *(s + 1 if s > 1 else s for s in mask.shape))) == 0
