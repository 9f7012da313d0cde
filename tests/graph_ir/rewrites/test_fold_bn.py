"""fold_bn: proven on random graphs and on Conv / ConvTranspose / Gemm cases; legality."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import get_pass
from tests.graph_ir.rewrites.proving import proven
from tests.graph_ir.rewrites.strategies import models


def _bn_params(rng: np.random.Generator, c: int, prefix: str) -> list[onnx.TensorProto]:
    vals = [rng.uniform(0.5, 1.5, c), rng.standard_normal(c) * 0.1, rng.standard_normal(c) * 0.1, rng.uniform(0.5, 1.5, c)]
    return [numpy_helper.from_array(v.astype(np.float32), f"{prefix}{k}") for k, v in enumerate(vals)]


def _model(nodes: list[onnx.NodeProto], x: list[int], y: list[int], inits: list[onnx.TensorProto], extra_out: tuple[str, ...] = ()) -> onnx.ModelProto:
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)]
    outs += [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in extra_out]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@settings(max_examples=25, deadline=None)
@given(model=models(ops=("Conv", "BatchNormalization", "Relu", "Add", "Concat")))
def test_random_graphs(model: onnx.ModelProto) -> None:
    proven("fold_bn", model)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), group=st.sampled_from([1, 2]), bias=st.booleans())
def test_conv_transpose(seed: int, group: int, bias: bool) -> None:
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array((rng.standard_normal((4, 6 // group, 3, 3)) / 6).astype(np.float32), "w")
    b = [numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")] if bias else []
    conv = helper.make_node("ConvTranspose", ["x", "w", *(["b"] if bias else [])], ["t"], name="ct", group=group, strides=[2, 2])
    bn = helper.make_node("BatchNormalization", ["t", "p0", "p1", "p2", "p3"], ["y"], name="bn")
    m = _model([conv, bn], [1, 4, 5, 5], [1, 6, 11, 11], [w, *b, *_bn_params(rng, 6, "p")])
    assert len(proven("fold_bn", m).applied) == 1


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), trans_b=st.booleans(), beta=st.sampled_from([1.0, 0.5]), bias=st.booleans())
def test_gemm(seed: int, trans_b: bool, beta: float, bias: bool) -> None:
    rng = np.random.default_rng(seed)
    shape = (5, 8) if trans_b else (8, 5)
    w = numpy_helper.from_array((rng.standard_normal(shape) / 3).astype(np.float32), "w")
    c = [numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "c")] if bias else []
    gemm = helper.make_node("Gemm", ["x", "w", *(["c"] if bias else [])], ["t"], name="gemm", transB=int(trans_b), beta=beta, alpha=0.7)
    bn = helper.make_node("BatchNormalization", ["t", "p0", "p1", "p2", "p3"], ["y"], name="bn")
    m = _model([gemm, bn], [3, 8], [3, 5], [w, *c, *_bn_params(rng, 5, "p")])
    result = proven("fold_bn", m)
    assert [n.op_type for n in result.model.graph.node] == ["Gemm"]


def test_bn_whose_input_has_two_readers_is_skipped() -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((4, 3, 1, 1)) / 2).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["t"], name="conv")
    bn = helper.make_node("BatchNormalization", ["t", "p0", "p1", "p2", "p3"], ["u"], name="bn")
    add = helper.make_node("Add", ["u", "t"], ["y"], name="add")
    m = _model([conv, bn, add], [1, 3, 4, 4], [1, 4, 4, 4], [w, *_bn_params(rng, 4, "p")])
    result = get_pass("fold_bn")(m)
    assert not result.applied
    assert [(s.nodes, s.reason) for s in result.skipped] == [
        (("conv", "bn"), "Conv output is read by more than the BatchNormalization")
    ]
    assert [n.op_type for n in result.model.graph.node] == ["Conv", "BatchNormalization", "Add"]


def test_bn_input_that_is_a_graph_output_is_skipped() -> None:
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["t"], name="conv")
    bn = helper.make_node("BatchNormalization", ["t", "p0", "p1", "p2", "p3"], ["y"], name="bn")
    m = _model([conv, bn], [1, 3, 4, 4], [1, 4, 4, 4], [w, *_bn_params(rng, 4, "p")], extra_out=("t",))
    result = get_pass("fold_bn")(m)
    assert not result.applied and result.skipped[0].reason.startswith("Conv output is read by more")


def test_bn_with_a_parameter_fed_as_input_is_skipped() -> None:
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["t"], name="conv")
    bn = helper.make_node("BatchNormalization", ["t", "p0", "p1", "p2", "p3"], ["y"], name="bn")
    m = _model([conv, bn], [1, 3, 4, 4], [1, 4, 4, 4], [w, *_bn_params(rng, 4, "p")])
    m.graph.input.append(helper.make_tensor_value_info("p3", TensorProto.FLOAT, [4]))
    result = get_pass("fold_bn")(m)
    assert result.skipped[0].reason == "'p3' is not a constant initializer"


def test_input_model_is_not_modified() -> None:
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["t"], name="conv")
    bn = helper.make_node("BatchNormalization", ["t", "p0", "p1", "p2", "p3"], ["y"], name="bn")
    m = _model([conv, bn], [1, 3, 4, 4], [1, 4, 4, 4], [w, *_bn_params(rng, 4, "p")])
    before = m.SerializeToString()
    assert get_pass("fold_bn")(m).applied
    assert m.SerializeToString() == before
