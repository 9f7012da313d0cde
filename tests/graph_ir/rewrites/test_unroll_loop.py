"""unroll_loop: static Loops unrolled and constant Ifs inlined, proven numerically."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.rewrites import PassOptions, get_pass
from graph_ir.rewrites.check import equivalent

UNROLL = get_pass("unroll_loop")
F = TensorProto.FLOAT


def _loop_model(trips: int, carried: int, scans: int, seed: int = 0, cond: bool | None = True) -> onnx.ModelProto:
    """``x [2, 3]``; a Loop of ``trips`` whose body updates ``carried`` values with
    ``v = v * w + x + i`` (``w`` a body initializer, ``x`` read from the outer scope, ``i`` the
    iteration number) and emits ``scans`` scan outputs (``v * k``)."""
    rng = np.random.default_rng(seed)
    body_nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], to=F),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ]
    body_inits = [numpy_helper.from_array(rng.uniform(0.5, 1.0, (2, 3)).astype(np.float32), "w")]
    outs_v, outs_s = [], []
    for k in range(carried):
        body_nodes += [
            helper.make_node("Mul", [f"v{k}", "w"], [f"m{k}"]),
            helper.make_node("Add", [f"m{k}", "x"], [f"a{k}"]),
            helper.make_node("Add", [f"a{k}", "i_f"], [f"v{k}_out"]),
        ]
        outs_v.append(helper.make_tensor_value_info(f"v{k}_out", F, [2, 3]))
    for j in range(scans):
        body_inits.append(numpy_helper.from_array(np.array(j + 2, np.float32), f"k{j}"))
        body_nodes.append(helper.make_node("Mul", [f"v{j % carried}_out", f"k{j}"], [f"s{j}"]))
        outs_s.append(helper.make_tensor_value_info(f"s{j}", F, [2, 3]))
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         *[helper.make_tensor_value_info(f"v{k}", F, [2, 3]) for k in range(carried)]],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), *outs_v, *outs_s], body_inits,
    )  # fmt: skip
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M")]
    if cond is not None:
        inits.append(numpy_helper.from_array(np.array(cond), "cond"))
    loop_out = [f"final{k}" for k in range(carried)] + [f"scan{j}" for j in range(scans)]
    loop = helper.make_node("Loop", ["M", "cond" if cond is not None else "", *["x"] * carried], loop_out, name="loop", body=body)
    graph = helper.make_graph(
        [loop], "looped", [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info(o, F, None) for o in loop_out], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=20, deadline=None)
@given(trips=st.integers(1, 8), carried=st.integers(1, 2), scans=st.integers(0, 2), seed=st.integers(0, 2**32 - 1),
       cond=st.sampled_from([True, None]))  # fmt: skip
def test_static_loop_unrolls_exactly(trips: int, carried: int, scans: int, seed: int, cond: bool | None) -> None:
    model = _loop_model(trips, carried, scans, seed, cond)
    result = UNROLL(model)
    assert [s.nodes for s in result.applied] == [("loop",)]
    ops = [n.op_type for n in result.model.graph.node]
    assert "Loop" not in ops and ops.count("Mul") == trips * (carried + scans)
    check = equivalent(model, result.model)
    assert check.equal, check.line()


def test_trip_count_over_max_unroll_is_skipped() -> None:
    result = UNROLL(_loop_model(9, 1, 1), PassOptions(max_unroll=8))
    assert [s.reason for s in result.skipped] == ["trip count 9 exceeds max_unroll=8"]
    assert [n.op_type for n in result.model.graph.node] == ["Loop"]


def test_dynamic_trip_count_and_condition_are_skipped() -> None:
    dynamic = _loop_model(3, 1, 0)
    dynamic.graph.initializer.pop(0)
    dynamic.graph.input.append(helper.make_tensor_value_info("M", TensorProto.INT64, []))
    assert [s.reason for s in UNROLL(dynamic).skipped] == ["trip count M is not a constant"]
    false = _loop_model(3, 1, 0, cond=False)
    assert [s.reason for s in UNROLL(false).skipped] == ["loop condition is not a constant true"]


def test_body_that_computes_its_condition_is_skipped() -> None:
    model = _loop_model(4, 1, 0)
    body = model.graph.node[0].attribute[0].g
    body.node[1].CopyFrom(helper.make_node("ReduceMax", ["v0"], ["r"], keepdims=0))
    body.node.append(helper.make_node("Less", ["r", "k_limit"], ["cond_out"]))
    body.initializer.append(numpy_helper.from_array(np.array(5.0, np.float32), "k_limit"))
    result = UNROLL(model)
    assert [s.reason for s in result.skipped] == ["loop body computes its own condition (it may stop early)"]


def _if_model(cond: bool | None) -> onnx.ModelProto:
    """``If(c)``: then ``x * 2 + b_then``, else ``x - b_else`` (branch initializers)."""
    then = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t"]), helper.make_node("Add", ["t", "b"], ["y_then"])], "then", [],
        [helper.make_tensor_value_info("y_then", F, [2, 3])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two"), numpy_helper.from_array(np.full((2, 3), 0.5, np.float32), "b")],
    )  # fmt: skip
    other = helper.make_graph(
        [helper.make_node("Sub", ["x", "b"], ["y_else"])], "else", [], [helper.make_tensor_value_info("y_else", F, [2, 3])],
        [numpy_helper.from_array(np.full((2, 3), 0.25, np.float32), "b")],
    )  # fmt: skip
    inits = [] if cond is None else [numpy_helper.from_array(np.array(cond), "c")]
    inputs = [helper.make_tensor_value_info("x", F, [2, 3])]
    if cond is None:
        inputs.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)
    graph = helper.make_graph([node], "iffy", inputs, [helper.make_tensor_value_info("y", F, [2, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_constant_if_is_replaced_by_its_branch() -> None:
    for cond, op in ((True, "Mul"), (False, "Sub")):
        model = _if_model(cond)
        result = UNROLL(model)
        assert [s.nodes for s in result.applied] == [("if",)]
        ops = [n.op_type for n in result.model.graph.node]
        assert "If" not in ops and op in ops
        check = equivalent(model, result.model)
        assert check.equal, check.line()


def test_if_on_an_input_is_skipped() -> None:
    result = UNROLL(_if_model(None))
    assert [s.reason for s in result.skipped] == ["condition is not a constant"]


@settings(max_examples=10, deadline=None)
@given(steps=st.integers(1, 6), reverse=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_scan_unrolls_exactly(steps: int, reverse: bool, seed: int) -> None:
    from tests.graph_ir.dynamic_models import scan_model

    model = scan_model(steps, n=8, reverse=reverse, seed=seed)
    result = UNROLL(model)
    ops = [n.op_type for n in result.model.graph.node]
    assert "Scan" not in ops and ops.count("MatMul") == 2 * steps and ops.count("Gather") == steps
    check = equivalent(model, result.model)
    assert check.equal, check.line()


def test_nested_scan_in_loop_unrolls_exactly_within_the_product_limit() -> None:
    from tests.graph_ir.dynamic_models import nested_model

    model = nested_model(3, 4, n=8)
    result = UNROLL(model)
    assert [n.op_type for n in result.model.graph.node].count("MatMul") == 3 * 4 * 2
    check = equivalent(model, result.model)
    assert check.equal, check.line()
    capped = UNROLL(model, PassOptions(max_unroll=8))  # 3 x 4 > 8: the inner Scans stay
    assert {s.reason for s in capped.skipped} == {"trip count 4 x 3 unrolled around it exceeds max_unroll=8"}
    assert equivalent(model, capped.model).equal
