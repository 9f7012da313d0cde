"""graph_ir.infer_guard: shape inference of a model with a Slice runs in a child process, which
onnx's abort on a Slice over a negative dim (onnx/onnx#8481) cannot take down."""

from __future__ import annotations

import os

import onnx
import pytest
from onnx import TensorProto, helper, shape_inference

from graph_ir import infer_guard
from graph_ir.dynamic import infer_strict


def _model(kernel: int, slice_after: bool = True) -> onnx.ModelProto:
    """x [1, 2, 8, 8] -> Conv (kernel x kernel, no padding) -> Slice of axis 2 with step -1."""
    f = TensorProto.FLOAT
    inits = [helper.make_tensor("w", f, [2, 2, kernel, kernel], [0.1] * (4 * kernel * kernel))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[kernel, kernel])]
    out = "c"
    if slice_after:
        inits += [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("s", -1), ("e", -100), ("a", 2), ("st", -1))]
        nodes.append(helper.make_node("Slice", ["c", "s", "e", "a", "st"], ["y"], name="slice"))
        out = "y"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", f, [1, 2, 8, 8])], [helper.make_tensor_value_info(out, f, None)], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _direct(model: onnx.ModelProto) -> onnx.ModelProto:
    return shape_inference.infer_shapes(model, check_type=False, strict_mode=True, data_prop=True)


def test_a_model_with_a_slice_is_inferred_as_in_process() -> None:
    model = _model(3)
    assert infer_strict(model).SerializeToString() == _direct(model).SerializeToString()


def test_a_model_without_a_slice_is_inferred_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked for a model without a Slice")

    monkeypatch.setattr(os, "fork", no_fork)
    model = _model(3, slice_after=False)
    assert infer_strict(model).SerializeToString() == _direct(model).SerializeToString()


def test_a_slice_over_a_negative_dim_is_an_error_naming_the_op_that_made_it() -> None:
    # a 12x12 kernel over an 8x8 input: onnx infers dim -3, and the Slice's clamp aborts
    with pytest.raises(infer_guard.InferenceAborted) as err:
        infer_strict(_model(12))
    assert "aborted (SIGABRT; onnx/onnx#8481): node 'conv' (Conv) makes 'c' of shape [1, 2, -3, -3]" in str(err.value)


def test_an_error_in_the_child_is_raised_as_its_own_kind() -> None:
    model = _model(3)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64  # strict mode refuses the type
    with pytest.raises(shape_inference.InferenceError) as direct:
        _direct(model)
    with pytest.raises(shape_inference.InferenceError) as guarded:
        infer_guard.infer_guarded(model, _direct)
    assert str(guarded.value) == str(direct.value)


def test_a_negative_dim_without_a_slice_is_refused_at_import_as_negative(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from graph_ir.ir import ModelError
    from graph_ir.onnx_import import load_onnx

    path = tmp_path / "conv.onnx"
    onnx.save(_model(12, slice_after=False), path)
    with pytest.raises(ModelError) as err:  # was "no static shape ... (a dynamic dimension?)"
        load_onnx(path)
    assert "node 'conv' (Conv): output 'c' has the inferred shape [1, 2, -3, -3]: a negative dim" in str(err.value)
