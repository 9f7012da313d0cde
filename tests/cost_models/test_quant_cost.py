"""Costs under a quantization binding: per-op dtypes and the per-channel scale read."""

from __future__ import annotations

from chips import Chip
from cost_models.quant import SCALE_BYTES_PER_CHANNEL
from cost_models.table import cost_table
from graph_ir.onnx_import import load_onnx
from tests.helpers import MODELS


def test_same_dtype_everywhere_is_the_plain_table(rk3588: Chip) -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    plain = cost_table(g, rk3588, "int8")
    bound = cost_table(g, rk3588, "int8", {op.name: "int8" for op in g.ops()})
    assert bound.costs == plain.costs and dict(bound.dtypes) == {}


def test_an_op_in_fp16_costs_as_in_an_fp16_table(rk3588: Chip) -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    conv = next(op.name for op in g.ops() if op.op_type == "Conv")
    bound = cost_table(g, rk3588, "int8", {conv: "fp16"})
    fp16 = cost_table(g, rk3588, "fp16")
    assert bound.costs[conv] == fp16.costs[conv]
    assert bound.precision_of(conv) == "fp16" and bound.precision_of("x") == "int8"
    assert bound.costs[conv]["npu"].latency_ns > cost_table(g, rk3588, "int8").costs[conv]["npu"].latency_ns


def test_per_channel_reads_its_scales(rk3588: Chip) -> None:
    g = load_onnx(MODELS / "resnet18.onnx")
    conv = next(op for op in g.ops() if op.op_type == "Conv")
    per_tensor = cost_table(g, rk3588, "int8").costs[conv.name]["npu"]
    per_channel = cost_table(g, rk3588, "int8", granularity={conv.name: "per-channel"}).costs[conv.name]["npu"]
    channels = conv.outputs[0].shape[1]
    assert per_channel.dram_read_bytes - per_tensor.dram_read_bytes == SCALE_BYTES_PER_CHANNEL * channels
    assert per_channel.memory_ns > per_tensor.memory_ns and per_channel.compute_ns == per_tensor.compute_ns
    fp16 = cost_table(g, rk3588, "fp16", granularity={conv.name: "per-channel"}).costs[conv.name]["npu"]
    assert fp16 == cost_table(g, rk3588, "fp16").costs[conv.name]["npu"]  # floats carry no scale
