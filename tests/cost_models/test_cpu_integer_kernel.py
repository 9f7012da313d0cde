"""A Conv, MatMul or Gemm deployed in int8 on a host whose integer kernels were fingerprinted is
priced as onnxruntime's integer kernel (``cost_models.cpu.integer_kernel``): the same cost as the
``QLinearConv`` / ``QLinearMatMul`` / ``QGemm`` ``hwsim validate`` prices; anywhere else (fp32, a
host without those figures) the op is unchanged."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.op_metrics import metrics
from tests.helpers import host_chip

INT8 = {"int8_conv_pixel_ns": 7.3, "int8_im2col_pixel_ns": 19.0, "int8_conv_l2_mac_ps": 4.2, "requant_ns": 0.23,
        "int8_pack_ns": 0.75, "int8_gemv_call_ns": 500.0, "int8_gemv_gbps": 95.0}  # fmt: skip


def _conv(c: int, h: int, k: int) -> Op:
    x, w = Tensor("x", (1, c, h, h), "float32"), Tensor("w", (c, c, k, k), "float32", is_weight=True)
    y = Tensor("y", (1, c, h - k + 1, h - k + 1), "float32")
    m = metrics("Conv", [x, w], [y], {})
    return Op("c", "Conv", m.category, (x, w), (y,), {}, m.macs, m.flops)


def _gemm(m_rows: int, k: int, n: int) -> Op:
    a, b = Tensor("a", (m_rows, k), "float32"), Tensor("b", (n, k), "float32", is_weight=True)
    y = Tensor("y", (m_rows, n), "float32")
    m = metrics("Gemm", [a, b], [y], {"transB": 1})
    return Op("g", "Gemm", m.category, (a, b), (y,), {"transB": 1}, m.macs, m.flops)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([8, 16, 48]), st.integers(5, 24), st.sampled_from([1, 3]), st.integers(1, 64),
       st.sampled_from([64, 256]), st.sampled_from([10, 128]))  # fmt: skip
def test_int8_gemm_is_priced_as_the_integer_kernel(c: int, h: int, k: int, rows: int, kk: int, n: int) -> None:
    chip = chip_from_dict(host_chip(flops_per_cycle={"fp32": 60.0, "int8": 240.0}, **INT8))
    plain = chip_from_dict(host_chip(flops_per_cycle={"fp32": 60.0, "int8": 240.0}))
    for op, kernel in ((_conv(c, h, k), "QLinearConv"), (_gemm(rows, kk, n), "QGemm")):
        as_kernel = estimate(replace(op, op_type=kernel), chip, "cpu", "int8")
        assert estimate(op, chip, "cpu", "int8") == as_kernel
        # fp32, or a host without the integer kernels' figures: the op as it is
        assert estimate(op, chip, "cpu", "fp32") == estimate(op, plain, "cpu", "fp32")
        unchanged = estimate(op, plain, "cpu", "int8")
        assert unchanged is not None and "requantize" not in unchanged.note


def test_the_requantization_is_paid() -> None:
    chip = chip_from_dict(host_chip(flops_per_cycle={"fp32": 60.0, "int8": 240.0}, **INT8))
    plain = chip_from_dict(host_chip(flops_per_cycle={"fp32": 60.0, "int8": 240.0}))
    op = _conv(32, 16, 3)
    with_kernel, without = estimate(op, chip, "cpu", "int8"), estimate(op, plain, "cpu", "int8")
    assert with_kernel is not None and without is not None
    assert with_kernel.latency_ns > without.latency_ns
    assert "requantize" in with_kernel.note and "requantize" not in without.note
