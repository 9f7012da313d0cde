"""hwsim.host.ort_fp16: a float16 model as onnxruntime's CPU provider runs it (float32 kernels,
Casts between), checked against onnxruntime's own optimized model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_ir.onnx_import import from_model_proto
from hwsim.host.measure import named_nodes
from hwsim.host.ort_fp16 import CAST_PREFIX, as_run, fp16_kernels, holds_fp16
from hwsim.host.validate import graph_as_run, validate_model
from tests.helpers import host_chip

F16 = TensorProto.FLOAT16


def _model(nodes: list[onnx.NodeProto], shape: list[int], inits: dict[str, np.ndarray]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F16, shape)],
                              [helper.make_tensor_value_info(nodes[-1].output[0], F16, [1, 64])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])  # fmt: skip
    return named_nodes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = {f"w{i}": (rng.standard_normal((64, 64)) * 0.1).astype(np.float16) for i in range(2)}
    nodes = [helper.make_node("Gemm", ["x", "w0"], ["h"], name="g0"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w1"], ["y"], name="g1")]  # fmt: skip
    return _model(nodes, [1, 64], w)


def _chain() -> onnx.ModelProto:
    """Relu -> Reshape -> Transpose -> Relu -> Flatten -> Relu: a pair of float16 kernels between
    float32 ones, then one alone."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="c0"), helper.make_node("Reshape", ["a", "s"], ["b"], name="rs"),
             helper.make_node("Transpose", ["b"], ["c"], name="tr", perm=[0, 2, 1]), helper.make_node("Relu", ["c"], ["d"], name="c1"),
             helper.make_node("Flatten", ["d"], ["e"], name="fl"), helper.make_node("Relu", ["e"], ["y"], name="c2")]  # fmt: skip
    return _model(nodes, [1, 64], {"s": np.array([1, 8, 8], np.int64)})


def _ort_casts(model: onnx.ModelProto, tmp_path: Path) -> set[str]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return {n.name for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node if n.op_type == "Cast"}


def test_the_registry_has_float16_data_movement_and_no_float16_conv() -> None:
    kernels = fp16_kernels()
    assert {("", "Transpose"), ("", "Reshape"), ("", "LayerNormalization")} <= kernels
    assert not {("", "Conv"), ("", "Gemm"), ("", "Relu"), ("", "Add")} & kernels


@pytest.mark.parametrize("make", [_mlp, _chain])
def test_the_casts_are_the_ones_onnxruntime_inserts_and_the_numbers_hold(make: object, tmp_path: Path) -> None:
    import onnxruntime as ort

    model = make()  # type: ignore[operator]
    run = as_run(model)
    onnx.checker.check_model(run)
    mine = {n.name for n in run.graph.node if n.op_type == "Cast"}
    assert mine and all(name.startswith(CAST_PREFIX) for name in mine)
    assert mine == _ort_casts(model, tmp_path)
    x = {"x": np.random.default_rng(1).standard_normal((1, 64)).astype(np.float16)}
    before, after = (ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
                     for m in (model, run))  # fmt: skip
    assert after.dtype == np.float16 and np.allclose(before.astype(np.float32), after.astype(np.float32), atol=1e-2)


def test_float32_nodes_take_float32_weights_and_a_lone_float16_node_joins_them() -> None:
    graph = from_model_proto(as_run(_mlp()), source="mlp")
    assert all(t.dtype == "float32" for t in graph.op("g0").weights) and graph.op("g0").weights[0].nbytes == 64 * 64 * 4
    chain = {n.name: n for n in as_run(_chain()).graph.node}
    types = {vi.name: vi.type.tensor_type.elem_type for vi in onnx.shape_inference.infer_shapes(as_run(_chain())).graph.value_info}
    assert types[chain["tr"].output[0]] == F16  # Reshape -> Transpose: two float16 kernels, kept float16
    assert types[chain["fl"].output[0]] == TensorProto.FLOAT  # Flatten alone between Relus: float32, no Casts


def test_a_model_without_float16_comes_back_as_it_is() -> None:
    assert holds_fp16(_mlp())
    f32 = named_nodes(onnx.load_from_string(_mlp().SerializeToString()))
    for t in f32.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    f32.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
    f32.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    assert not holds_fp16(f32) and as_run(f32) is f32


def test_validate_prices_the_float32_run_and_measures_each_cast(tmp_path: Path) -> None:
    from chips.schema import chip_from_dict

    path = tmp_path / "mlp16.onnx"
    onnx.save(_mlp(), str(path))
    assert graph_as_run(path).op("g1").weights[0].dtype == "float32"
    v = validate_model(chip_from_dict(host_chip()), path, runs=5, min_total_s=0.05)
    casts = [n for n in v.nodes if n.name.startswith(CAST_PREFIX)]
    assert {n.name for n in casts} == {f"{CAST_PREFIX}x", f"{CAST_PREFIX}y"}
    assert all(n.measured_ns > 0 and not n.fused for n in casts) and not v.inserted_ops
