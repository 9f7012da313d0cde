"""A one-row float Gemm/MatMul over constant weights on a host whose one-row float kernel was
fingerprinted (``fp32_gemv_call_ns``, ``fp32_gemv_gbps``): its dispatch, the kernel's fixed set-up
and its weights at the kernel's own rate from whichever cache level holds them; elsewhere
(several rows, an integer kernel, a host without the figures) the op is priced as before."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips import chip_from_dict
from chips.schema import Chip
from cost_models.cpu import shape_factor
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.op_metrics import metrics
from tests.helpers import host_chip

FLOAT_GEMV = {"fp32_gemv_call_ns": 440.0, "fp32_gemv_gbps": 78.0}
#: As the AMD EPYC's fingerprint: the recurrent step's rates, faster than the Gemm kernel's.
RECURRENT = {"gemv_gbps": 103.0, "gemv_far_gbps": 84.0}


def _product(op_type: str, rows: int, k: int, n: int) -> Op:
    a, b = Tensor("a", (rows, k), "float32"), Tensor("b", (n, k) if op_type == "Gemm" else (k, n), "float32", is_weight=True)
    y = Tensor("y", (rows, n), "float32")
    attrs = {"transB": 1} if op_type == "Gemm" else {}
    m = metrics(op_type, [a, b], [y], attrs)
    return Op("g", op_type, m.category, (a, b), (y,), attrs, m.macs, m.flops)


def _chips() -> tuple[Chip, Chip]:
    """The host with and without the one-row float figures, its weights kept in the caches from
    run to run (as ``hwsim validate`` prices a loop of inferences)."""
    unit = {"op_overhead_ns": 270.0, "flops_per_cycle": {"fp32": 32.0}, "l2_kib": 1024, "l2_bandwidth_gbps": 160,
            "l3_bandwidth_gbps": 158, "weights_in_cache": True}  # fmt: skip
    return chip_from_dict(host_chip(**unit, **RECURRENT, **FLOAT_GEMV)), chip_from_dict(host_chip(**unit, **RECURRENT))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["Gemm", "MatMul"]), st.sampled_from([256, 512, 784, 1024]), st.sampled_from([64, 256, 512, 1024]))
def test_a_one_row_product_pays_the_call_and_streams_at_the_kernels_rate(op_type: str, k: int, n: int) -> None:
    chip, _ = _chips()
    cost = estimate(_product(op_type, 1, k, n), chip, "cpu", "fp32")
    assert cost is not None
    # weights in L2 or L3 (and the steady state's): memory-bound at the kernel's rate, whatever the level
    weights_ns = 4 * k * n / FLOAT_GEMV["fp32_gemv_gbps"]
    assert cost.latency_ns == pytest.approx(270.0 + 440.0 + weights_ns, rel=0.03)
    assert "one-row call" in cost.note


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["Gemm", "MatMul"]), st.integers(1, 64), st.sampled_from([64, 256, 1024]), st.sampled_from([10, 256]))
def test_without_the_figures_or_with_several_rows_nothing_changes(op_type: str, rows: int, k: int, n: int) -> None:
    chip, plain = _chips()
    op = _product(op_type, rows, k, n)
    with_figures, without = estimate(op, chip, "cpu", "fp32"), estimate(op, plain, "cpu", "fp32")
    assert with_figures is not None and without is not None
    if rows > 1:
        assert with_figures == without
    else:  # the old price: the dispatch and the weights at the recurrent step's rate, no call
        assert "one-row call" not in without.note
        assert with_figures.latency_ns > without.latency_ns


def test_the_generic_small_kernel_set_up_is_not_paid_beside_the_measured_call() -> None:
    # a 256 -> 10 layer: 5 k FLOPs, which the generic set-up (half efficiency at 20 k FLOPs) prices
    # at 5x their work; the measured call is that set-up, so only the work stays
    chip, plain = _chips()
    op = _product("Gemm", 1, 256, 10)
    cost, before = estimate(op, chip, "cpu", "fp32"), estimate(op, plain, "cpu", "fp32")
    assert cost is not None and before is not None
    assert shape_factor(op) < 0.25
    assert cost.compute_ns == pytest.approx(before.compute_ns * shape_factor(op))


def test_weights_beyond_every_cache_stream_at_the_dram_gemv_rate() -> None:
    """AlexNet's 9216 x 4096 Gemm (151 MB) ran 7.3-7.6 ms alone on an AMD EPYC, 20 GB/s, where the
    DRAM's triad is 39: with ``gemv_dram_gbps`` its weights take that rate; a product of many rows,
    one whose weights fit a cache and a host without the figure are priced as before."""
    unit = {"op_overhead_ns": 270.0, "flops_per_cycle": {"fp32": 32.0}, "l2_kib": 1024, "l2_bandwidth_gbps": 160,
            "l3_kib": 32768, "l3_bandwidth_gbps": 150}  # fmt: skip
    slow_data, plain_data = host_chip(**unit, **RECURRENT, **FLOAT_GEMV, gemv_dram_gbps=20.0), host_chip(**unit, **RECURRENT, **FLOAT_GEMV)
    for data in (slow_data, plain_data):
        data["dram"]["bandwidth_gbps"] = 39.0
    slow, plain = chip_from_dict(slow_data), chip_from_dict(plain_data)
    big, small, rows = _product("Gemm", 1, 9216, 4096), _product("Gemm", 1, 1024, 1024), _product("Gemm", 64, 9216, 4096)
    with_rate, without = estimate(big, slow, "cpu", "fp32"), estimate(big, plain, "cpu", "fp32")
    assert with_rate is not None and without is not None
    weights = 4 * 9216 * 4096
    dram = plain.dram.bandwidth_gbps
    assert with_rate.memory_ns - without.memory_ns == pytest.approx(weights / 20.0 - weights / dram, rel=1e-6)
    assert "weights from DRAM at 20 GB/s" in with_rate.note
    for op in (small, rows):
        a, b = estimate(op, slow, "cpu", "fp32"), estimate(op, plain, "cpu", "fp32")
        assert a is not None and b is not None and a.latency_ns == b.latency_ns
