"""Narrow int8 convs and one-row integer GEMMs: MLAS's paths priced from a chip's probe figures
(:func:`cost_models.cpu.conv_sym_path`, :func:`cost_models.cpu.integer_conv_ns`,
:func:`cost_models.cpu.one_row_call_ns`) and the probes that measure them (:mod:`hwsim.host.int8_probe`)."""

from __future__ import annotations

from typing import Any

import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import chip_from_dict
from cost_models.cpu import conv_sym_path, integer_conv_ns, one_row_call_ns
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from graph_ir.onnx_import import from_model_proto
from hwsim.host.int8_probe import (
    CONV_CALL_CHANNELS,
    CONV_CALL_PROBES,
    CONV_PROBE,
    DEEP_CONV,
    DEEP_CONV_PROBE,
    GEMV_FAR_PROBE,
    GEMV_PROBES,
    IM2COL_CONV,
    INT8_RATES,
    NARROW_CONV,
    NARROW_CONV_PROBES,
    conv_call_from,
    conv_call_times,
    conv_l2_mac_from,
    conv_pixel_from,
    conv_probe,
    gemv_call_from,
    gemv_call_times,
    gemv_probe,
    im2col_pixel_from,
    int8_kernel_ns,
    narrow_conv_probe,
    probe_kernels,
)
from hwsim.host.kernels import int8_efficiencies, int8_fields
from hwsim.host.ort_qdq import qdq_kernel
from hwsim.report.provenance import chip_sha256
from tests.helpers import host_chip

#: An int8 rate like the CI Xeon's, with the narrow-conv and one-row figures of its fingerprint.
NARROW = {"int8_conv_pixel_ns": 8.0, "int8_im2col_pixel_ns": 19.0, "int8_gemv_call_ns": 850.0, "int8_gemv_gbps": 90.0}
BASE = {"flops_per_cycle": {"fp32": 60.0, "int8": 800.0}, "requant_ns": 0.4, "efficiency": {"QLinearConv": 0.5}}


def _kernel(model: onnx.ModelProto, node: str, kind: str) -> Op:
    hit = qdq_kernel(from_model_proto(onnx.shape_inference.infer_shapes(model)), node, kind)
    assert hit is not None
    return hit[0]


def _ns(op: Op, **unit: Any) -> float:
    cost = estimate(op, chip_from_dict(host_chip(**BASE, **unit)), "cpu", "model")
    assert cost is not None
    return cost.latency_ns


def _conv(cin: int, cout: int, side: int = 8, group: int = 1) -> Op:
    x = Tensor("x", (1, cin, side, side), "uint8")
    w = Tensor("w", (cout, cin // group, 3, 3), "int8", is_weight=True)
    return Op("c", "QLinearConv", "conv", (x, w), (Tensor("y", (1, cout, side, side), "uint8"),), {"group": group},
              macs=side * side * cout * cin // group * 9, flops=2 * side * side * cout * cin // group * 9)  # fmt: skip


class TestConvPath:
    def test_mlas_takes_its_symmetric_kernel_by_the_shape_rules_of_convsym(self) -> None:
        # MlasConvSymPackWSize (x86): input channels % 4, at least 16 output channels, output % 4
        assert [conv_sym_path(_conv(ci, co)) for ci, co in ((3, 16), (8, 8), (8, 16), (4, 16), (16, 18), (24, 24))] == [
            False, False, True, True, False, True]  # fmt: skip
        assert conv_sym_path(_conv(16, 16, group=16)) is None  # depthwise: a kernel of its own
        assert conv_sym_path(Op("m", "QLinearMatMul", "matmul", (), ())) is None

    def test_uint8_weights_never_take_it(self) -> None:
        op = _conv(16, 16)
        w = Tensor("w", (16, 16, 3, 3), "uint8", is_weight=True)
        assert conv_sym_path(Op("c", "QLinearConv", "conv", (op.inputs[0], w), op.outputs)) is False


class TestNarrowConvPricing:
    def test_a_narrow_conv_costs_more_per_mac_than_a_wide_one(self) -> None:
        stem = _kernel(narrow_conv_probe(*NARROW_CONV_PROBES[IM2COL_CONV]), "conv", "QLinearConv")
        narrow = _kernel(narrow_conv_probe(*NARROW_CONV_PROBES[NARROW_CONV]), "conv", "QLinearConv")
        wide = _kernel(conv_probe(), "conv", "QLinearConv")
        per_mac = [_ns(op, **NARROW) / op.macs for op in (stem, narrow, wide)]
        assert per_mac[0] > 2 * per_mac[1] > 2 * per_mac[2]
        # without the figures (an older chip file) only the requantization tells them apart
        old = [_ns(op) / op.macs for op in (stem, narrow, wide)]
        assert per_mac[0] > 3 * old[0] and per_mac[2] == pytest.approx(old[2] + 8.0 * CONV_PROBE[1] ** 2 / wide.macs, rel=1e-3)

    def test_the_stem_pays_im2col_per_pixel_and_no_efficiency_scales_it(self) -> None:
        stem = _conv(3, 32, side=16)
        unit = chip_from_dict(host_chip(**BASE, **NARROW)).units[0]
        assert integer_conv_ns(stem, unit, "int8") == (16 * 16 * 19.0, "im2col")
        slow = chip_from_dict(host_chip(**{**BASE, "efficiency": {"QLinearConv": 0.25}}, **NARROW)).units[0]
        assert integer_conv_ns(stem, slow, "int8") == integer_conv_ns(stem, unit, "int8")

    @given(st.integers(1, 12).map(lambda b: 4 * b), st.integers(4, 16).map(lambda b: 4 * b))
    def test_output_channels_are_priced_in_whole_blocks_of_16(self, cin: int, cout: int) -> None:
        unit = chip_from_dict(host_chip(**BASE, **NARROW)).units[0]
        op = _conv(cin, cout)
        padded = _conv(cin, -(-cout // 16) * 16)
        # the padded conv's MACs: the same time as its whole-block twin's, per-pixel part included
        assert _ns(op, **NARROW) - requant(op) == pytest.approx(_ns(padded, **NARROW) - requant(padded), rel=0.01)
        assert integer_conv_ns(op, unit, "int8")[1] == "indirect conv"


    def test_a_filter_no_l1_holds_streams_its_macs_at_the_l2_rate(self) -> None:
        # host_chip's L1: 48 KiB; one call reads 64 output channels x cin x 9 bytes of filter
        deep, wide = _conv(128, 128), _conv(64, 64)  # 72 KiB, 36 KiB
        plain, l2 = {**NARROW}, {**NARROW, "int8_conv_l2_mac_ps": 4.0}
        assert _ns(deep, **l2) - _ns(deep, **plain) == pytest.approx(deep.macs * 4.0e-3 - _ns_macs(deep), rel=0.01)
        assert _ns(wide, **l2) == _ns(wide, **plain)
        # never faster than the conv's own rate
        assert _ns(deep, **{**NARROW, "int8_conv_l2_mac_ps": 0.1}) == _ns(deep, **plain)


    def test_the_convs_measured_mac_rate_may_beat_the_int8_peak(self) -> None:
        # an AMD EPYC's conv kernel ran 4.0 ps a MAC where its int8 MatMul's peak gives 4.5: the
        # efficiency, capped at 1 against that peak, could not say so; the field does, on both paths
        wide, stem = _conv(64, 64, side=40), _conv(3, 32, side=40)  # compute-bound planes
        ones = {**BASE, "efficiency": {"QLinearConv": 1.0}}
        peak_ps = 1e3 / (800.0 * 2.6 / 2)  # ps a MAC at the int8 peak
        for op in (wide, stem):
            plain = estimate(op, chip_from_dict(host_chip(**ones, **NARROW)), "cpu", "model")
            fast = estimate(op, chip_from_dict(host_chip(**ones, **NARROW, int8_conv_mac_ps=0.8 * peak_ps)), "cpu", "model")
            assert plain is not None and fast is not None
            assert plain.latency_ns - fast.latency_ns == pytest.approx(op.macs * 0.2 * peak_ps / 1e3, rel=0.02)
        gemm = _kernel(gemv_probe(256, 1), "gemm0", "QGemm")  # no conv: the int8 peak holds
        assert _ns(gemm, **NARROW, int8_conv_mac_ps=0.1) == _ns(gemm, **NARROW)


def _ns_macs(op: Op) -> float:
    """``op``'s MACs at ``BASE``'s QLinearConv rate (0.5 of 800 int8 ops a cycle at 2.6 GHz), ns."""
    return 2 * op.macs / (800.0 * 2.6 * 0.5)


def requant(op: Op) -> float:
    return op.outputs[0].elements * 0.4


class TestOneRowCall:
    def test_a_one_row_qgemm_pays_its_set_up_before_its_weight_stream(self) -> None:
        g = _kernel(gemv_probe(256, 1), "gemm0", "QGemm")
        with_call, without = _ns(g, **NARROW), _ns(g, **{k: v for k, v in NARROW.items() if k != "int8_gemv_call_ns"})
        # serial: all of it shows, none hidden under the 64 KB weight stream
        assert with_call - without == pytest.approx(850.0)
        assert one_row_call_ns(g, chip_from_dict(host_chip(**BASE, **NARROW)).units[0]) == 850.0

    def test_the_weights_stream_at_the_integer_rate(self) -> None:
        g = _kernel(gemv_probe(1024, 1), "gemm0", "QGemm")
        # weights kept in the caches between runs (as validate predicts a loop of inferences): 1 MB in L2
        slow = _ns(g, **{**NARROW, "int8_gemv_gbps": 20.0, "weights_in_cache": True})
        fast = _ns(g, **{**NARROW, "int8_gemv_gbps": 100.0, "weights_in_cache": True})
        assert slow - fast == pytest.approx(1024 * 1024 / 20.0 - 1024 * 1024 / 100.0, rel=0.05)

    def test_weights_beyond_the_l2_stream_at_the_integer_kernels_far_rate(self) -> None:
        far = _kernel(gemv_probe(GEMV_FAR_PROBE[1], 1), "gemm0", "QGemm")  # 3 MiB: beyond host_chip's L2
        near = _kernel(gemv_probe(256, 1), "gemm0", "QGemm")
        cold = {**NARROW, "gemv_far_gbps": 85.0, "weights_in_cache": True, "l3_bandwidth_gbps": 150.0}  # from the L3
        assert _ns(far, **cold, int8_gemv_far_gbps=40.0) > _ns(far, **cold, int8_gemv_far_gbps=80.0) > _ns(far, **cold)
        assert _ns(near, **cold, int8_gemv_far_gbps=40.0) == _ns(near, **cold)  # in L2: the near rate alone

    def test_many_rows_pay_no_call_cost(self) -> None:
        x, w = Tensor("x", (4, 256), "uint8"), Tensor("w", (256, 256), "int8", is_weight=True)
        four = Op("g", "QGemm", "matmul", (x, w), (Tensor("y", (4, 256), "uint8"),), macs=4 * 256 * 256)
        assert one_row_call_ns(four, chip_from_dict(host_chip(**BASE, **NARROW)).units[0]) == 0.0


class TestProbeFigures:
    def test_pixel_cost_and_rate_come_back_from_the_probes_and_the_efficiency_excludes_the_pixels(self) -> None:
        # probes made from 7 ns a pixel, 2.5 ps a MAC, 18 ns an im2col pixel, 0.4 ns per output
        pixels = CONV_PROBE[1] ** 2

        def conv_ns(cin: int, cout: int, pixel_ns: float) -> float:
            return pixels * (pixel_ns + cin * cout * 9 * 0.0025 + cout * 0.4)

        rates = {INT8_RATES["QLinearConv"]: conv_ns(CONV_PROBE[0], CONV_PROBE[0], 7.0),
                 NARROW_CONV: conv_ns(*NARROW_CONV_PROBES[NARROW_CONV], 7.0),
                 IM2COL_CONV: conv_ns(*NARROW_CONV_PROBES[IM2COL_CONV], 18.0)}  # fmt: skip
        rates[DEEP_CONV] = conv_ns(*DEEP_CONV_PROBE, 7.0) + pixels * DEEP_CONV_PROBE[0] * DEEP_CONV_PROBE[1] * 9 * 0.0005
        assert conv_l2_mac_from(rates, 0.4) == pytest.approx(3.0)
        assert conv_pixel_from(rates, 0.4) == pytest.approx(7.0)
        assert im2col_pixel_from(rates, 0.4) == pytest.approx(18.0)
        assert conv_pixel_from({NARROW_CONV: 1.0}, 0.4) is None and im2col_pixel_from({}, 0.4) is None
        # the efficiency is the MAC rate alone: 2.5 ps a MAC against the chip's 1 TOP/s
        chip = chip_from_dict(host_chip(**{**BASE, "flops_per_cycle": {"fp32": 60.0, "int8": 1000.0 / 2.6}},
                                        int8_conv_pixel_ns=7.0))  # fmt: skip
        effs = int8_efficiencies(chip, rates)
        assert effs["QLinearConv"] == pytest.approx(2.0 / 2.5, rel=0.02)
        assert probe_kernels()["QLinearConv"].macs == pixels * CONV_PROBE[0] ** 2 * 9

    def test_a_conv_call_cost_comes_back_and_is_taken_off_every_conv_probe_before_its_pixels(self) -> None:
        # every conv probe made from 950 ns a call, 7 ns a pixel, 2.5 ps a MAC, 18 ns an im2col pixel,
        # 0.4 ns per output; the two call probes (16 -> 16 over two planes) from the same law plus the dispatch
        pixels, call, dispatch = CONV_PROBE[1] ** 2, 950.0, 250.0

        def conv_ns(cin: int, cout: int, pixel_ns: float, px: int = pixels) -> float:
            return call + px * (pixel_ns + cin * cout * 9 * 0.0025 + cout * 0.4)

        c = CONV_CALL_CHANNELS
        rates = {INT8_RATES["QLinearConv"]: conv_ns(CONV_PROBE[0], CONV_PROBE[0], 7.0),
                 NARROW_CONV: conv_ns(*NARROW_CONV_PROBES[NARROW_CONV], 7.0),
                 IM2COL_CONV: conv_ns(*NARROW_CONV_PROBES[IM2COL_CONV], 18.0),
                 DEEP_CONV: conv_ns(*DEEP_CONV_PROBE, 7.0) + pixels * DEEP_CONV_PROBE[0] * DEEP_CONV_PROBE[1] * 9 * 0.0005,
                 **{k: dispatch + conv_ns(c, c, 7.0, side * side) for k, side in CONV_CALL_PROBES.items()}}  # fmt: skip
        assert conv_call_from(rates, dispatch) == pytest.approx(call)
        assert conv_call_from({}, dispatch) is None
        # the MatMul probes requant_from needs: 0.4 ns per output, 2.5 ps a MAC
        m, n = 96, 512
        rates |= {"qlinear_matmul_short_probe_ns": m * n * (128 * 0.0025 + 0.4), INT8_RATES["QLinearMatMul"]: m * n * (2048 * 0.0025 + 0.4)}
        fields = int8_fields(rates, dispatch)
        assert fields["requant_ns"] == pytest.approx(0.4) and fields["int8_conv_call_ns"] == pytest.approx(call)
        assert fields["int8_conv_pixel_ns"] == pytest.approx(7.0) and fields["int8_im2col_pixel_ns"] == pytest.approx(18.0)
        assert fields["int8_conv_l2_mac_ps"] == pytest.approx(3.0) and fields["int8_conv_mac_ps"] == pytest.approx(2.5)
        # without the call probes the call cost folds into the per-pixel figure (as before it was measured)
        folded = int8_fields({k: v for k, v in rates.items() if k not in CONV_CALL_PROBES}, dispatch)
        assert folded["int8_conv_call_ns"] is None and folded["int8_conv_pixel_ns"] == pytest.approx(7.0 + call / pixels)

    def test_call_cost_and_stream_rate_come_back_from_the_two_sizes(self) -> None:
        rates = {k: 250.0 + 900.0 + n * n / 80.0 + n * 0.4 for k, n in GEMV_PROBES.items()}
        call, gbps = gemv_call_from(rates, 0.4, 250.0)  # type: ignore[misc]
        assert call == pytest.approx(900.0) and gbps == pytest.approx(80.0)
        assert gemv_call_from({}, 0.4, 250.0) is None


class TestChipFields:
    def test_an_older_chip_file_loads_and_hashes_as_before(self) -> None:
        old = chip_from_dict(host_chip(**BASE))
        assert old.units[0].int8_conv_pixel_ns is None and old.units[0].int8_gemv_call_ns is None
        assert "int8_gemv_gbps" not in old.units[0].model_dump()
        assert chip_sha256(old) == chip_sha256(chip_from_dict(host_chip(**BASE)))
        new = chip_from_dict(host_chip(**BASE, **NARROW))
        assert new.units[0].model_dump()["int8_im2col_pixel_ns"] == 19.0 and chip_sha256(new) != chip_sha256(old)


class TestConvCallCost:
    @pytest.mark.parametrize("sym", [True, False])
    def test_each_call_pays_it_once_on_either_path(self, sym: bool) -> None:
        cin = 16 if sym else 3
        x, w = Tensor("x", (1, cin, 8, 8), "uint8"), Tensor("w", (16, cin, 3, 3), "int8", is_weight=True)
        op = Op("c", "QLinearConv", "conv", (x, w), (Tensor("y", (1, 16, 8, 8), "uint8"),))
        unit = chip_from_dict(host_chip(**BASE, **NARROW)).units[0]
        with_call = chip_from_dict(host_chip(**BASE, **NARROW, int8_conv_call_ns=950.0)).units[0]
        assert conv_sym_path(op) is sym
        base_ns, path = integer_conv_ns(op, unit, "int8")  # type: ignore[arg-type]
        assert path == ("indirect conv" if sym else "im2col")
        assert integer_conv_ns(op, with_call, "int8")[0] == pytest.approx(base_ns + 950.0)  # type: ignore[arg-type]


class TestAgainstOnnxruntime:
    def test_the_same_conv_over_a_bigger_plane_adds_more_to_a_run(self) -> None:
        times = conv_call_times(rounds=3)  # the best of three interleaved rounds: one round on a loaded machine can invert them
        small, large = (times[k] for k, _ in sorted(CONV_CALL_PROBES.items(), key=lambda kv: kv[1]))
        assert 0.0 < small < large


    def test_the_stem_probe_runs_slower_per_mac_than_the_wide_one(self) -> None:
        rates = int8_kernel_ns(rounds=1)
        assert {NARROW_CONV, IM2COL_CONV, INT8_RATES["QLinearConv"]} <= rates.keys()
        stem_cin, stem_cout = NARROW_CONV_PROBES[IM2COL_CONV]
        # 27 MACs a pixel x 16 against 576 x 64: MLAS's im2col path is many times slower per MAC
        assert rates[IM2COL_CONV] / (stem_cin * stem_cout) > 3 * rates[INT8_RATES["QLinearConv"]] / CONV_PROBE[0] ** 2

    def test_a_one_row_qgemm_adds_more_to_a_run_with_more_weights(self) -> None:
        times = gemv_call_times(rounds=3)  # the best of three interleaved rounds: one round on a loaded machine can invert them
        small, large = (times[k] for k, _ in sorted(GEMV_PROBES.items(), key=lambda kv: kv[1]))
        assert 0.0 < small < large
