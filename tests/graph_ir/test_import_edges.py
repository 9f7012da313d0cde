"""Valid models at the edges of what the importer reads, through ``hwsim run``: a static input dim
of 0, a graph with no nodes, a weight stored as a sparse initializer, an Einsum with an ellipsis."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_ir.onnx_import import from_model_proto, load_onnx
from hwsim.cli import main
from tests.fuzz.harness import check_refusal_or_run


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, list[int]], outputs: dict[str, list[int]],
           inits: tuple[onnx.TensorProto, ...] = ()) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in outputs.items()], list(inits),
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def _save(tmp_path: Path, model: onnx.ModelProto) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def _summary(tmp_path: Path, path: Path) -> dict[str, object]:
    out = tmp_path / "r"
    assert main(["run", "edge8", str(path), "--out", str(out), "--no-plots"]) == 0
    return json.loads((out / "summary.json").read_text())  # type: ignore[no-any-return]


def test_a_static_input_dim_of_0_is_an_empty_tensor_not_a_dynamic_one(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((32, 16), np.float32), "W")
    path = _save(
        tmp_path,
        _model(
            [helper.make_node("MatMul", ["x", "W"], ["y"])], {"x": [0, 32]}, {"y": [0, 16]}, (w,)
        ),
    )
    assert _summary(tmp_path, path)["total_macs"] == 0
    assert load_onnx(path).inputs[0].shape == (0, 32)


def test_a_graph_with_no_nodes_is_refused_as_nothing_to_simulate(tmp_path: Path) -> None:
    path, out = _save(tmp_path, _model([], {"x": [4, 32]}, {"x": [4, 32]})), tmp_path / "r"
    res = check_refusal_or_run(
        "edges", ["run", "edge8", str(path), "--out", str(out)], path, out, ok=()
    )
    assert f"{path}: the graph has no nodes: nothing to simulate" in res.stderr
    assert "not an ONNX model" not in res.stderr


def _sparse(
    name: str, values: np.ndarray, indices: list[int], dims: list[int]
) -> onnx.SparseTensorProto:
    return helper.make_sparse_tensor(
        numpy_helper.from_array(values, name),
        numpy_helper.from_array(np.array(indices, np.int64), f"{name}_idx"),
        dims,
    )


def test_a_sparse_initializer_is_a_weight_of_its_dense_shape(tmp_path: Path) -> None:
    model = _model([helper.make_node("MatMul", ["x", "W"], ["y"])], {"x": [4, 32]}, {"y": [4, 16]})
    model.graph.sparse_initializer.append(
        _sparse("W", np.array([1.0, 2.0, 3.0], np.float32), [0, 17, 300], [32, 16])
    )
    path = _save(tmp_path, model)
    assert _summary(tmp_path, path)["total_macs"] == 4 * 32 * 16
    w = load_onnx(path).op("MatMul_0").inputs[1]
    assert (w.shape, w.dtype, w.is_weight) == ((32, 16), "float32", True)


def test_a_sparse_initializer_gives_its_values_where_a_shape_reads_them() -> None:
    """The target shape of a Reshape stored sparse (a zero dropped): its dense values are read."""
    model = _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": [4, 32]}, {"y": None}
    )  # type: ignore[dict-item]
    model.graph.sparse_initializer.append(
        _sparse("shape", np.array([2, 16], np.int64), [1, 2], [3])
    )
    g = from_model_proto(model, "m.onnx")  # [0, 2, 16]: the 0 keeps x's dim 0
    assert g.op("Reshape_0").outputs[0].shape == (4, 2, 16)


def _einsum_macs(equation: str, a: list[int], b: list[int], y: list[int]) -> int:
    model = _model(
        [helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)],
        {"a": a, "b": b},
        {"y": y},
    )
    return from_model_proto(model, "m.onnx").total_macs


@pytest.mark.parametrize(
    ("equation", "a", "b"),
    [
        ("...ij,...jk->...ik", [2, 3, 4, 8], [2, 3, 8, 5]),
        ("...ij,jk->...ik", [2, 3, 4, 8], [8, 5]),  # the ellipsis covers no dim of b
        ("...ij,...jk->...ik", [1, 3, 4, 8], [2, 1, 8, 5]),  # 1s broadcast against 2 and 3
        ("b...j,bjk->b...k", [2, 3, 4, 8], [2, 8, 5]),  # an ellipsis in the middle
    ],
)
def test_einsum_with_an_ellipsis_counts_every_index(
    equation: str, a: list[int], b: list[int]
) -> None:
    """An Einsum's MACs are the product of all its index sizes: the ellipsis's dims included."""
    letters = _einsum_macs("abij,abjk->abik", [2, 3, 4, 8], [2, 3, 8, 5], [2, 3, 4, 5])
    assert letters == 2 * 3 * 4 * 8 * 5
    assert _einsum_macs(equation, a, b, [2, 3, 4, 5]) == letters


def test_two_loops_whose_bodies_reuse_a_name_run() -> None:
    """Two copies of one Loop body (local names alike, as an exporter writes two copies of a
    loop): onnx's data propagation shares one table across sibling bodies and raised "Data for
    input 0 already exists"; without it the shapes are inferred, as onnxruntime runs the model."""
    f = TensorProto.FLOAT

    def body() -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Add", ["b", "x"], ["b2"]), helper.make_node("Identity", ["ci"], ["co"])], "inner",
            [helper.make_tensor_value_info("j", TensorProto.INT64, []), helper.make_tensor_value_info("ci", TensorProto.BOOL, []),
             helper.make_tensor_value_info("b", f, [3])],
            [helper.make_tensor_value_info("co", TensorProto.BOOL, []), helper.make_tensor_value_info("b2", f, [3])],
        )  # fmt: skip

    nodes = [helper.make_node("Loop", ["N", "", "a0"], ["a1"], body=body(), name="L1"),
             helper.make_node("Loop", ["N", "", "a1"], ["a2"], body=body(), name="L2")]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, f, [3]) for n in ("x", "a0")],
        [helper.make_tensor_value_info("a2", f, [3])], [numpy_helper.from_array(np.array(2, np.int64), "N")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    built = from_model_proto(model, "loops.onnx")
    adds = [op for op in built.ops() if op.op_type == "Add"]
    assert sum(op.repeat for op in adds) == 4  # each body run twice (N = 2)
