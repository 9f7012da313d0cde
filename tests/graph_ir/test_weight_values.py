"""A model's weights, inline, are not kept while it is read: only shapes matter, and a BERT-base
with its 436 MB of weights inline took 2.6 GB of memory to read (graph_ir.onnx_import.drop_weight_values)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph_ir import from_model_proto, load_onnx
from graph_ir.onnx_import import MAX_KEPT_VALUES, drop_weight_values


def _model() -> onnx.ModelProto:
    """A MatMul with a 128x128 weight inline, and a Reshape whose target shape is an initializer
    (shape inference reads its values)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((128, 128)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([4, 2, 128], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Reshape", ["m", "shape"], ["y"], name="rs")]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, shape],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_large_initializers_lose_their_values_and_keep_shape_and_type():
    model = _model()
    dropped = drop_weight_values(model.graph)
    w, shape = model.graph.initializer
    assert 128 * 128 > MAX_KEPT_VALUES and dropped >= 128 * 128 * 4
    assert w.data_location == TensorProto.EXTERNAL and not w.raw_data and list(w.dims) == [128, 128]
    assert w.data_type == TensorProto.FLOAT
    assert numpy_helper.to_array(shape).tolist() == [4, 2, 128]  # a shape tensor keeps its values
    assert drop_weight_values(model.graph) == 0  # nothing left to drop


def test_a_model_reads_the_same_with_its_weights_inline_or_absent(tmp_path):
    model = _model()
    inline = tmp_path / "inline.onnx"
    onnx.save(model, inline)
    weightless = onnx.ModelProto()
    weightless.CopyFrom(model)
    drop_weight_values(weightless.graph)
    a, b = load_onnx(inline), from_model_proto(weightless)
    assert [(o.name, o.op_type, [t.shape for t in o.outputs]) for o in a.ops()] == [
        (o.name, o.op_type, [t.shape for t in o.outputs]) for o in b.ops()
    ]
    assert a.op("rs").outputs[0].shape == (4, 2, 128)  # the Reshape's target was read
    assert model.graph.initializer[0].raw_data  # the caller's model is left as it was
    from_model_proto(model)
    assert model.graph.initializer[0].raw_data
