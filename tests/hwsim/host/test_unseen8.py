"""The eighth unseen batch (``benchmarks/heldout_unseen8.py``): each family runs under onnxruntime
and is marked the way onnxruntime runs it (a decoding step's scaled products over its cache and the
transposed cache, the output pass of a dynamically quantized product, 3-D convs on the SGEMM kernel)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import onnx

from cost_models.cpu import SGEMM_CONV_ATTR, is_row_product
from graph_ir.onnx_import import load_onnx
from hwsim.host.validate import (
    integer_to_float,
    layout_kernels,
    row_transposes,
    scaled_products,
    scaled_row_products,
)
from tests.helpers import load_benchmarks


def _unseen8() -> ModuleType:
    return load_benchmarks("heldout_models", "heldout_unseen8")


def _run(model: onnx.ModelProto, path: Path) -> None:
    import onnxruntime as ort

    onnx.save(model, str(path))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.ones([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32) * 0.1 for i in model.graph.input}
    assert np.all(np.isfinite(sess.run(None, feeds)[0]))


def test_two_sizes_a_family_and_each_runs(tmp_path: Path) -> None:
    mod = _unseen8()
    families = ("bcnn", "benc", "c3d", "decode", "dqcnn", "dynq")
    assert sorted({k.split("_")[0] for k in mod.SIZES}) == sorted(families)
    assert all(sum(k.startswith(f + "_") for k in mod.SIZES) == 2 for f in families)
    for name, model in (("bcnn", mod.bcnn(2, 32, (8, 16))), ("benc", mod.benc(2, 8, 32, 2, 1)), ("c3d", mod.c3d(4, 16, (8, 16))),
                        ("decode", mod.decode(16, 64, 128, 2, heads=4))):  # fmt: skip
        _run(model, tmp_path / f"{name}.onnx")


def test_the_decoding_step_is_marked_as_onnxruntime_runs_it(tmp_path: Path) -> None:
    mod = _unseen8()
    path = tmp_path / "decode.onnx"
    onnx.save(mod.decode(16, 64, 128, 2, heads=4), str(path))
    graph = load_onnx(path)
    rows = [op.name for op in graph.ops() if is_row_product(op)]
    assert len(rows) == 4  # q K^T and p V per layer: the weight products are no row products over run-time matrices
    fused = {op.name for op in graph.ops() if op.op_type in ("Mul", "Transpose")}  # as onnxruntime fuses them, at most
    scaled = scaled_row_products(graph, fused)
    assert len(scaled_products(graph, fused)) == 2  # the scale after each q K^T
    assert len(scaled) == 2 and set(scaled) < set(rows)  # the scores, not p V
    assert len(row_transposes(graph, fused)) == 2  # each layer's K^T


def test_dynamic_int8_and_3d_convs_are_marked(tmp_path: Path) -> None:
    mod = _unseen8()
    dyn = tmp_path / "dynq.onnx"
    onnx.save(mod.dynq(16, 32, 2, 1), str(dyn))
    graph = load_onnx(dyn)
    products = [op.name for op in graph.ops() if op.op_type == "MatMulInteger"]
    fused = {op.name for op in graph.ops() if op.op_type in ("Cast", "Mul", "Add")}
    heads = set(integer_to_float(graph, fused).values())
    assert products and heads == set(products)
    c3d = tmp_path / "c3d.onnx"
    onnx.save(mod.c3d(4, 16, (8, 16)), str(c3d))
    graph = load_onnx(c3d)
    marked = layout_kernels(graph, 16)
    convs = [op.name for op in graph.ops() if op.op_type == "Conv"]
    assert len(convs) == 2 and all(SGEMM_CONV_ATTR in marked[c].attrs for c in convs)


def test_a_dynamically_quantized_cnn_runs_its_convs_by_weight_dtype(tmp_path: Path) -> None:
    from cost_models.cpu import kernel_type

    mod = _unseen8()
    for signed, kind in ((False, "ConvInteger"), (True, "ConvIntegerS8")):
        path = tmp_path / f"dq{signed}.onnx"
        onnx.save(mod.dqcnn(32, signed), str(path))
        convs = [op for op in load_onnx(path).ops() if op.op_type == "ConvInteger"]
        assert convs and {kernel_type(op) for op in convs} == {kind}
