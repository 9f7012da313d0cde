"""Convs as onnxruntime's CPU kernels run them where ``hwsim validate`` marked the layout: the NCHWc
depthwise kernel per tap (:func:`cost_models.cpu.depthwise_nchwc_ns`), its activation pass, and
a 1-D or 3-D conv's im2col (vol2col) + SGEMM with its B packed on the run (:func:`cost_models.cpu.sgemm_conv_ns`), and a
grouped conv's im2col + SGEMM per group (:func:`cost_models.cpu.grouped_conv_ns`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.cpu import (
    DEPTHWISE_OUTPUT_TAPS,
    GROUPED_CONV_ROW_NS,
    IM2COL_RUN_NS,
    NCHWC_ACTIVATION_ATTR,
    NCHWC_ACTIVATION_PASS_NS,
    NCHWC_ATTR,
    SGEMM_CONV_ATTR,
    SGEMM_FULL_PASS_ROWS,
    SGEMM_PACK_NS,
    SMALL_M_FMA_NS,
    STRIDED_IM2COL_NS,
    grouped_conv_ns,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from tests.helpers import host_chip, make_op


def depthwise(c: int, hw: int, k: int, **attrs: Any) -> Op:
    ins = [Tensor("x", (1, c, hw, hw), "float32"), Tensor("w", (c, 1, k, k), "float32", is_weight=True)]
    return make_op("Conv", ins, [Tensor("y", (1, c, hw, hw), "float32")], group=c, pads=[(k - 1) // 2] * 4, **attrs)


def conv1d(cin: int, cout: int, k: int, length: int, **attrs: Any) -> Op:
    ins = [Tensor("x", (1, cin, length), "float32"), Tensor("w", (cout, cin, k), "float32", is_weight=True)]
    return make_op("Conv", ins, [Tensor("y", (1, cout, length), "float32")], pads=[(k - 1) // 2] * 2, **attrs)


def conv3d(cin: int, cout: int, dhw: tuple[int, int, int], **attrs: Any) -> Op:
    ins = [Tensor("x", (1, cin, *dhw), "float32"), Tensor("w", (cout, cin, 3, 3, 3), "float32", is_weight=True)]
    return make_op("Conv", ins, [Tensor("y", (1, cout, *dhw), "float32")], pads=[1] * 6, **attrs)


def grouped(c: int, groups: int, hw: int, stride: int = 1, **attrs: Any) -> Op:
    ins = [Tensor("x", (1, c, hw, hw), "float32"), Tensor("w", (c, c // groups, 3, 3), "float32", is_weight=True)]
    out = Tensor("y", (1, c, -(-hw // stride), -(-hw // stride)), "float32")
    return make_op("Conv", ins, [out], group=groups, pads=[1] * 4, strides=[stride, stride], **attrs)


def compute(op: Op, **unit: Any) -> float:
    chip = chip_from_dict(host_chip(**unit))
    cost = estimate(op, chip, "cpu", "model")
    assert cost is not None
    return cost.compute_ns


PEAK = 2.6 * 60.0  # host_chip's FLOP per ns


class TestDepthwiseNchwc:
    def test_taps_at_the_calibrated_rate(self) -> None:
        op = depthwise(64, 32, 7, **{NCHWC_ATTR: 16})
        want = 2 * 64 * 32 * 32 * (49 + DEPTHWISE_OUTPUT_TAPS) / (PEAK * 0.8)
        assert abs(compute(op, efficiency={"DepthwiseConv": 0.8}) - want) < 1e-6 * want

    def test_k7_over_k3_follows_the_taps_not_the_flops(self) -> None:
        # measured 0.76-0.83 against 0.20-0.30 ns per output: ~3x, where k² alone says 5.4x
        eff = {"DepthwiseConv": 0.8}
        r = compute(depthwise(64, 32, 7, **{NCHWC_ATTR: 16}), efficiency=eff) / compute(
            depthwise(64, 32, 3, **{NCHWC_ATTR: 16}), efficiency=eff)
        assert 2.5 < r < 3.6

    def test_unmarked_depthwise_keeps_the_old_rule(self) -> None:
        # golden chips never carry the mark: the plain rule (k² flops at a depthwise factor) stays
        op = depthwise(64, 32, 3)
        assert compute(op, efficiency={"DepthwiseConv": 0.2}) != compute(replace(op, attrs={**op.attrs, NCHWC_ATTR: 16}),
                                                                         efficiency={"DepthwiseConv": 0.2})

    def test_clip_pass_is_added_and_not_calibrated(self) -> None:
        plain = depthwise(64, 32, 3, **{NCHWC_ATTR: 16})
        clip = replace(plain, attrs={**plain.attrs, NCHWC_ACTIVATION_ATTR: "Clip"})
        for eff in (0.5, 1.0):
            extra = compute(clip, efficiency={"DepthwiseConv": eff}) - compute(plain, efficiency={"DepthwiseConv": eff})
            assert abs(extra - 64 * 32 * 32 * NCHWC_ACTIVATION_PASS_NS) < 1e-6

    @given(c=st.sampled_from([16, 32, 96, 256]), hw=st.integers(4, 64), k=st.sampled_from([3, 5, 7]),
           eff=st.floats(0.05, 1.0))
    def test_grows_with_k_and_never_beats_the_fma_peak(self, c: int, hw: int, k: int, eff: float) -> None:
        unit = {"efficiency": {"DepthwiseConv": eff}}
        t = compute(depthwise(c, hw, k, **{NCHWC_ATTR: 16}), **unit)
        assert t >= 2 * c * hw * hw * k * k / PEAK * (1 - 1e-9)  # every tap is an FMA at most at peak
        assert compute(depthwise(c, hw, k + 2, **{NCHWC_ATTR: 16}), **unit) > t


class TestSgemmConv:
    def test_packing_adds_per_element_of_b(self) -> None:
        op = conv1d(64, 64, 3, 4000)
        marked = replace(op, attrs={**op.attrs, SGEMM_CONV_ATTR: 1})
        extra = compute(marked, efficiency={"Conv": 1.0}) - compute(op, efficiency={"Conv": 1.0})
        assert abs(extra - 64 * 3 * (4000 * SGEMM_PACK_NS + IM2COL_RUN_NS)) < 1e-6  # one run per row of B in 1-D

    def test_a_strided_one_gathers_each_element_of_b(self) -> None:
        # wav2vec-like: 256 -> 256 channels, k3, stride 2 over 3199 steps -> 1599 outputs
        x, w = Tensor("x", (1, 256, 3199), "float32"), Tensor("w", (256, 256, 3), "float32", is_weight=True)
        op = make_op("Conv", [x, w], [Tensor("y", (1, 256, 1599), "float32")], pads=[1, 1], strides=[2])
        marked = replace(op, attrs={**op.attrs, SGEMM_CONV_ATTR: 1})
        extra = compute(marked, efficiency={"Conv": 1.0}) - compute(op, efficiency={"Conv": 1.0})
        assert abs(extra - 256 * 3 * (1599 * (SGEMM_PACK_NS + STRIDED_IM2COL_NS) + IM2COL_RUN_NS)) < 1e-6

    def test_vol2col_pays_per_run(self) -> None:
        # B of 24 x 27 rows by 8 x 48 x 6 outputs: 8 x 48 runs of 6 per row
        op = conv3d(24, 48, (8, 48, 6))
        marked = replace(op, attrs={**op.attrs, SGEMM_CONV_ATTR: 1})
        extra = compute(marked, efficiency={"Conv": 1.0}) - compute(op, efficiency={"Conv": 1.0})
        assert abs(extra - 24 * 27 * (8 * 48 * 6 * SGEMM_PACK_NS + 8 * 48 * IM2COL_RUN_NS)) < 1e-6

    def test_xeon_conv3d_figures(self) -> None:
        # micro_cpu_kernels.py conv3d on an Intel Xeon (a 768-cubed MatMul at 184 GFLOP/s): the same
        # B (1.5 M elements) 6 and 72 wide took 1883 and 1131 us; without the runs both were one figure
        unit = {"flops_per_cycle": {"fp32": 184.0 / 2.6}, "efficiency": {"Conv": 1.0}, "op_overhead_ns": 0.0}
        for dhw, measured_us in (((8, 48, 6), 1882.85), ((8, 4, 72), 1131.17)):
            assert abs(compute(conv3d(24, 48, dhw, **{SGEMM_CONV_ATTR: 1}), **unit) / 1e3 / measured_us - 1) < 0.10

    def test_ci_xeon_figures(self) -> None:
        # 64 -> 64 over 4000 steps on the CI Xeon (181 GFLOP/s, Conv at 0.97): 780 and 265 us measured
        unit = {"flops_per_cycle": {"fp32": 181.3 / 2.6}, "efficiency": {"Conv": 0.97}}
        for k, measured_us in ((3, 780.0), (1, 265.0)):
            op = conv1d(64, 64, k, 4000, **{SGEMM_CONV_ATTR: 1})
            assert abs(compute(op, **unit) / 1e3 / measured_us - 1) < 0.05

    @given(cin=st.integers(1, 256), k=st.sampled_from([1, 3, 5, 7]), length=st.integers(16, 4096))
    def test_never_faster_than_the_plain_roofline(self, cin: int, k: int, length: int) -> None:
        op = conv1d(cin, 32, k, length)
        marked = replace(op, attrs={**op.attrs, SGEMM_CONV_ATTR: 1})
        assert compute(marked) > compute(op)


class TestGroupedConv:
    def test_resnext_convs_as_measured_alone(self) -> None:
        # the CI Xeon (181 GFLOP/s, the lead's calibrated Conv 0.77), alone under load (micro_cpu_kernels.py grouped)
        unit = {"flops_per_cycle": {"fp32": 181.3 / 2.6}, "efficiency": {"Conv": 0.77}, "op_overhead_ns": 0.0}
        for (c, g, hw, s), measured_us in (((128, 32, 28, 1), 340.8), ((256, 32, 28, 2), 372.2), ((128, 32, 56, 1), 1255.7)):
            op = grouped(c, g, hw, s, **{SGEMM_CONV_ATTR: 1})
            assert abs(compute(op, **unit) / 1e3 / measured_us - 1) < 0.05
            # the dense rate alone said under a sixth of it
            assert compute(grouped(c, g, hw, s), **unit) / 1e3 < measured_us / 6

    def test_unmarked_or_one_group_pays_nothing_more(self) -> None:
        assert grouped_conv_ns(grouped(128, 32, 28)) == 0.0
        one = conv1d(64, 64, 3, 100, **{SGEMM_CONV_ATTR: 1})
        assert grouped_conv_ns(one) == 0.0

    @given(per_group=st.integers(1, 200), groups=st.integers(2, 16), hw=st.integers(4, 40))
    def test_only_the_rows_outside_full_passes_pay_the_few_row_fmas(self, per_group: int, groups: int, hw: int) -> None:
        # MLAS's SGEMM takes 12 rows of A a pass: a group of 34 output channels pays for 10 of them,
        # one of 24 for none (ShuffleNet v1's 34-channel groups were priced 33-38 % slow at all 34)
        op = grouped(per_group * groups, groups, hw, 1, **{SGEMM_CONV_ATTR: 1})
        rows = per_group * groups * 9
        fixed = rows * GROUPED_CONV_ROW_NS
        few_rows = rows * hw * hw * (per_group % SGEMM_FULL_PASS_ROWS) * SMALL_M_FMA_NS
        assert grouped_conv_ns(op) == pytest.approx(fixed + few_rows, rel=1e-9)
        if per_group % SGEMM_FULL_PASS_ROWS == 0:
            assert grouped_conv_ns(op) == pytest.approx(fixed, rel=1e-9)

    @given(per_group=st.integers(2, 8), groups=st.integers(2, 64), hw=st.integers(4, 40), stride=st.sampled_from([1, 2]))
    def test_per_group_costs_add_up(self, per_group: int, groups: int, hw: int, stride: int) -> None:
        # twice the groups of the same shape: twice the rows, im2col and FMAs
        one = grouped_conv_ns(grouped(per_group * groups, groups, hw, stride, **{SGEMM_CONV_ATTR: 1}))
        two = grouped_conv_ns(grouped(2 * per_group * groups, 2 * groups, hw, stride, **{SGEMM_CONV_ATTR: 1}))
        assert one >= groups * per_group * 9 * GROUPED_CONV_ROW_NS
        assert abs(two - 2 * one) <= 1e-9 * two
        if stride == 1 and hw > 1:  # a strided im2col gathers: dearer per element of B than the row copies
            strided = grouped_conv_ns(grouped(per_group * groups, groups, 2 * hw, 2, **{SGEMM_CONV_ATTR: 1}))
            assert strided > one


def dense(cin: int, cout: int, h: int, w: int, k: int = 3, pad: int | None = None, **attrs: Any) -> Op:
    p = k // 2 if pad is None else pad
    d = int(attrs.get("dilations", [1])[0])
    ins = [Tensor("x", (1, cin, h, w), "float32"), Tensor("w", (cout, cin, k, k), "float32", is_weight=True)]
    out = Tensor("y", (1, cout, h + 2 * p - d * (k - 1), w + 2 * p - d * (k - 1)), "float32")
    return make_op("Conv", ins, [out], pads=[p] * 4, **attrs)


class TestDenseNchwcRows:
    """A dense conv on the NCHWc kernel does the kernel rows inside its input only
    (:func:`cost_models.cpu.valid_tap_share`)."""

    def test_a_short_plane_skips_its_padded_rows(self) -> None:
        full = compute(dense(64, 64, 4, 32), efficiency={"Conv": 0.9})
        blocked = compute(dense(64, 64, 4, 32, **{NCHWC_ATTR: 16}), efficiency={"Conv": 0.9})
        assert abs(blocked / full - 10 / 12) < 1e-9  # rows 2 + 3 + 3 + 2 of 4 x 3

    def test_no_padding_or_one_row_kernels_and_im2col_convs_do_every_mac(self) -> None:
        for op in (dense(64, 64, 4, 32, k=1, **{NCHWC_ATTR: 16}), dense(64, 64, 4, 32, k=3, pad=0, **{NCHWC_ATTR: 16})):
            plain = replace(op, attrs={k: v for k, v in op.attrs.items() if k != NCHWC_ATTR})
            assert compute(op) == compute(plain)
        assert compute(dense(64, 64, 4, 32, **{SGEMM_CONV_ATTR: 1})) >= compute(dense(64, 64, 4, 32))

    @given(st.integers(1, 40), st.integers(1, 40), st.sampled_from([1, 3, 5, 7]), st.integers(1, 3))
    def test_the_share_is_a_fraction_that_grows_with_the_plane(self, h: int, w: int, k: int, dilation: int) -> None:
        from cost_models.cpu import valid_tap_share

        def share(rows: int) -> float:  # "same" padding, so the output keeps the input's size
            return valid_tap_share(dense(8, 8, rows, w, k, pad=dilation * (k // 2), dilations=[dilation, dilation]))

        assert 0.0 < share(h) <= 1.0
        assert share(2 * h) >= share(h) - 1e-12  # more rows: a smaller share on the padding
        if k == 1:
            assert share(h) == 1.0


def test_a_plain_conv_packs_its_b_at_the_hosts_rate() -> None:
    # a TCN's 1-D conv, 64 -> 64 channels, k = 3, over 4000 steps: B of 768,000 elements; an AMD
    # EPYC (Zen 5) packed it at 0.15 ns an element where the CI Xeon's law says 0.26
    from chips.schema import CpuUnit
    from cost_models.cpu import SGEMM_CONV_ATTR, sgemm_conv_ns
    from graph_ir.ir import Op, Tensor

    x, w, y = Tensor("x", (1, 64, 4000), "float32"), Tensor("w", (64, 64, 3), "float32", True), Tensor("y", (1, 64, 4000), "float32")
    op = Op("c", "Conv", "conv", (x, w), (y,), {SGEMM_CONV_ATTR: 1})
    unit = CpuUnit(name="c", domain="d", clock_mhz=1000, flops_per_cycle={"fp32": 32}, l1_kib=48, im2col_pack_ns=0.15)
    assert sgemm_conv_ns(op, unit) - sgemm_conv_ns(op) == pytest.approx(768_000 * (0.15 - SGEMM_PACK_NS))
    assert sgemm_conv_ns(op, unit.model_copy(update={"im2col_pack_ns": None})) == sgemm_conv_ns(op)
    # at stride 2 (B of 64 x 3 x 2000) the gather per element of B is the host's too
    strided = Op("c", "Conv", "conv", (x, w), (Tensor("y", (1, 64, 2000), "float32"),), {SGEMM_CONV_ATTR: 1, "strides": (2,)})
    fast = unit.model_copy(update={"im2col_stride_ns": 0.18})
    assert sgemm_conv_ns(strided, fast) - sgemm_conv_ns(strided, unit) == pytest.approx(384_000 * (0.18 - STRIDED_IM2COL_NS))
