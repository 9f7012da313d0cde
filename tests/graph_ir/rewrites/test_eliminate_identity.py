"""eliminate_identity: proven on random graphs; what it removes and what it keeps."""

from __future__ import annotations

import onnx
from hypothesis import given, settings
from onnx import TensorProto, helper

from graph_ir.rewrites import get_pass
from tests.graph_ir.rewrites.proving import proven
from tests.graph_ir.rewrites.strategies import models


@settings(max_examples=30, deadline=None)
@given(model=models(ops=("Identity", "Dropout", "Reshape", "Transpose", "Cast", "Relu", "Conv", "Concat")))
def test_random_graphs(model: onnx.ModelProto) -> None:
    result = proven("eliminate_identity", model)
    # every pass-through op the strategy makes (Transpose/Cast are always no-ops there) is gone
    # unless skipped, and a skipped node is still there
    left = {n.name for n in result.model.graph.node}
    kept = {n.name for n in result.model.graph.node if n.op_type in ("Identity", "Dropout", "Transpose", "Cast")}
    skipped = {s.nodes[0] for s in result.skipped}
    assert kept <= skipped <= left


def _chain(*nodes: onnx.NodeProto, outputs: tuple[str, ...] = ("y",)) -> onnx.ModelProto:
    g = helper.make_graph(
        list(nodes), "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 3]) for o in outputs],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_graph_output_keeps_its_name() -> None:
    m = _chain(helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Identity", ["r"], ["y"], name="id"))
    result = proven("eliminate_identity", m)
    assert [(n.op_type, list(n.output)) for n in result.model.graph.node] == [("Relu", ["y"])]


def test_identity_from_graph_input_to_output_is_skipped() -> None:
    result = get_pass("eliminate_identity")(_chain(helper.make_node("Identity", ["x"], ["y"], name="id")))
    assert result.skipped[0].reason == "graph output fed straight from a graph input or initializer"


def test_dropout_whose_mask_is_read_is_kept() -> None:
    m = _chain(
        helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop"),
        helper.make_node("Cast", ["mask"], ["mf"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Add", ["d", "mf"], ["y"], name="add"),
    )  # fmt: skip
    result = get_pass("eliminate_identity")(m)
    assert [(s.nodes, s.reason) for s in result.skipped] == [(("drop",), "Dropout's mask output is read")]
    assert not result.applied  # the Cast bool -> float is no no-op


def test_real_transpose_and_reshape_stay() -> None:
    m = _chain(
        helper.make_node("Transpose", ["x"], ["t"], name="t", perm=[1, 0]),
        helper.make_node("Transpose", ["t"], ["y"], name="t2", perm=[1, 0]),
    )  # fmt: skip
    result = get_pass("eliminate_identity")(m)
    assert not result.applied and not result.skipped
