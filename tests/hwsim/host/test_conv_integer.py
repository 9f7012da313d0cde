"""A conv ``quantize_dynamic`` made a ``ConvInteger``: onnxruntime runs one with uint8 weights and
one with int8 weights (the default) on different kernels, so each is a kernel class of its own,
its efficiency from a fingerprint probe of its own (``hwsim.host.int8_probe.conv_integer_probe``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from chips import chip_from_dict
from cost_models.cpu import kernel_type
from cost_models.table import estimate
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import from_model_proto
from hwsim.host.int8_probe import (
    CONV_INTEGER_WEIGHTS,
    INT8_RATES,
    conv_integer_probe,
    probe_kernels,
)
from hwsim.host.kernels import int8_efficiencies
from hwsim.host.validate import integer_conv_strips
from tests.helpers import host_chip


def test_each_weight_dtype_is_a_class_of_its_own() -> None:
    kernels = probe_kernels()
    assert {kind: kernel_type(kernels[kind]) for kind in CONV_INTEGER_WEIGHTS} == {"ConvInteger": "ConvInteger", "ConvIntegerS8": "ConvIntegerS8"}
    assert kernels["ConvInteger"].inputs[1].dtype == "uint8" and kernels["ConvIntegerS8"].inputs[1].dtype == "int8"


@pytest.mark.parametrize("weights", [TensorProto.UINT8, TensorProto.INT8])
def test_the_probe_runs_a_conv_integer(weights: int) -> None:
    import onnxruntime as ort

    model = conv_integer_probe(weights)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    assert np.all(np.isfinite(sess.run(None, {"x": x})[0]))
    assert [n.op_type for n in model.graph.node if n.name == "conv"] == ["ConvInteger"]


def test_probed_times_set_each_class_and_price_it() -> None:
    """On an AMD EPYC the probe's conv (59 M MACs) took 0.82 ms with uint8 weights and 3.9 ms with
    int8 ones, where the int8 MatMul probe runs 452 GOP/s: efficiencies 0.32 and 0.067."""
    chip = chip_from_dict(host_chip(flops_per_cycle={"fp32": 44.0, "int8": 174.0}, clock_mhz=2600, op_overhead_ns=270.0))
    effs = int8_efficiencies(chip, {INT8_RATES["ConvInteger"]: 819_000.0, INT8_RATES["ConvIntegerS8"]: 3_900_000.0})
    assert set(effs) == {"ConvInteger", "ConvIntegerS8"}
    assert effs["ConvInteger"] / effs["ConvIntegerS8"] == pytest.approx(3_900_000.0 / 819_000.0, rel=0.02)
    probed = chip_from_dict(host_chip(flops_per_cycle={"fp32": 44.0, "int8": 174.0}, clock_mhz=2600, op_overhead_ns=270.0,
                                      efficiency=effs))  # fmt: skip
    kernels = probe_kernels()
    u8, s8 = (estimate(kernels[k], probed, "cpu", "model") for k in ("ConvInteger", "ConvIntegerS8"))
    assert u8 is not None and s8 is not None
    assert u8.latency_ns == pytest.approx(819_000.0, rel=0.05) and s8.latency_ns == pytest.approx(3_900_000.0, rel=0.05)


def _conv_integer(side: int, weights: int) -> ModelGraph:
    """DynamicQuantizeLinear -> a 3x3 ConvInteger of 16 channels with ``weights`` on a ``side`` x ``side`` plane."""
    rng = np.random.default_rng(0)
    w = rng.integers(0, 100, (16, 16, 3, 3)).astype(onnx.helper.tensor_dtype_to_np_dtype(weights))
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             helper.make_node("ConvInteger", ["xq", "w", "xz"], ["y"], name="conv", pads=[1, 1, 1, 1])]  # fmt: skip
    graph = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)], [numpy_helper.from_array(w, "w")])  # fmt: skip
    return from_model_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source="conv")


@pytest.mark.parametrize(("side", "factor"), [(7, 64 / 49), (8, 1.0), (9, 96 / 81), (4, 1.0), (3, 16 / 9), (40, 1.0)])
def test_uint8_weight_convs_run_whole_strips_of_pixels(side: int, factor: float) -> None:
    # MLAS's uint8 GEMM computes 16 output pixels at a time: 7 x 7 cost what 8 x 8 did (545 / 541 us)
    assert integer_conv_strips(_conv_integer(side, TensorProto.UINT8)).get("conv", 1.0) == pytest.approx(factor)
    assert integer_conv_strips(_conv_integer(side, TensorProto.INT8)) == {}  # int8 weights: linear in pixels
