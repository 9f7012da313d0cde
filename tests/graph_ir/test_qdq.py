"""QDQ folding (:mod:`graph_ir.qdq`) on models onnxruntime's quantizer wrote: the folded graph is
the float model's ops (less the ReLUs the quantizer folds into a conv's int8 range, plus a
``DequantizeLinear`` per quantized graph output), with the same
work, in a valid order, each quantized op bound to int8 at the granularity asked for and each
op the binding kept wide left unbound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from graph_ir.qdq import fold_qdq, has_qdq
from graph_ir.quant_binding import QuantBinding
from hwsim.studies.quantize import quantize_model

_QDQ = {"QuantizeLinear", "DequantizeLinear"}


def cnn(path: Path, widths: list[int], size: int, seed: int) -> Path:
    """Conv -> Relu blocks, then GlobalAveragePool and a Gemm; random weights of ``seed``."""
    rng = np.random.default_rng(seed)
    nodes, inits, x, c = [], [], "x", 3
    for i, w in enumerate(widths):
        inits += [numpy_helper.from_array(rng.normal(0, 0.2, (w, c, 3, 3)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, (w,)).astype(np.float32), f"b{i}")]  # fmt: skip
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]  # fmt: skip
        x, c = f"r{i}", w
    inits += [numpy_helper.from_array(rng.normal(0, 0.2, (10, c)).astype(np.float32), "fw"),
              numpy_helper.from_array(np.zeros(10, np.float32), "fb")]  # fmt: skip
    nodes += [helper.make_node("GlobalAveragePool", [x], ["p"], name="gap"),
              helper.make_node("Flatten", ["p"], ["f"], name="flat"),
              helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)]  # fmt: skip
    g = helper.make_graph(nodes, "qcnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)  # fmt: skip
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def quantized(tmp: Path, float_model: Path, kept_wide: list[str], per_channel: bool) -> Path:
    """The QDQ model of ``float_model``: int8, ``kept_wide`` nodes fp32."""
    rules = [{"name": n, "dtype": "fp32"} for n in kept_wide]
    binding = QuantBinding.model_validate({"default": "int8", "granularity": "per-channel" if per_channel else "per-tensor",
                                           "rules": rules})  # fmt: skip
    x = load_onnx(float_model).inputs[0]
    calib = {x.name: np.random.default_rng(0).normal(0, 1, (4, *x.shape[1:])).astype(np.float32)}
    out = tmp / f"{float_model.stem}_qdq.onnx"
    quantize_model(float_model, calib, binding, out)
    return out


def check_valid_order(g: ModelGraph) -> None:
    made = {t.name for t in g.inputs}
    for op in g.ops():
        for t in op.activations:
            assert t.name in made, f"{op.name} reads {t.name} before anything makes it"
        made.update(t.name for t in op.outputs)
        for t in op.activations:
            if t.name in g.producer:
                assert g.g.has_edge(g.producer[t.name], op.name)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    widths=st.lists(st.sampled_from([4, 8, 16]), min_size=1, max_size=4),
    size=st.sampled_from([8, 12]),
    wide=st.sets(st.integers(0, 4)),
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_folded_qdq_is_the_float_model_bound(
    tmp_path: Path, widths: list[int], size: int, wide: set[int], per_channel: bool, seed: int
) -> None:
    layers = [f"conv{i}" for i in range(len(widths))] + ["fc"]
    kept_wide = sorted({layers[i] for i in wide if i < len(layers)})
    if len(kept_wide) == len(layers):
        kept_wide = kept_wide[1:]  # the quantizer refuses a binding that quantizes nothing
    plain = cnn(tmp_path / "f.onnx", widths, size, seed)
    f, q = load_onnx(plain), load_onnx(quantized(tmp_path, plain, kept_wide, per_channel))
    assert has_qdq(q) and not has_qdq(f) and fold_qdq(f) is None
    folded = fold_qdq(q)
    assert folded is not None
    g = folded.graph
    check_valid_order(g)
    kept = [op for op in g.ops() if op.op_type in _QDQ]
    # what stays of the QDQ nodes: one DequantizeLinear making a graph output, where the output is quantized
    assert all(op.op_type == "DequantizeLinear" and op.outputs[0].name in {t.name for t in g.outputs} for op in kept)
    # the quantizer drops a Relu after a quantized conv (the int8 range clips it): nothing else
    names = {op.name for op in g.ops() if op.op_type not in _QDQ}
    assert names <= {op.name for op in f.ops()}
    assert all(op.op_type == "Relu" for op in f.ops() if op.name not in names)
    for name in names:
        assert g.op(name).macs == f.op(name).macs and g.op(name).op_type == f.op(name).op_type
    for name in layers:
        if name in kept_wide:
            assert name not in folded.dtypes
        else:
            assert folded.dtypes[name] == "int8"
            assert folded.granularity[name] == ("per-channel" if per_channel else "per-tensor")
            assert all(t.is_weight for t in g.op(name).inputs[1:])


def test_graph_outputs_stay_made(tmp_path: Path) -> None:
    plain = cnn(tmp_path / "f.onnx", [8], 8, 1)
    folded = fold_qdq(load_onnx(quantized(tmp_path, plain, [], True)))
    assert folded is not None
    for t in folded.graph.outputs:
        assert t.name in folded.graph.producer
    # the graph input is read by the first conv as it is (the run inserts its quantization)
    assert "x" in {t.name for t in folded.graph.op("conv0").inputs}


def test_qoperator_model_is_refused_with_the_way_out(tmp_path: Path) -> None:
    """onnxruntime's QOperator format (QLinearAdd, QGemm: com.microsoft ops ONNX cannot infer)
    is one line naming the node and the QDQ format, not a shape riddle."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    from graph_ir.ir import ModelError

    class Reader:
        def __init__(self) -> None:
            self.left = [{"x": np.random.default_rng(0).normal(0, 1, (1, 3, 8, 8)).astype(np.float32)}]

        def get_next(self) -> dict[str, np.ndarray] | None:
            return self.left.pop() if self.left else None

    plain = cnn(tmp_path / "f.onnx", [8], 8, 1)
    qop = tmp_path / "qop.onnx"
    quantize_static(str(plain), str(qop), Reader(), quant_format=QuantFormat.QOperator)  # type: ignore[arg-type]
    try:
        load_onnx(qop)
    except ModelError as exc:
        msg = str(exc)
    else:
        raise AssertionError("a QOperator model with com.microsoft ops loaded")
    assert "com.microsoft.Q" in msg and "QDQ format" in msg and "\n" not in msg
