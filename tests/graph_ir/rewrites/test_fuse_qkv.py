"""fuse_qkv: MatMuls sharing an input merged into one MatMul + Split, proven numerically."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import PassOptions, get_pass
from graph_ir.rewrites.check import equivalent, prove
from graph_ir.rewrites.edit import is_weightless
from tests.graph_ir.rewrites.strategies import models
from tests.helpers import MODELS

FUSE = get_pass("fuse_qkv")


def _projections(seed: int, k: int, ns: list[int], bias: list[bool], gemm: bool = False) -> onnx.ModelProto:
    """``x [rows, K]`` read by one MatMul (or Gemm) per ``ns`` entry, each with an optional bias Add."""
    rng = np.random.default_rng(seed)
    rows = 3
    nodes, inits, outs = [], [], []
    for i, (n, b) in enumerate(zip(ns, bias, strict=True)):
        inits.append(numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), f"w{i}"))
        inputs = ["x", f"w{i}"]
        if gemm and b:
            inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), f"b{i}"))
            inputs.append(f"b{i}")
        nodes.append(helper.make_node("Gemm" if gemm else "MatMul", inputs, [f"y{i}"], name=f"proj{i}"))
        if b and not gemm:
            inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), f"b{i}"))
            nodes.append(helper.make_node("Add", [f"b{i}", f"y{i}"], [f"z{i}"], name=f"bias{i}"))
            outs.append((f"z{i}", n))
        else:
            outs.append((f"y{i}", n))
    graph = helper.make_graph(
        nodes, "proj", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [rows, n]) for o, n in outs], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _count(model: onnx.ModelProto, op: str) -> int:
    return sum(1 for n in model.graph.node if n.op_type == op)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 12),
    ns=st.lists(st.integers(1, 9), min_size=2, max_size=4),
    all_bias=st.booleans(),
    gemm=st.booleans(),
)
def test_random_projections_merge_exactly(seed: int, k: int, ns: list[int], all_bias: bool, gemm: bool) -> None:
    model = _projections(seed, k, ns, [all_bias] * len(ns), gemm)
    result = FUSE(model)
    assert len(result.applied) == 1 and len(result.applied[0].nodes) == len(ns)
    op = "Gemm" if gemm else "MatMul"
    assert _count(result.model, op) == 1 and _count(result.model, "Split") == 1
    assert _count(result.model, "Add") == (1 if all_bias and not gemm else 0)
    check = equivalent(model, result.model)
    assert check.equal, check.line()


def test_biases_merge_only_when_every_projection_has_one() -> None:
    model = _projections(0, 6, [4, 5, 3], [True, False, True])
    result = FUSE(model)
    assert len(result.applied) == 1
    assert _count(result.model, "MatMul") == 1 and _count(result.model, "Add") == 2  # the Adds stay
    assert equivalent(model, result.model).equal


def test_input_is_not_modified() -> None:
    model = _projections(1, 4, [2, 2], [True, True])
    before = model.SerializeToString()
    FUSE(model)
    assert model.SerializeToString() == before


def test_activation_weight_is_skipped_with_reason() -> None:
    """Q @ K^T style: a MatMul whose second input is an activation cannot join; with only one
    constant projection left, the group is skipped."""
    model = _projections(2, 4, [4], [False])
    g = model.graph
    g.node.append(helper.make_node("MatMul", ["x", "xt"], ["s"], name="scores"))
    g.node.insert(0, helper.make_node("Transpose", ["x"], ["xt"], name="t"))
    g.output.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, [3, 3]))
    result = FUSE(model)
    assert not result.applied
    reasons = {s.nodes: s.reason for s in result.skipped}
    assert reasons[("scores",)] == "weight is not a constant initializer"
    assert "fewer than two" in reasons[("proj0",)]
    assert not any(s.legal for s in result.skipped)


def test_gemm_with_transpose_is_skipped() -> None:
    model = _projections(3, 4, [3, 3], [True, True], gemm=True)
    w = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)  # [N, K]: transB
    model.graph.initializer.append(numpy_helper.from_array(w, "wt"))
    model.graph.node.append(helper.make_node("Gemm", ["x", "wt"], ["yt"], name="projT", transB=1))
    model.graph.output.append(helper.make_tensor_value_info("yt", TensorProto.FLOAT, [3, 5]))
    result = FUSE(model)
    assert [(s.nodes, s.reason) for s in result.skipped] == [(("projT",), "Gemm transposes an input")]
    assert [s.nodes for s in result.applied] == [("proj0", "proj1")]
    assert equivalent(model, result.model).equal


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models(ops=("MatMul", "Add", "Relu", "Concat", "Conv"), max_nodes=8))
def test_random_graphs_stay_equal(model: onnx.ModelProto) -> None:
    result = FUSE(model)
    check = equivalent(model, result.model)
    assert check.equal, check.line()


def test_bert_base_weightless_gets_one_merge_per_layer() -> None:
    model = onnx.load(str(MODELS / "bert_base.onnx"), load_external_data=False)
    result = FUSE(model)
    assert len(result.applied) == 12 and not result.skipped
    assert all(len(s.nodes) == 3 for s in result.applied)
    assert is_weightless(result.model)
    fused = [t for t in result.model.graph.initializer if t.name.endswith("fused.weight")]
    assert len(fused) == 12 and all(list(t.dims) == [768, 2304] for t in fused)
    assert _count(result.model, "MatMul") == 96 - 24


@pytest.mark.parametrize("name", ["distilbert"])
def test_bundled_transformer_is_equal_with_random_weights(name: str) -> None:
    model = onnx.load(str(MODELS / f"{name}.onnx"), load_external_data=False)
    result, check = prove(FUSE, model, PassOptions())
    assert len(result.applied) == 6
    assert check.equal and check.inputs >= 5, check.line()
