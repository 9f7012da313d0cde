"""Merging fingerprints of one host (:mod:`hwsim.host.host_merge`): load only slows a
measurement, so each figure comes out as its least disturbed round's; nothing here times
anything."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwsim.host.fingerprint import Dispatch, Fingerprint
from hwsim.host.host_merge import fastest, fastest_half_median, merge_fingerprints
from hwsim.host.int8_probe import (
    ATTENTION_MATMUL,
    INT8_RATES,
    NARROW_CONV,
    SHORT_MATMUL,
    pack_from,
    requant_from,
)
from hwsim.host.kernels import FFT_PROBES, FLOAT_GEMV_PROBES, fft_from, float_gemv_from, int8_fields
from tests.hwsim.host.test_calibrate_host import fake_fingerprint

TRUE_RATES = {"gemv_gbps": 40.0, "fft_butterfly_ns": 2.0, "run_footprint_kib": 300.0,
              SHORT_MATMUL: 27000.0, INT8_RATES["QLinearMatMul"]: 112000.0, ATTENTION_MATMUL: 80000.0}  # fmt: skip


def undisturbed() -> Fingerprint:
    fp = fake_fingerprint(64.0, 10.0)
    rates = {**TRUE_RATES, "requant_ns": 0.0}
    rates["requant_ns"] = requant_from(rates) or 0.0
    rates["int8_pack_ns"] = pack_from(rates, rates["requant_ns"]) or 0.0
    return replace(fp, dispatch=Dispatch(250.0, 3700.0, 2000.0), weight_stream_gbps=20.0,
                   weight_stream_ms={"dram": 1.0, "cache": 0.5}, kernel_rates=rates, matmul_gflops_nt={"fp32": 120.0})  # fmt: skip


def slowed(fp: Fingerprint, by: float) -> Fingerprint:
    """``fp`` as a round that other load slowed by ``by`` (0.2: everything 20 % slower): rates
    down, times up, capacities and the clock untouched."""
    s = 1.0 + by
    d = fp.dispatch
    assert d is not None
    return replace(
        fp, matmul_gflops_1t={k: v / s for k, v in fp.matmul_gflops_1t.items()},
        matmul_gflops_nt={k: v / s for k, v in fp.matmul_gflops_nt.items()},
        scaling={k: v / s for k, v in fp.scaling.items()},
        copy_gbps=(fp.copy_gbps or 0) / s, triad_gbps=(fp.triad_gbps or 0) / s,
        sweep=[(sz, bw / s) for sz, bw in fp.sweep],
        caches=[{**c, "bandwidth_gbps": float(c["bandwidth_gbps"]) / s} for c in fp.caches],
        chase_ns=[(sz, ns * s) for sz, ns in fp.chase_ns], dram_latency_ns=(fp.dram_latency_ns or 0) * s,
        weight_stream_gbps=(fp.weight_stream_gbps or 0) / s, weight_stream_ms={k: v * s for k, v in fp.weight_stream_ms.items()},
        dispatch=Dispatch(d.kernel_ns * s, d.run_ns * s, d.profiled_kernel_ns * s),
        kernel_rates={k: v / s if k.endswith("_gbps") else v if k == "run_footprint_kib" else v * s
                      for k, v in fp.kernel_rates.items()},
    )  # fmt: skip


def with_frames(fp: Fingerprint, butterfly: float, point: float) -> Fingerprint:
    """``fp`` whose STFT frame times are ``(butterfly, point)``'s exactly, its constants those."""
    frames = {k: butterfly * n / 2 * math.log2(n) + point * n for n, k in FFT_PROBES.items()}
    return replace(fp, kernel_rates={**fp.kernel_rates, **frames, "fft_butterfly_ns": butterfly, "fft_point_ns": point})


class TestMergeFft:
    def test_the_constants_come_from_the_merged_frame_times(self) -> None:
        # two rounds whose fits trade butterfly against point cost (the pair is nearly collinear):
        # merged one by one they paired round a's butterfly with round b's point cost, 256 points
        # below either round; fitted to the merged frame times they describe frames that were measured
        a, b = with_frames(undisturbed(), 1.4, 8.6), with_frames(undisturbed(), 2.0, 6.4)
        for pick in (fastest, fastest_half_median):
            merged = merge_fingerprints([a, b], pick).kernel_rates
            frame = {k: merged[k] for k in FFT_PROBES.values()}
            fit = fft_from(frame)
            assert fit is not None and (merged["fft_butterfly_ns"], merged["fft_point_ns"]) == pytest.approx(fit)
            t256 = merged["fft_butterfly_ns"] * 128 * 8 + merged["fft_point_ns"] * 256
            rounds = [r.kernel_rates[FFT_PROBES[256]] for r in (a, b)]
            assert t256 >= 0.98 * min(rounds)

    def test_older_fingerprints_without_frame_times_keep_their_merged_constants(self) -> None:
        fp = undisturbed()
        merged = merge_fingerprints([fp, slowed(fp, 0.5)], fastest)
        assert merged.kernel_rates["fft_butterfly_ns"] == pytest.approx(TRUE_RATES["fft_butterfly_ns"])


class TestMergeFloatGemv:
    def test_the_one_row_figures_come_from_the_merged_probe_times(self) -> None:
        # round a's small probe undisturbed, round b's large one: each derived pair is off, and
        # the merged fields are what the merged (fastest) times give, not a mix of the two pairs
        small, large = (4 * k * n for k, n in FLOAT_GEMV_PROBES.values())
        def with_times(fp: Fingerprint, t_small: float, t_large: float) -> Fingerprint:
            times = dict(zip(FLOAT_GEMV_PROBES, (t_small, t_large), strict=True))
            fields = float_gemv_from(times, 250.0)
            assert fields is not None
            return replace(fp, kernel_rates={**fp.kernel_rates, **times, "fp32_gemv_call_ns": fields[0],
                                             "fp32_gemv_gbps": fields[1]})  # fmt: skip
        truth = (250.0 + 440.0 + small / 78.0, 250.0 + 440.0 + large / 78.0)
        a = with_times(undisturbed(), truth[0], truth[1] * 1.3)
        b = with_times(undisturbed(), truth[0] * 1.3, truth[1])
        merged = merge_fingerprints([a, b], fastest).kernel_rates
        assert (merged["fp32_gemv_call_ns"], merged["fp32_gemv_gbps"]) == pytest.approx((440.0, 78.0))
        for fp in (a, b):
            assert (fp.kernel_rates["fp32_gemv_call_ns"], fp.kernel_rates["fp32_gemv_gbps"]) != pytest.approx((440.0, 78.0))


class TestMergeFingerprints:
    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6), st.data())
    def test_one_undisturbed_round_among_slowed_ones_is_recovered(self, slow: list[float], data: st.DataObject) -> None:
        # one-sided noise: every round but one slowed; merged by the fastest, every figure is the
        # undisturbed one
        truth = undisturbed()
        rounds = [slowed(truth, s) for s in slow]
        rounds.insert(data.draw(st.integers(0, len(rounds))), truth)
        merged = merge_fingerprints(rounds, fastest)
        for name in ("matmul_gflops_1t", "matmul_gflops_nt", "scaling", "weight_stream_ms"):
            assert getattr(merged, name) == pytest.approx(getattr(truth, name)), name
        for name in ("copy_gbps", "triad_gbps", "dram_latency_ns", "weight_stream_gbps"):
            assert getattr(merged, name) == pytest.approx(getattr(truth, name)), name
        assert dict(merged.sweep) == pytest.approx(dict(truth.sweep))
        assert dict(merged.chase_ns) == pytest.approx(dict(truth.chase_ns))
        assert [c["bandwidth_gbps"] for c in merged.caches] == pytest.approx([c["bandwidth_gbps"] for c in truth.caches])
        assert merged.dispatch is not None and truth.dispatch is not None
        assert (merged.dispatch.kernel_ns, merged.dispatch.run_ns, merged.dispatch.profiled_kernel_ns) == pytest.approx(
            (truth.dispatch.kernel_ns, truth.dispatch.run_ns, truth.dispatch.profiled_kernel_ns))
        assert merged.kernel_rates == pytest.approx(truth.kernel_rates)

    def test_a_weight_stream_stall_one_round_in_three_saw_is_dropped(self) -> None:
        truth = undisturbed()
        none = replace(truth, weight_stream_gbps=None)
        assert merge_fingerprints([truth, none, none], fastest).weight_stream_gbps is None
        assert merge_fingerprints([truth, none, truth], fastest).weight_stream_gbps == pytest.approx(20.0)

    def test_the_least_disturbed_round_is_not_needed_whole(self) -> None:
        # round 1's MatMul was disturbed, round 2's stream: no single round is right, the merge is
        truth = undisturbed()
        a = replace(truth, matmul_gflops_1t={"fp32": 50.0})
        b = replace(truth, triad_gbps=7.0, copy_gbps=8.0)
        merged = merge_fingerprints([a, b])  # of two, the median of the fastest half is the fastest
        assert merged.matmul_gflops_1t == {"fp32": 64.0} and merged.triad_gbps == 10.0 and merged.copy_gbps == 10.0

    def test_capacities_and_clock_take_the_median(self) -> None:
        truth = undisturbed()
        caps = [900.0, 1024.0, 1100.0]
        rounds = [replace(truth, clock_mhz=1990.0 + i * 10, caches=[{**truth.caches[0]}, {**truth.caches[1], "kib": k}],
                          kernel_rates={**truth.kernel_rates, "run_footprint_kib": 100.0 * (i + 1)})
                  for i, k in enumerate(caps)]  # fmt: skip
        merged = merge_fingerprints(rounds)
        assert merged.clock_mhz == 2000.0 and merged.caches[1]["kib"] == 1024.0
        assert merged.kernel_rates["run_footprint_kib"] == 200.0

    def test_integer_gemm_constants_are_derived_from_the_merged_probes(self) -> None:
        # requant_ns is a difference of two probe times: the fastest of each round's would mix
        # rounds; derived again from the fastest probes it is the undisturbed one
        truth = undisturbed()
        long_key = INT8_RATES["QLinearMatMul"]
        a = replace(truth, kernel_rates={**truth.kernel_rates, SHORT_MATMUL: 30000.0, "requant_ns": 0.9})
        b = replace(truth, kernel_rates={**truth.kernel_rates, long_key: 130000.0, "requant_ns": 0.01})
        merged = merge_fingerprints([a, b], fastest)
        assert merged.kernel_rates["requant_ns"] == pytest.approx(truth.kernel_rates["requant_ns"])

    def test_integer_conv_fields_are_derived_from_the_merged_probes(self) -> None:
        # int8_conv_pixel_ns is the intercept of two conv probes: each round's own intercept, one
        # round with a slowed wide probe and one with a slowed narrow one, are both off; derived
        # again from the fastest probes it is the undisturbed one
        probes = {INT8_RATES["QLinearConv"]: 1600 * (6.0 + 36864 * 0.002 + 64 * 0.4),
                  NARROW_CONV: 1600 * (6.0 + 1152 * 0.002 + 16 * 0.4)}  # fmt: skip

        def with_probes(fp: Fingerprint, rates: dict[str, float]) -> Fingerprint:
            got = {**fp.kernel_rates, **rates}
            got.update({k: v for k, v in int8_fields(got, 250.0).items() if v is not None})
            return replace(fp, kernel_rates=got)

        truth = with_probes(undisturbed(), probes)
        wide, narrow = INT8_RATES["QLinearConv"], NARROW_CONV
        a = with_probes(undisturbed(), {**probes, wide: probes[wide] * 1.1})
        b = with_probes(undisturbed(), {**probes, narrow: probes[narrow] * 1.1})
        rounds = {fp.kernel_rates["int8_conv_pixel_ns"] for fp in (a, b)}
        assert all(abs(x / truth.kernel_rates["int8_conv_pixel_ns"] - 1.0) > 0.05 for x in rounds)
        merged = merge_fingerprints([a, b], fastest)
        assert merged.kernel_rates["int8_conv_pixel_ns"] == pytest.approx(truth.kernel_rates["int8_conv_pixel_ns"])

    def test_says_what_was_merged_and_keeps_one_round_as_is(self) -> None:
        truth = undisturbed()
        assert merge_fingerprints([truth]) is truth
        merged = merge_fingerprints([truth, slowed(truth, 0.1)])
        assert "merged over 2 rounds: each time and rate the median of the fastest half" in merged.notes[-1]
        with pytest.raises(ValueError, match="no fingerprints"):
            merge_fingerprints([])

    def test_a_fast_spell_no_other_round_confirms_does_not_decide(self) -> None:
        # the default: one round 15 % faster than the host's usual state (turbo), one usual, one
        # near it, two slowed. The fastest would take the turbo round's figures; the median of the
        # fastest half takes the usual ones
        truth = undisturbed()
        rounds = [slowed(truth, s) for s in (0.3, -0.15, 0.0, 0.5, 0.02)]
        merged = merge_fingerprints(rounds)
        assert merged.matmul_gflops_1t["fp32"] == pytest.approx(64.0)
        assert merged.dispatch is not None and merged.dispatch.kernel_ns == pytest.approx(250.0)
        assert merged.kernel_rates["gemv_gbps"] == pytest.approx(40.0)
        assert merge_fingerprints(rounds, fastest).matmul_gflops_1t["fp32"] == pytest.approx(64.0 / 0.85)

    def test_fastest_half_median_is_between_the_fastest_and_the_median(self) -> None:
        truth = undisturbed()
        rounds = [slowed(truth, s) for s in (0.0, 0.1, 0.3, 0.5)]
        merged = merge_fingerprints(rounds, fastest_half_median)
        # the two fastest of 4: 64 and 64/1.1, their mean in time
        assert merged.matmul_gflops_1t["fp32"] == pytest.approx(1 / ((1 / 64 + 1.1 / 64) / 2))
        assert merged.dram_latency_ns == pytest.approx(90.0 * 1.05)


@given(st.lists(st.floats(1.0, 1e6), min_size=1, max_size=20))
def test_picks_lie_between_the_fastest_and_the_median(times: list[float]) -> None:
    import statistics

    assert fastest(times) <= fastest_half_median(times) <= statistics.median(times) + 1e-9 * max(times)
