"""The CPU model's onnxruntime kernel structures: LSTM/GRU steps (``gemv_gbps``), STFT/DFT as
radix-2 or Bluestein (``fft_*``), and how kernels split over intra-op threads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import CpuUnit, chip_from_dict
from cost_models.base import OpCost
from cost_models.cpu import (
    CODE_REFETCH_ATTR,
    CODE_REFETCH_NS,
    COL2IM_ND_FACTOR,
    COL2IM_STRIDED_FACTOR,
    COLD_SRC_ATTR,
    GEMM_BIAS_PASSES,
    HALF_EFFICIENCY_FLOPS,
    MLAS_THREAD_MACS,
    PARALLEL_SECTION_NS,
    RECURRENT_SPLIT_STEP_NS,
    calibration_basis_ns,
    code_refetch_ns,
    col2im_ns,
    col2im_path_factor,
    cold_source_ns,
    fft_ns,
    fft_plan,
    fft_stride_bytes,
    gemm_bias_ns,
    gemv_split_speedup,
    intra_op_threads,
    parallel_sections,
    recurrent_kernel_ns,
    recurrent_threads,
    recurrent_time,
    resident_stream_ns,
    section_ns,
    sections_ns,
    stream_ns,
    strided_fft_ns,
    strided_fft_stages,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from hwsim.report.provenance import chip_sha256
from tests.helpers import host_chip, make_op

KERNELS = {"gemv_gbps": 110.0, "fft_butterfly_ns": 1.5, "fft_point_ns": 6.0, "parallel_section_ns": 900.0}


def rnn(op_type: str, hidden: int, steps: int, dirs: int = 1) -> Op:
    gates = {"LSTM": 4, "GRU": 3}[op_type]
    ins = [Tensor("x", (steps, 1, hidden), "float32"),
           Tensor("W", (dirs, gates * hidden, hidden), "float32", is_weight=True),
           Tensor("R", (dirs, gates * hidden, hidden), "float32", is_weight=True)]  # fmt: skip
    direction = "bidirectional" if dirs == 2 else "forward"
    return make_op(op_type, ins, [Tensor("y", (steps, dirs, 1, hidden), "float32")], hidden_size=hidden,
                   direction=direction)  # fmt: skip


def stft(frame: int, frames: int = 100) -> Op:
    ins = [Tensor("sig", (1, 16000, 1), "float32"), Tensor("hop", (), "int64"),
           Tensor("win", (frame,), "float32", is_weight=True)]  # fmt: skip
    return make_op("STFT", ins, [Tensor("y", (1, frames, frame // 2 + 1, 2), "float32")], onesided=1)


def ns(op: Op, **unit: Any) -> float:
    c = estimate(op, chip_from_dict(host_chip(**unit)), "cpu", "model")
    assert c is not None
    return c.latency_ns


class TestUnsetFieldsKeepTodaysModel:
    def test_a_chip_without_them_dumps_and_hashes_as_before(self) -> None:
        plain = chip_from_dict(host_chip())
        assert not any(k in plain.model_dump()["units"][0] for k in KERNELS)
        assert chip_sha256(plain) != chip_sha256(chip_from_dict(host_chip(**KERNELS)))
        assert chip_from_dict(host_chip(**KERNELS)).model_dump()["units"][0]["gemv_gbps"] == 110.0

    def test_costs_change_only_with_the_fields(self) -> None:
        for op in (rnn("LSTM", 256, 32), stft(400)):
            assert ns(op) == ns(op, weight_stream_gbps=None)
            assert ns(op) != ns(op, **KERNELS)


class TestRecurrentSteps:
    def test_time_grows_with_steps_at_the_gemv_rate(self) -> None:
        # R of hidden 128 (256 KiB) sits in L1/L2: each extra step streams it once more at gemv_gbps,
        # plus its fixed and gate costs and its share of the input projection (262 kFLOP)
        short, long = ns(rnn("LSTM", 128, 10), **KERNELS), ns(rnn("LSTM", 128, 60), **KERNELS)
        per_step = (long - short) / 50
        assert 16 * 128 * 128 / 110.0 < per_step < 16 * 128 * 128 / 110.0 * 1.8
        assert ns(rnn("LSTM", 128, 60), **{**KERNELS, "gemv_gbps": 55.0}) > 1.5 * ns(rnn("LSTM", 128, 60), **KERNELS)

    def test_an_r_that_fits_the_l1_streams_at_the_l1_rate_and_one_that_does_not_none_of_it(self) -> None:
        # a GRU's R of hidden 64 is 48 KiB, the L1's size; an LSTM's is 64 KiB: near-LRU keeps none
        def step_ns(op_type: str, **unit: Any) -> float:
            chip = chip_from_dict(host_chip(**KERNELS, **unit))
            u = chip.units[0]
            assert isinstance(u, CpuUnit)
            long, short = rnn(op_type, 64, 60), rnn(op_type, 64, 10)
            return (recurrent_kernel_ns(long, u, chip, "fp32", long.weight_bytes(None), 1)
                    - recurrent_kernel_ns(short, u, chip, "fp32", short.weight_bytes(None), 1)) / 50  # fmt: skip

        saved = step_ns("GRU") - step_ns("GRU", gemv_l1_gbps=180.0)
        assert saved == pytest.approx(48 * 1024 * (1 / 110.0 - 1 / 180.0), rel=1e-6)
        assert step_ns("LSTM", gemv_l1_gbps=180.0) == pytest.approx(step_ns("LSTM"), rel=1e-9)
        # the L1's own bandwidth still bounds it
        assert step_ns("GRU", gemv_l1_gbps=400.0) == pytest.approx(step_ns("GRU", gemv_l1_gbps=200.0), rel=1e-9)

    def test_each_direction_pays_its_measured_set_up(self) -> None:
        def fixed(op: Op, **unit: Any) -> float:
            chip = chip_from_dict(host_chip(**KERNELS, **unit))
            u = chip.units[0]
            assert isinstance(u, CpuUnit)
            return recurrent_time(op, u, chip, "fp32", op.weight_bytes(None), 1).fixed_ns

        measured = {"lstm_direction_ns": 1600.0, "gru_direction_ns": 1100.0}
        for op_type, each in (("LSTM", 1600.0), ("GRU", 1100.0)):
            for dirs in (1, 2):
                op = rnn(op_type, 32, 4, dirs=dirs)
                assert fixed(op, **measured) - fixed(op) == pytest.approx(dirs * each)

    def test_bidirectional_streams_each_directions_r_from_its_own_level(self) -> None:
        # hidden 320: one direction's R is 1.6 MB (fits the 2 MiB L2), both together 3.3 MB do not
        one, two = ns(rnn("LSTM", 320, 40), **KERNELS), ns(rnn("LSTM", 320, 40, dirs=2), **KERNELS)
        assert 1.9 < two / one < 2.1

    def test_an_r_beyond_every_cache_streams_from_dram(self) -> None:
        op = rnn("LSTM", 1536, 4)  # 151 MB of R
        c = estimate(op, chip_from_dict(host_chip(**KERNELS)), "cpu", "model")
        assert c is not None and "R from DRAM" in c.note and c.dram_read_bytes >= 4 * 16 * 1536 * 1536


    def test_weights_evicted_between_runs_are_first_read_from_dram(self) -> None:
        # an LSTM behind a large embedding and decoder (the model's weights beyond the LLC) reads its
        # W and R from DRAM once per run; alone in a loop, from the cache that holds them
        op = rnn("LSTM", 384, 35)
        chip = chip_from_dict(host_chip(**KERNELS))
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        w_b = op.weight_bytes(None)
        alone = unit.model_copy(update={"weights_in_cache": True, "resident_weight_bytes": float(w_b)})
        evicted = recurrent_kernel_ns(op, unit, chip, "fp32", w_b, 1)
        cached = recurrent_kernel_ns(op, alone, chip, "fp32", w_b, 1)
        assert evicted - cached > 0.5 * w_b / chip.dram.bandwidth_gbps


class TestRecurrentThreads:
    def test_a_share_of_r_that_fits_a_cores_l2_streams_super_linearly(self) -> None:
        # hidden 512: R is 4 MiB, twice the 2 MiB L2 (all from L3 at the far rate on one thread);
        # on 2 threads each core streams 2 MiB from its own L2 (measured here: 4x faster)
        chip = chip_from_dict(host_chip(**KERNELS, gemv_far_gbps=28.0))
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        big, small = rnn("LSTM", 512, 16), rnn("LSTM", 128, 16)

        def alone(op: Op) -> CpuUnit:  # the LSTM run alone in a loop: its weights stay cached
            return unit.model_copy(update={"weights_in_cache": True, "resident_weight_bytes": float(op.weight_bytes(None))})

        speedup = {op.inputs[2].shape[2]: recurrent_kernel_ns(op, alone(op), chip, "fp32", op.weight_bytes(None), 1)
                   / recurrent_kernel_ns(op, alone(op), chip, "fp32", op.weight_bytes(None), 2) for op in (big, small)}  # fmt: skip
        assert speedup[512] > 2.5
        assert 1.0 < speedup[128] <= 2.0  # already in L2: at most the thread count (fixed step costs)


def gemm(rows: int, k: int, n: int) -> Op:
    a, w = Tensor("a", (rows, k), "float32"), Tensor("w", (n, k), "float32", is_weight=True)
    return make_op("Gemm", [a, w], [Tensor("y", (rows, n), "float32")], transB=1)


def looped(resident_bytes: float, **unit: Any) -> CpuUnit:
    """A fingerprinted CPU (L2 1.75 MiB) running a model whose weights stay in its caches."""
    fields = {**KERNELS, "gemv_far_gbps": 28.0, "l2_kib": 1792, "weights_in_cache": True,
              "resident_weight_bytes": resident_bytes, **unit}  # fmt: skip
    u = chip_from_dict(host_chip(**fields)).units[0]
    assert isinstance(u, CpuUnit)
    return u


class TestGemv:
    def test_weights_in_l2_stream_at_the_gemv_rate(self) -> None:
        # a 1 x 512 x 512 Gemm chain measured 115 GB/s from L2 here, where the read sweep gets 163
        op, w_b = gemm(1, 512, 512), 512 * 512 * 4
        chip = {**KERNELS, "weights_in_cache": True, "resident_weight_bytes": float(w_b), "op_overhead_ns": 0.0}
        assert ns(op, **chip) >= w_b / 110.0
        assert ns(op, **{**chip, "gemv_gbps": None}) < w_b / 120.0  # without the rate: the L2's 130 GB/s
        assert ns(gemm(64, 512, 512), **chip) == ns(gemm(64, 512, 512), **{**chip, "gemv_gbps": None})

    def test_rows_split_over_cores_stream_from_each_cores_l2(self) -> None:
        # the 784-512-512-10 MLP: 2.7 MB of weights overflow one 1.75 MiB L2; halves fit two
        op = gemm(1, 784, 512)
        assert gemv_split_speedup(op, looped(2.7e6), 2) > 2.5
        assert gemv_split_speedup(op, looped(1.2e6), 2) == pytest.approx(2.0)  # in one L2 already
        assert gemv_split_speedup(op, looped(3.2e7), 2) == pytest.approx(2.0)  # halves beyond both
        assert gemv_split_speedup(gemm(8, 784, 512), looped(2.7e6), 2) == 2.0  # not a GEMV
        assert gemv_split_speedup(op, looped(2.7e6), 1) == 1.0

    def test_a_run_calls_footprint_costs_a_once_per_run_stream_its_hits(self) -> None:
        # the 784-512-512-10 MLP's 2.7 MB over a 1.75 MiB L2: 2 C - S of it hits, C less the run's footprint
        op, levels = gemm(1, 784, 512), [(48.0, 200.0), (1792.0, 130.0), (32768.0, 38.0)]
        w_b = op.weight_bytes(None)
        plain, less = (resident_stream_ns(op, looped(2.7e6, run_footprint_kib=f), levels, w_b) for f in (None, 256.0))
        hits = {f: 2 * (1792 - f) * 1024 - 2.7e6 for f in (0.0, 256.0)}  # bytes of a pass from L2
        moved = (hits[0.0] - hits[256.0]) * (1 / 28.0 - 1 / 110.0) * w_b / 2.7e6  # this op's share of them
        assert less - plain == pytest.approx(moved, rel=1e-6)
        # weights that fit the L2 less the footprint, and a share per core that does, stream as before
        small = resident_stream_ns(op, looped(1.2e6), levels, w_b)
        assert resident_stream_ns(op, looped(1.2e6, run_footprint_kib=256.0), levels, w_b) == small
        assert gemv_split_speedup(op, looped(2.7e6, run_footprint_kib=256.0), 2) > gemv_split_speedup(op, looped(2.7e6), 2)

    def test_a_recurrent_r_read_many_times_a_run_keeps_the_whole_l2(self) -> None:
        op = rnn("LSTM", 320, 16)  # R: 1.6 MB
        assert ns(op, **KERNELS, gemv_far_gbps=28.0) == ns(op, **KERNELS, gemv_far_gbps=28.0, run_footprint_kib=512.0)

    @given(st.floats(2e5, 1e8), st.integers(2, 8))
    def test_never_slower_per_core_than_one_core(self, resident: float, threads: int) -> None:
        # a smaller share of a cyclic stream never hits less often
        assert gemv_split_speedup(gemm(1, 1024, 256), looped(resident), threads) >= threads * (1 - 1e-9)


class TestStream:
    @given(st.integers(1, 1 << 26))
    def test_never_faster_than_the_core_rate_nor_than_the_levels(self, nbytes: int) -> None:
        levels = [(48.0, 200.0), (2048.0, 130.0), (32768.0, 38.0)]
        t = stream_ns(nbytes, levels, 110.0, 8.0)
        assert t >= nbytes / 110.0 - 1e-6
        assert t >= stream_ns(nbytes, levels, float("inf"), 8.0) - 1e-6


    @given(st.integers(1, 1 << 26), st.floats(5.0, 100.0))
    def test_a_far_rate_never_speeds_a_stream_up(self, nbytes: int, far: float) -> None:
        levels = [(48.0, 200.0), (2048.0, 130.0), (32768.0, 38.0)]
        assert stream_ns(nbytes, levels, 110.0, 8.0, far) >= stream_ns(nbytes, levels, 110.0, 8.0) - 1e-6

    def test_a_matrix_twice_the_l2_keeps_nothing_there(self) -> None:
        # measured with onnxruntime here: a 1 x K x N GEMV streams 4-32 MiB at 27-28 GB/s from L3
        levels = [(48.0, 200.0), (1536.0, 150.0), (65536.0, 38.0)]
        s = 4 * 1536 * 1024
        assert stream_ns(s, levels, 117.0, 20.0, 28.0) == pytest.approx(s / 28.0)
        assert stream_ns(s, levels, 117.0, 20.0) < s / 37.0  # without it: L2's share at 117, the rest at 38
        # just over the L2 most of it still hits there: between the two rates
        just_over = 1.2 * 1536 * 1024
        assert just_over / 117.0 < stream_ns(just_over, levels, 117.0, 20.0, 28.0) < just_over / 50.0
        # a matrix the L2 holds is untouched by the far rate
        assert stream_ns(1 << 20, levels, 117.0, 20.0, 28.0) == stream_ns(1 << 20, levels, 117.0, 20.0)


class TestFft:
    def test_non_powers_of_two_cost_two_ffts_of_a_longer_length(self) -> None:
        assert ns(stft(400), **KERNELS) > 4 * ns(stft(512), **KERNELS)  # measured: 5.2x
        # every length whose 2n-1 rounds up to 1024 costs the same per frame
        assert len({fft_ns(n, 1.5, 6.0) for n in (257, 300, 400, 511)}) == 1

    @given(st.integers(3, 1 << 14).filter(lambda n: n & (n - 1) != 0))
    def test_bluestein_costs_at_least_two_ffts_of_the_next_power_of_two(self, n: int) -> None:
        p = 1 << (n - 1).bit_length()
        assert fft_ns(n, 1.5, 6.0) >= 2 * fft_ns(p, 1.5, 6.0)

    def test_plan_reads_frames_and_window(self) -> None:
        assert fft_plan(stft(400, frames=98)) == (98, 400)


def dft(n: int, columns: int, axis: int, onesided: int = 0) -> Op:
    """A DFT of ``n`` points over each of ``columns`` complex columns: along axis 1 of (1, n, columns, 2)
    (its points ``8 columns`` bytes apart) or axis 2 of (1, columns, n, 2) (contiguous)."""
    shape = (1, n, columns, 2) if axis == 1 else (1, columns, n, 2)
    out = (1, n // 2 + 1, columns, 2) if onesided else shape
    return make_op("DFT", [Tensor("x", shape, "float32")], [Tensor("y", out, "float32")], axis=axis, onesided=onesided)


#: The AMD EPYC's figures of 2026-12-07 (its fast hour).
STRIDED = {**KERNELS, "fft_butterfly_ns": 2.0, "fft_point_ns": 6.2, "l1_kib": 32, "fft_stride_ns": 25.0,
           "fft_page_stride_ns": 37.0}


class TestStridedFft:
    def test_where_onnxruntime_runs_the_butterflies_on_strided_output(self) -> None:
        assert fft_stride_bytes(dft(128, 256, 1)) == 2048  # 256 complex floats apart
        assert fft_stride_bytes(dft(128, 256, 2)) == 8  # the next complex value
        assert fft_stride_bytes(dft(128, 256, 1, onesided=1)) == 0  # a buffer of its own
        assert fft_stride_bytes(dft(100, 256, 1)) == 0  # Bluestein: a buffer of its own
        assert fft_stride_bytes(stft(256)) == 0

    def test_measured_fnet_transforms_take_the_time_their_misses_set(self) -> None:
        # AMD EPYC, 2026-12-07: 128 points 2 KiB apart ran 1.26 ms over 256 columns, 0.47 contiguous;
        # 512 points 3 KiB apart 9.8 ms against 4.5 (held out of the probes' shapes)
        assert ns(dft(128, 256, 1), **STRIDED) == pytest.approx(1.26e6, rel=0.05)
        assert ns(dft(512, 384, 1), **STRIDED) == pytest.approx(9.8e6, rel=0.05)
        assert ns(dft(128, 256, 1), **KERNELS) == ns(dft(128, 256, 2), **KERNELS)  # unfingerprinted: as before

    def test_never_faster_than_on_contiguous_points(self) -> None:
        # one stage past the L1 (128 points 512 B apart): its misses alone would take less
        assert ns(dft(128, 64, 1), **STRIDED) == ns(dft(128, 64, 2), **STRIDED)
        assert ns(dft(128, 512, 1), **STRIDED) > 3 * ns(dft(128, 512, 2), **STRIDED)  # a page apart: 5.1x measured

    def test_points_a_page_apart_take_the_page_rate(self) -> None:
        u = chip_from_dict(host_chip(**STRIDED)).units[0]
        assert isinstance(u, CpuUnit)
        # 128 lines in one set of 8 ways: 4 stages at 37 ns; 6 KiB apart, two sets: 3 stages at 25 ns
        assert strided_fft_ns(128, 4096, u) == pytest.approx(64 * 4 * 37.0)
        assert strided_fft_ns(128, 6144, u) == pytest.approx(64 * 3 * 25.0)

    @given(st.integers(1, 12), st.integers(0, 14), st.integers(3, 64))
    def test_stages_past_the_l1_grow_with_the_stride_s_power_of_two(self, log_n: int, log_p: int, odd: int) -> None:
        # an odd multiple of a power of two falls in as many L1 sets as the power of two alone;
        # a larger power of two in fewer, so at least as many stages miss, and never more than log2 n
        n, p = 1 << log_n, 1 << log_p
        odd |= 1
        stages = strided_fft_stages(n, p * odd, 32 * 1024)
        assert 0.0 <= stages <= log_n
        if p >= 64:
            assert stages == pytest.approx(strided_fft_stages(n, p, 32 * 1024))
        assert strided_fft_stages(n, 2 * p, 32 * 1024) >= strided_fft_stages(n, p, 32 * 1024)
        assert strided_fft_stages(n, p, 48 * 1024) <= strided_fft_stages(n, p, 32 * 1024)  # more ways hold more


class TestThreads:
    def test_which_kernels_onnxruntime_splits(self) -> None:
        big = Tensor("y", (1, 1 << 20), "float32")
        assert intra_op_threads(stft(256), 2) == 1
        assert intra_op_threads(make_op("Softmax", [big], [big]), 2) == 1
        assert intra_op_threads(make_op("Add", [big, big], [big]), 2) == 2
        # 4 x 64 x 64 MACs per step and 2 x 256 x 64 for the projection < MLAS chunk
        assert intra_op_threads(rnn("LSTM", 64, 2), 2) == 1
        assert intra_op_threads(rnn("LSTM", 64, 10), 2) == 2  # the projection over 10 steps splits
        assert intra_op_threads(rnn("LSTM", 256, 10), 2) == 2
        assert intra_op_threads(make_op("Add", [big, big], [big]), 1) == 1

    def test_kernels_that_stay_on_one_thread_and_topk_s_rows(self) -> None:
        # measured on the CI Xeon at 1 and 2 threads (cost_models.cpu.ONE_THREAD_KERNELS)
        big = Tensor("x", (1, 64, 128, 128), "float32")
        up = Tensor("u", (1, 64, 256, 256), "float32")
        for op_type, ins in (("CumSum", [big]), ("Sin", [big]), ("Cos", [big]), ("Sum", [big, big, big])):
            assert intra_op_threads(make_op(op_type, ins, [big]), 2) == 1, op_type
        assert intra_op_threads(make_op("Exp", [big], [big]), 2) == 2
        for attrs in ({"mode": "nearest"}, {"mode": "cubic"}, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}):
            assert intra_op_threads(make_op("Resize", [big], [up], **attrs), 2) == 1, attrs
        assert intra_op_threads(make_op("Resize", [big], [up], mode="linear"), 2) == 2  # the bilinear kernel splits
        signal = Tensor("s", (1, 64, 16384), "float32")
        assert intra_op_threads(make_op("Resize", [signal], [Tensor("t", (1, 64, 32768), "float32")], mode="linear"), 2) == 1
        rows = Tensor("r", (1024, 1024), "float32")
        top = make_op("TopK", [rows], [Tensor("v", (1024, 20), "float32"), Tensor("i", (1024, 20), "int64")], axis=-1)
        assert intra_op_threads(top, 2) == 2  # 20 Ki values out, but 1,024 rows to split
        one = Tensor("o", (1, 4096), "float32")
        assert intra_op_threads(make_op("TopK", [one], [Tensor("w", (1, 16), "float32")], axis=-1), 2) == 1

    def test_a_matmul_splits_in_mlas_chunks(self) -> None:
        # MlasGemmBatch: MACs / 64 Ki + 1 threads, at most one per 16 columns when N > M
        def gemv(k: int, n: int) -> Op:
            a, b = Tensor("a", (1, k), "float32"), Tensor("b", (k, n), "float32", is_weight=True)
            return make_op("MatMul", [a, b], [Tensor("y", (1, n), "float32")])

        assert gemv(255, 256).macs < MLAS_THREAD_MACS and intra_op_threads(gemv(255, 256), 4) == 1
        assert gemv(256, 256).macs == MLAS_THREAD_MACS and intra_op_threads(gemv(256, 256), 4) == 2
        assert intra_op_threads(gemv(2048, 1000), 4) == 4
        assert intra_op_threads(gemv(8192, 10), 4) == 1  # 10 outputs: one column block
        assert intra_op_threads(gemv(8192, 40), 4) == 3

    def test_a_section_costs_what_the_fingerprint_measured(self) -> None:
        assert section_ns(looped(1e6)) == 900.0
        assert section_ns(looped(1e6, parallel_section_ns=None)) == PARALLEL_SECTION_NS
        mm = gemm(64, 512, 512)
        assert sections_ns(mm, looped(1e6), 2) == 900.0 and sections_ns(mm, looped(1e6), 1) == 0.0
        # each direction's projection pays a section, a GRU's steps one more (deep_cpu_gru.cc's
        # ParallelSection); each split product of a step (a GRU's two) a hand-off
        gru = rnn("GRU", 256, 10, dirs=2)
        assert sections_ns(gru, looped(1e6), 2) == 2 * 900.0 + 2 * 900.0 + 2 * 10 * 2 * RECURRENT_SPLIT_STEP_NS
        lstm = rnn("LSTM", 256, 10, dirs=2)
        assert sections_ns(lstm, looped(1e6), 2) == 2 * 900.0 + 2 * 10 * RECURRENT_SPLIT_STEP_NS

    def test_a_split_recurrent_op_pays_a_section_per_split_product(self) -> None:
        assert parallel_sections(rnn("GRU", 256, 10, dirs=2), 2) == 2 + 2 + 2 * 10 * 2
        assert parallel_sections(rnn("LSTM", 256, 10, dirs=2), 2) == 2 + 2 * 10
        assert parallel_sections(rnn("GRU", 256, 10), 1) == 0
        # a GRU whose step products do not split opens its section without engaging the pool
        assert parallel_sections(rnn("GRU", 128, 10), 2) == 1

    def test_a_gru_product_is_a_loop_in_its_section_not_a_calibrated_lstm_section(self) -> None:
        # uni_directional_lstm.cc runs each step's product as its own section on the pool, deep_cpu_gru.cc
        # its steps in one open section: a hand-off fit on LSTM products prices LSTMs only
        unit = looped(1e6, recurrent_section_ns=2650.0)
        gru, lstm = rnn("GRU", 256, 10), rnn("LSTM", 256, 10)
        assert sections_ns(lstm, unit, 2) == 900.0 + 10 * 2650.0
        assert sections_ns(gru, unit, 2) == 900.0 + 900.0 + 10 * 2 * RECURRENT_SPLIT_STEP_NS
        assert sections_ns(gru, unit, 2) == sections_ns(gru, looped(1e6), 2)

    def test_recurrent_parts_split_as_mlas_splits_each_product(self) -> None:
        # deep_cpu_gru.cc: per step Ht-1·R[zr]ᵀ (2H x H MACs) and Ht-1·R[h]ᵀ (H x H), each its own MLAS call
        assert recurrent_threads(rnn("GRU", 256, 10), 2) == (2, (2, 2))
        assert recurrent_threads(rnn("GRU", 192, 10), 2) == (2, (2, 1))  # 73.7 Ki and 36.9 Ki MACs
        assert recurrent_threads(rnn("GRU", 128, 32), 2) == (2, (1, 1))  # only the projection splits
        assert recurrent_threads(rnn("LSTM", 128, 10), 2) == (2, (2,))  # 4 x 128 x 128 = 64 Ki
        assert recurrent_threads(rnn("GRU", 256, 10), 1) == (1, (1, 1))
        assert parallel_sections(rnn("GRU", 192, 10), 2) == 1 + 1 + 10  # the projection, the steps' section

    @given(st.sampled_from(["LSTM", "GRU"]), st.integers(8, 1024), st.integers(1, 64), st.integers(1, 2),
           st.integers(1, 8))  # fmt: skip
    def test_parts_stay_within_the_pool_and_more_threads_never_slow_the_kernel(
        self, op_type: str, hidden: int, steps: int, dirs: int, threads: int
    ) -> None:
        op = rnn(op_type, hidden, steps, dirs)
        projection, products = recurrent_threads(op, threads)
        assert 1 <= projection <= threads and all(1 <= t <= threads for t in products)
        assert intra_op_threads(op, threads) == max(projection, *products)
        assert (parallel_sections(op, threads) == 0) == (max(projection, *products) == 1)
        chip = chip_from_dict(host_chip(**KERNELS, gemv_far_gbps=28.0))
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        w_b = op.weight_bytes(None)
        assert recurrent_kernel_ns(op, unit, chip, "fp32", w_b, threads) <= recurrent_kernel_ns(op, unit, chip, "fp32", w_b, 1) * (1 + 1e-9)

    def test_a_gru_whose_steps_stay_on_one_thread_gains_only_its_projection(self) -> None:
        chip = chip_from_dict(host_chip(**KERNELS))
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        op = rnn("GRU", 128, 32, dirs=2)
        # run alone in a loop: W (384 KiB) stays in L2, its first pass hides under the projection
        alone = unit.model_copy(update={"weights_in_cache": True, "resident_weight_bytes": float(op.weight_bytes(None))})
        one, two = (recurrent_kernel_ns(op, alone, chip, "fp32", op.weight_bytes(None), t) for t in (1, 2))
        flops = 2.0 * 32 * 128 * 384 * 2  # X·Wᵀ, both directions
        proj_ns = flops / (unit.peak_flops_per_ns("fp32") * flops / (flops + HALF_EFFICIENCY_FLOPS))
        assert one - two == pytest.approx(proj_ns / 2)  # the steps stay on one thread

    def test_a_first_pass_of_w_from_a_cache_streams_under_the_projection(self) -> None:
        chip = chip_from_dict(host_chip(**KERNELS))
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        # an LSTM of hidden 128: R (256 KiB) stays in L2, so no step streams from beyond it; W and R
        # (512 KiB), against the projection of 4 steps (0.5 MFLOP, 3 us at the peak) and of 256
        # (34 MFLOP, 215 us). From DRAM (8 GB/s, 65.5 us) the first pass adds whole; from the L3 a
        # loop keeps them in (38 GB/s, 13.8 us) only what it takes beyond the projection
        w_b = 2 * 4 * 128 * 128 * 4
        cached = unit.model_copy(update={"weights_in_cache": True, "resident_weight_bytes": float(4 * 2**20)})
        for steps in (4, 256):
            f = 2.0 * steps * 128 * 512
            proj = f / (unit.peak_flops_per_ns("fp32") * f / (f + HALF_EFFICIENCY_FLOPS))
            op = rnn("LSTM", 128, steps)
            assert recurrent_time(op, unit, chip, "fp32", w_b, 1).stream_ns == pytest.approx(w_b / 8.0)
            assert recurrent_time(op, cached, chip, "fp32", w_b, 1).stream_ns == pytest.approx(max(0.0, w_b / 38.0 - proj))


def conv_transpose(cin: int, cout: int, k: int, stride: int, side: int) -> Op:
    x = Tensor("x", (1, cin, side, side), "float32")
    w = Tensor("w", (cin, cout, k, k), "float32", is_weight=True)
    out = (side - 1) * stride + k
    return make_op("ConvTranspose", [x, w], [Tensor("y", (1, cout, out, out), "float32")], strides=(stride, stride))


class TestConvTranspose:
    @given(cin=st.sampled_from([16, 64, 256]), k=st.sampled_from([2, 3, 4]), side=st.sampled_from([8, 32]))
    def test_col2im_adds_an_add_over_the_columns_beside_the_gemm(self, cin: int, k: int, side: int) -> None:
        chip = chip_from_dict(host_chip(efficiency={"ConvTranspose": 1.0, "Add": 0.25}))
        op = conv_transpose(cin, 32, k, 2, side)
        cost = estimate(op, chip, "cpu", "model")
        assert cost is not None
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        columns = 32 * k * k * side * side  # Cout x kh x kw rows by the input pixels
        assert cost.stall_ns == pytest.approx(3 * 4 * columns / (unit.l1_bandwidth_gbps * 0.25))
        # no ConvTranspose efficiency scales the pass: halving it doubles only the GEMM
        half = estimate(op, chip_from_dict(host_chip(efficiency={"ConvTranspose": 0.5, "Add": 0.25})), "cpu", "model")
        assert half is not None and half.stall_ns == pytest.approx(cost.stall_ns)
        assert half.compute_ns - half.stall_ns == pytest.approx(2 * (cost.compute_ns - cost.stall_ns), rel=1e-6)

    @pytest.mark.parametrize(("rank", "attrs", "factor"), [
        (2, {"strides": (2, 2)}, 1.0),  # unpadded: the fast path
        (2, {"pads": (1, 1, 1, 1)}, 1.0),  # stride 1: contiguous adds
        (2, {"strides": (2, 2), "pads": (1, 1, 1, 1)}, COL2IM_STRIDED_FACTOR),  # DCGAN's 4x4 stride 2
        (2, {"strides": (2, 2), "auto_pad": "SAME_UPPER"}, COL2IM_STRIDED_FACTOR),
        (1, {"strides": (8,)}, COL2IM_ND_FACTOR),  # a vocoder's 1-D upsampling: Col2imNd
        (3, {"strides": (1, 1, 1)}, COL2IM_ND_FACTOR),
    ])  # fmt: skip
    def test_the_pass_by_onnxruntimes_col2im_path(self, rank: int, attrs: dict[str, object], factor: float) -> None:
        chip = chip_from_dict(host_chip(efficiency={"ConvTranspose": 1.0, "Add": 0.25}))
        unit = chip.units[0]
        assert isinstance(unit, CpuUnit)
        x = Tensor("x", (1, 16, *(8,) * rank), "float32")
        w = Tensor("w", (16, 8, *(4,) * rank), "float32", is_weight=True)
        op = make_op("ConvTranspose", [x, w], [Tensor("y", (1, 8, *(18,) * rank), "float32")], **attrs)
        assert col2im_path_factor(op) == factor
        columns = 8 * 4**rank * 8**rank
        assert col2im_ns(op, unit, "fp32") == pytest.approx(3 * 4 * columns / (unit.l1_bandwidth_gbps * 0.25) * factor)

    @pytest.mark.parametrize(("rank", "attrs", "per_column"), [
        (2, {"strides": (2, 2)}, 0.15),  # the fast path: col2im_ns
        (2, {"strides": (2, 2), "pads": (1, 1, 1, 1)}, 0.35),  # the generic loop: col2im_strided_ns
        (1, {"strides": (8,)}, 0.35 * COL2IM_ND_FACTOR / COL2IM_STRIDED_FACTOR),  # Col2imNd
    ])  # fmt: skip
    def test_a_measured_figure_prices_the_pass_per_column(self, rank: int, attrs: dict[str, object], per_column: float) -> None:
        measured = chip_from_dict(host_chip(efficiency={"ConvTranspose": 1.0, "Add": 0.25}, col2im_ns=0.15, col2im_strided_ns=0.35))
        unit = measured.units[0]
        assert isinstance(unit, CpuUnit)
        x = Tensor("x", (1, 16, *(8,) * rank), "float32")
        w = Tensor("w", (16, 8, *(4,) * rank), "float32", is_weight=True)
        op = make_op("ConvTranspose", [x, w], [Tensor("y", (1, 8, *(18,) * rank), "float32")], **attrs)
        assert col2im_ns(op, unit, "fp32") == pytest.approx(8 * 4**rank * 8**rank * per_column)
        # the fast figure alone leaves the slow paths to the Add pass
        fast_only = chip_from_dict(host_chip(efficiency={"Add": 0.25}, col2im_ns=0.15)).units[0]
        assert isinstance(fast_only, CpuUnit)
        expected = 8 * 4**rank * 8**rank * (0.15 if per_column == 0.15 else 12 / (fast_only.l1_bandwidth_gbps * 0.25) * col2im_path_factor(op))
        assert col2im_ns(op, fast_only, "fp32") == pytest.approx(expected)

    def test_the_pass_weighs_more_on_a_narrow_input(self) -> None:
        chip = chip_from_dict(host_chip(efficiency={"ConvTranspose": 1.0, "Add": 0.25}))
        share = []
        for cin in (16, 256):  # measured: 1.6-3x the GEMM at 16-32 input channels, 1.1-1.3x at 64-256
            c = estimate(conv_transpose(cin, 64, 2, 2, 32), chip, "cpu", "model")
            assert c is not None
            share.append(c.compute_ns / (c.compute_ns - c.stall_ns))
        assert share[0] > 1.5 and 1.0 < share[1] < 1.1


def add_op(channels: int, cold: int | None = None) -> Op:
    """An Add of two ``channels x 64 x 64`` tensors, marked with its cold input bytes (None: unmarked)."""
    x = [Tensor(n, (1, channels, 64, 64), "float32") for n in ("a", "b")]
    attrs = {} if cold is None else {COLD_SRC_ATTR: cold}
    return make_op("Add", x, [Tensor("y", (1, channels, 64, 64), "float32")], **attrs)


class TestColdSources:
    """A streaming kernel whose inputs' place is known (``COLD_SRC_ATTR``): from L2 at its rate,
    the cold bytes once at the L3's rate beside the work."""

    def test_an_unmarked_kernel_keeps_the_working_set_rule(self) -> None:
        chip = chip_from_dict(host_chip())
        big = add_op(64)  # 3 MiB: beyond the 2 MiB L2
        c = estimate(big, chip, "cpu", "model")
        assert c is not None and "fits 32768 KiB" in c.note and c.stall_ns == 0

    def test_a_warm_kernel_beyond_l2_reads_at_the_l2_rate(self) -> None:
        chip = chip_from_dict(host_chip())
        warm, plain = estimate(add_op(64, 0), chip, "cpu", "model"), estimate(add_op(64), chip, "cpu", "model")
        assert warm is not None and plain is not None
        assert "fits 2048 KiB" in warm.note and warm.stall_ns == 0
        assert warm.memory_ns == pytest.approx(plain.memory_ns * 38 / 130)

    @given(st.integers(1, 64), st.integers(0, 4 * 2**20))
    def test_the_cold_bytes_add_their_l3_time_as_a_stall(self, channels: int, cold: int) -> None:
        chip = chip_from_dict(host_chip())
        warm, marked = estimate(add_op(channels, 0), chip, "cpu", "model"), estimate(add_op(channels, cold), chip, "cpu", "model")
        assert warm is not None and marked is not None
        assert marked.stall_ns == pytest.approx(cold / 38)
        assert cold_source_ns(add_op(channels, cold), chip.units[0], chip) == pytest.approx(cold / 38)
        assert marked.compute_ns == pytest.approx(warm.compute_ns + cold / 38)

    def test_calibration_scales_the_work_not_the_stall(self) -> None:
        chip = chip_from_dict(host_chip(efficiency={"Add": 0.1}))
        c = estimate(add_op(16, 100_000), chip, "cpu", "model")
        assert c is not None and c.stall_ns == pytest.approx(100_000 / 38)
        assert calibration_basis_ns(add_op(16, 100_000), c) == pytest.approx(c.compute_ns - c.stall_ns)


def gap_op(channels: int, side: int, streamed: int | None = None, cold: int = 0) -> Op:
    """An NCHWc-shaped GlobalAveragePool over ``channels x side x side`` whose inputs' place is
    known (``cold`` bytes beyond L2), marked with the bytes streamed since its code last ran."""
    attrs: dict[str, int] = {COLD_SRC_ATTR: cold}
    if streamed is not None:
        attrs[CODE_REFETCH_ATTR] = streamed
    x, g = Tensor("x", (1, channels, side, side), "float32"), Tensor("g", (1, channels, 1, 1), "float32")
    return make_op("GlobalAveragePool", [x], [g], **attrs)


class TestCodeRefetch:
    """A GAP after a long stream fetches its code again: ``CODE_REFETCH_NS`` per doubling of the
    bytes streamed since its last call beyond the L2, beside its work."""

    @given(st.integers(0, 2**31), st.integers(0, 2**31))
    def test_it_grows_with_the_stream_and_nothing_within_the_l2(self, a: int, b: int) -> None:
        unit = chip_from_dict(host_chip()).units[0]
        assert isinstance(unit, CpuUnit)
        lo, hi = sorted((a, b))
        small, big = code_refetch_ns(gap_op(64, 7, lo), unit), code_refetch_ns(gap_op(64, 7, hi), unit)
        assert 0 <= small <= big
        if hi <= 2048 * 1024:
            assert big == 0
        if lo > 2048 * 1024:  # a log law: each doubling costs the same
            assert code_refetch_ns(gap_op(64, 7, 2 * lo), unit) == pytest.approx(small + CODE_REFETCH_NS)

    def test_an_unmarked_kernel_pays_nothing(self) -> None:
        unit = chip_from_dict(host_chip()).units[0]
        assert isinstance(unit, CpuUnit)
        assert code_refetch_ns(gap_op(64, 7), unit) == 0

    def test_calibration_scales_the_work_not_the_refetch(self) -> None:
        chip = chip_from_dict(host_chip(efficiency={"GlobalAveragePool": 0.25}))
        op = gap_op(512, 7, 64 * 2**20)  # 64 MiB since its last call: five doublings beyond the 2 MiB L2
        c, warm = estimate(op, chip, "cpu", "model"), estimate(gap_op(512, 7, 0), chip, "cpu", "model")
        assert c is not None and warm is not None
        assert c.stall_ns == pytest.approx(5 * CODE_REFETCH_NS) and "cold code" in c.note
        assert c.compute_ns == pytest.approx(warm.compute_ns + 5 * CODE_REFETCH_NS)
        assert calibration_basis_ns(op, c) == pytest.approx(calibration_basis_ns(gap_op(512, 7, 0), warm))


def layer_norm(rows: int, width: int, axis: int = -1, op_type: str = "LayerNormalization") -> Op:
    x = Tensor("x", (1, rows, width), "float32")
    params = [Tensor(n, (width,), "float32", is_weight=True) for n in ("g", "b")]
    return make_op(op_type, [x, *params[: 2 if op_type == "LayerNormalization" else 1]],
                   [Tensor("y", (1, rows, width), "float32")], axis=axis)  # fmt: skip


class TestLayerNormRows:
    @given(rows=st.integers(1, 4096), width=st.sampled_from([8, 32, 48, 96, 768]), row_ns=st.floats(1.0, 100.0))
    def test_each_row_adds_its_fixed_time(self, rows: int, width: int, row_ns: float) -> None:
        # onnxruntime normalizes a row at a time: a pass beside the roofline (it shows where the
        # kernel is core-bound), no efficiency scales it
        op = layer_norm(rows, width)
        plain, rowed = cost(op), cost(op, norm_row_ns=row_ns)
        assert rowed.compute_ns == pytest.approx(plain.compute_ns + rows * row_ns)
        assert rowed.stall_ns == pytest.approx(plain.stall_ns + rows * row_ns)
        assert rowed.latency_ns >= plain.latency_ns

    def test_rows_are_the_elements_before_the_axis(self) -> None:
        whole = layer_norm(64, 96, axis=1)  # one row of 64 x 96 (each of the batch of 1)
        assert cost(whole, norm_row_ns=16.0).compute_ns == pytest.approx(cost(whole).compute_ns + 16.0)
        # the same elements in short rows: slower, where they were no slower without the figure
        short, long = layer_norm(3072, 32), layer_norm(128, 768)
        assert ns(short) == pytest.approx(ns(long))
        assert ns(short, norm_row_ns=16.0) > ns(long, norm_row_ns=16.0)
        # other row-wise kernels are not priced so (cost_models.cpu.ROW_NORM_OP_TYPES)
        softmax = make_op("Softmax", [Tensor("x", (1, 3072, 32), "float32")], [Tensor("y", (1, 3072, 32), "float32")])
        assert cost(softmax, norm_row_ns=16.0) == cost(softmax)
        rms = layer_norm(3072, 32, op_type="RMSNormalization")
        assert cost(rms, norm_row_ns=16.0) == cost(rms)


def cost(op: Op, **unit: Any) -> OpCost:
    c = estimate(op, chip_from_dict(host_chip(**unit)), "cpu", "model")
    assert c is not None
    return c


class TestGemmBias:
    @given(st.integers(1, 1 << 26), st.integers(1, 1 << 26), st.sampled_from([0.0, 1024.0, 32768.0]),
           st.integers(1, 8), st.integers(0, 1 << 26))  # fmt: skip
    def test_passes_cost_more_per_byte_the_larger_the_output_and_only_one_splits(
        self, a: int, b: int, l3_kib: float, threads: int, weights: int
    ) -> None:
        unit = chip_from_dict(host_chip(l2_kib=512, l3_kib=l3_kib)).units[0]
        assert isinstance(unit, CpuUnit)
        dram = 10.0
        small, large = sorted((a, b))
        per_small, per_large = gemm_bias_ns(small, unit, dram) / small, gemm_bias_ns(large, unit, dram) / large
        assert per_small <= per_large * (1 + 1e-9)
        # GEMM_BIAS_PASSES over the bytes, each no faster than L1 and no slower than DRAM
        assert GEMM_BIAS_PASSES / unit.l1_bandwidth_gbps <= per_small * (1 + 1e-9)
        assert per_large <= GEMM_BIAS_PASSES / min(dram, unit.l2_bandwidth_gbps) * (1 + 1e-9)
        one = gemm_bias_ns(large, unit, dram) / GEMM_BIAS_PASSES  # the broadcast serial, MLAS's pass split
        assert gemm_bias_ns(large, unit, dram, threads) == pytest.approx(one * (GEMM_BIAS_PASSES - 1 + 1 / threads))
        # weights streamed between the passes push the output's lines out, never in
        assert gemm_bias_ns(small, unit, dram, weight_bytes=weights) >= gemm_bias_ns(small, unit, dram) * (1 - 1e-9)
