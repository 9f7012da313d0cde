"""What validate passes to the cost model for a decoding step's attention and a dynamically
quantized product: the scale onnxruntime folds into a one-row product over run-time matrices (it
then packs B), the transposed cache it reads as ``transB`` (free), and the Cast, scale and bias
after a ``MatMulInteger`` (MLAS's output pass, at ``requant_ns`` per output)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from chips import chip_from_dict
from cost_models.cpu import SCALED_ATTR
from graph_ir.onnx_import import from_model_proto
from hwsim.host.kernels import ROW_PACK_PROBES, rederived, row_pack_from
from hwsim.host.validate import integer_to_float, predict_nodes, row_transposes, scaled_row_products
from tests.helpers import host_chip


def _graph(nodes, inputs, inits):  # type: ignore[no-untyped-def]
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)], inits)
    return from_model_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _attention_step(scale_after: bool = True):  # type: ignore[no-untyped-def]
    """q (1, 8, 1, 64) against a cache k (1, 8, 256, 64): ``q K^T * 0.125``."""
    ins = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 8, 1, 64]),
           helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 8, 256, 64])]  # fmt: skip
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="T")]
    if scale_after:
        nodes += [helper.make_node("MatMul", ["q", "kt"], ["s"], name="M"), helper.make_node("Mul", ["s", "a"], ["y"], name="S")]
    else:
        nodes += [helper.make_node("MatMul", ["q", "kt"], ["y"], name="M")]
    return _graph(nodes, ins, [numpy_helper.from_array(np.array(0.125, np.float32), "a")])


def test_a_fused_scale_marks_the_row_product_and_the_transposed_cache_is_free() -> None:
    graph = _attention_step()
    assert set(scaled_row_products(graph, {"S", "T"})) == {"M"}
    assert SCALED_ATTR in scaled_row_products(graph, {"S", "T"})["M"].attrs
    assert scaled_row_products(graph, {"T"}) == {}  # the scale ran as its own kernel: no alpha
    assert row_transposes(graph, {"S", "T"}) == {"T"}
    assert row_transposes(graph, {"S"}) == frozenset()  # the Transpose ran as its own kernel
    plain = _attention_step(scale_after=False)
    assert scaled_row_products(plain, {"T"}) == {} and row_transposes(plain, {"T"}) == {"T"}


def test_predicted_the_scaled_step_pays_the_pack_and_its_transpose_nothing() -> None:
    unit = {"op_overhead_ns": 270.0, "flops_per_cycle": {"fp32": 32.0}, "l2_kib": 1024, "weights_in_cache": True,
            "fp32_gemv_call_ns": 440.0, "fp32_gemv_gbps": 78.0}  # fmt: skip
    with_pack, without = chip_from_dict(host_chip(**unit, fp32_pack_ns=0.1)), chip_from_dict(host_chip(**unit))
    graph = _attention_step()
    a, b = predict_nodes(graph, with_pack, 1, {"S", "T"}), predict_nodes(graph, without, 1, {"S", "T"})
    assert a["T"].predicted_ns == 0.0  # the scale is free by validate's own rule (scaled_products), given with it
    assert a["M"].predicted_ns - b["M"].predicted_ns == pytest.approx(8 * 256 * 64 * 0.1)


def _dynamic_product(bias: bool = True):  # type: ignore[no-untyped-def]
    """What quantize_dynamic writes for a Linear layer: MatMulInteger, Cast, Mul by the scales, bias Add."""
    ins = [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 64, 256]),
           helper.make_tensor_value_info("s", TensorProto.FLOAT, [])]  # fmt: skip
    inits = [numpy_helper.from_array(np.ones((256, 256), np.int8), "w"), numpy_helper.from_array(np.zeros(256, np.float32), "b")]
    nodes = [helper.make_node("MatMulInteger", ["x", "w"], ["acc"], name="MMI"),
             helper.make_node("Cast", ["acc"], ["f"], to=TensorProto.FLOAT, name="C"),
             helper.make_node("Mul", ["f", "s"], ["y" if not bias else "z"], name="S")]  # fmt: skip
    if bias:
        nodes.append(helper.make_node("Add", ["z", "b"], ["y"], name="B"))
    return _graph(nodes, ins, inits)


def test_the_output_pass_of_an_integer_product_is_its_kernels() -> None:
    graph = _dynamic_product()
    assert integer_to_float(graph, {"C", "S", "B"}) == {"C": "MMI", "S": "MMI", "B": "MMI"}
    assert integer_to_float(_dynamic_product(bias=False), {"C", "S"}) == {"C": "MMI", "S": "MMI"}
    assert integer_to_float(graph, {"C"}) == {}  # the scale ran as its own kernel: no MatMulIntegerToFloat
    unit = {"op_overhead_ns": 270.0, "flops_per_cycle": {"fp32": 32.0, "int8": 128.0}}
    chip, bare = chip_from_dict(host_chip(**unit, requant_ns=0.25)), chip_from_dict(host_chip(**unit))
    a, b = predict_nodes(graph, chip, 1, {"C", "S", "B"}), predict_nodes(graph, bare, 1, {"C", "S", "B"})
    assert all(a[n].predicted_ns == 0.0 for n in ("C", "S", "B"))
    assert a["MMI"].predicted_ns - b["MMI"].predicted_ns == pytest.approx(64 * 256 * 0.25)


def test_the_pack_figure_comes_from_the_two_probes_and_is_derived_again_on_merge() -> None:
    plain = 160_000.0
    rates = {"row_product_probe_ns": plain, "scaled_row_product_probe_ns": plain + 8 * 8 * 512 * 64 * 0.1}
    assert set(rates) == set(ROW_PACK_PROBES)
    assert row_pack_from(rates) == pytest.approx((0.1,))
    assert rederived(rates, 250.0)["fp32_pack_ns"] == pytest.approx(0.1)
    assert row_pack_from({**rates, "scaled_row_product_probe_ns": plain - 1.0}) is None  # not slower: no figure
    assert row_pack_from({"row_product_probe_ns": plain}) is None
