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
    DRAM's triad is 39: with ``gemv_dram_gbps`` its weights take that rate; so do those of a product
    whose working set fits the L3 but whose weights no loop keeps there (a decoding step of 170 MB
    of weights: a 768 x 768 MatMul ran 93-99 us, 24-25 GB/s); a product of many rows, one whose
    weights stay cached from run to run and a host without the figure are priced as before."""
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
    a, b = estimate(small, slow, "cpu", "fp32"), estimate(small, plain, "cpu", "fp32")
    assert a is not None and b is not None and "fits 32768 KiB" in a.note
    assert a.memory_ns - b.memory_ns == pytest.approx(4 * 1024 * 1024 * (1 / 20.0 - 1 / dram), rel=1e-6)
    cached = [chip_from_dict({**d, "units": [{**d["units"][0], "weights_in_cache": True}]}) for d in (slow_data, plain_data)]
    for op, (c_slow, c_plain) in ((rows, (slow, plain)), (small, cached)):
        a, b = estimate(op, c_slow, "cpu", "fp32"), estimate(op, c_plain, "cpu", "fp32")
        assert a is not None and b is not None and a.latency_ns == b.latency_ns


def _row_product(heads: int, rows: int, cols: int, scaled: bool = False) -> Op:
    """One row per head against a run-time ``(heads, rows, cols)`` matrix: a decoding step's ``p V``."""
    from cost_models.cpu import SCALED_ATTR

    a, b = Tensor("p", (1, heads, 1, rows), "float32"), Tensor("v", (1, heads, rows, cols), "float32")
    y = Tensor("y", (1, heads, 1, cols), "float32")
    m = metrics("MatMul", [a, b], [y], {})
    return Op("pv", "MatMul", m.category, (a, b), (y,), {SCALED_ATTR: 1} if scaled else {}, m.macs, m.flops)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 8, 12]), st.sampled_from([64, 257, 513, 2049]), st.sampled_from([64, 96, 128]))
def test_a_row_product_over_run_time_matrices_takes_the_one_row_kernel_per_head(heads: int, rows: int, cols: int) -> None:
    """On an AMD EPYC 8 heads of a 513 x 96 V cache ran 24 us: 8 calls of 0.43 us and 1.6 MB at the
    kernel's 77 GB/s, where the generic GEMM rates priced 11 us."""
    chip, plain = _chips()
    op = _row_product(heads, rows, cols)
    cost, before = estimate(op, chip, "cpu", "fp32"), estimate(op, plain, "cpu", "fp32")
    assert cost is not None and before is not None
    b_bytes = 4 * heads * rows * cols
    assert cost.overhead_ns == pytest.approx(270.0 + heads * 440.0)
    assert cost.memory_ns == pytest.approx((op.inputs[0].nbytes + b_bytes + op.outputs[0].nbytes) / FLOAT_GEMV["fp32_gemv_gbps"])
    assert "one-row call" not in before.note and "one-row call" in cost.note


def test_a_scaled_row_product_also_packs_b_and_only_with_the_figure() -> None:
    """A scale onnxruntime folds into the product (alpha not 1) sends MLAS off its one-row path: B
    packed for the blocked kernel, ``fp32_pack_ns`` per element (8 heads of 513 x 96: 24 us plain,
    56-63 us scaled on an AMD EPYC)."""
    chip, _ = _chips()
    packing = chip_from_dict({**host_chip(op_overhead_ns=270.0, flops_per_cycle={"fp32": 32.0}, l2_kib=1024, l2_bandwidth_gbps=160,
                                          l3_bandwidth_gbps=158, weights_in_cache=True, fp32_pack_ns=0.1, **RECURRENT, **FLOAT_GEMV)})  # fmt: skip
    plain_op, scaled_op = _row_product(8, 513, 96), _row_product(8, 513, 96, scaled=True)
    costs = [estimate(o, c, "cpu", "fp32") for c in (chip, packing) for o in (plain_op, scaled_op)]
    assert all(c is not None for c in costs)
    without_figure, without_figure_scaled, plain, scaled = (c.latency_ns for c in costs if c is not None)
    assert without_figure_scaled == without_figure == plain  # no figure, or no scale: nothing added
    assert scaled == pytest.approx(plain + 8 * 513 * 96 * 0.1)
    assert costs[3] is not None and "B packed" in costs[3].note


def test_weights_a_loop_streams_through_the_last_level_are_partly_kept_by_it() -> None:
    """A loop of inferences over S bytes of weights in a last level of C keeps 2C - S of them from
    one pass to the next (none from 2C on, :func:`cost_models.cpu.stream_ns`): a 1024-2048-2048-1000
    MLP (33 MB, 25 MiB of L3) ran its one-row Gemms far faster than the DRAM GEMV rate, a decoding
    step of 170 MB at it."""
    unit = {"op_overhead_ns": 270.0, "flops_per_cycle": {"fp32": 32.0}, "l2_kib": 1024, "l2_bandwidth_gbps": 160,
            "l3_kib": 25 * 1024, "l3_bandwidth_gbps": 150, "gemv_dram_gbps": 27.0}  # fmt: skip
    data = host_chip(**unit, **RECURRENT, **FLOAT_GEMV)
    data["dram"]["bandwidth_gbps"] = 40.0
    op = _product("MatMul", 1, 2048, 2048)  # 16 MiB: fits the L3 alone
    w_b = 4 * 2048 * 2048

    def cost(total: float | None) -> float:
        chip = chip_from_dict({**data, "units": [{**data["units"][0], "resident_weight_bytes": total}]})
        c = estimate(op, chip, "cpu", "fp32")
        assert c is not None
        return c.memory_ns

    c_bytes = 25 * 2**20
    far = min(FLOAT_GEMV["fp32_gemv_gbps"], RECURRENT["gemv_far_gbps"])
    for total in (1.3 * c_bytes, 1.7 * c_bytes):
        kept = 2 * c_bytes - total  # of each pass, from the L3 at the far rate
        expect = w_b / total * (kept / far + (total - kept) / 27.0)
        assert cost(total) - (cost(None) - w_b / 27.0) == pytest.approx(expect, rel=1e-3)
    assert cost(2.5 * c_bytes) == pytest.approx(cost(None))  # twice the L3 or more: all from DRAM
    assert cost(1.3 * c_bytes) < cost(1.7 * c_bytes) < cost(None)
